import { ApiProperty } from '@nestjs/swagger';

/** What a join (a draw sale's entry) answers besides the standing: the buyer's receipt. */
export class JoinReceiptDto {
  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      'Your join index in the pre-queue the draw orders at startAt (0, 1, …); null for a join after the draw',
  })
  joinIndex: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'A join after the draw: your arrival number behind the pre-queue (1, 2, …)',
  })
  arrival: number | null;
  @ApiProperty({
    description:
      'Your pseudonym in this sale’s digest and export (your user id encrypted, AES-256, under a key of the sale that is never revealed: 32 hex digits)',
  })
  pseudonym: string;
  @ApiProperty({ description: 'The commitment to the secret the order is drawn with' })
  seedCommitment: string;
}
