import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsString, Length, Max, Min, ValidateIf } from 'class-validator';
import type { BlockType } from './blocklist.service.js';

export const BLOCK_TYPES: readonly BlockType[] = ['ip', 'user'];

export class CreateBlockDto {
  @ApiProperty({ enum: BLOCK_TYPES })
  @IsIn(BLOCK_TYPES)
  type: BlockType;

  @ApiProperty({
    example: '203.0.113.7',
    description:
      'A user id, or a client address in any form a proxy writes it (with a port, in brackets, IPv4-mapped IPv6, leading zeros), stored in its one form; an IPv6 address blocks its /64',
  })
  @IsString()
  @Length(1, 64)
  value: string;

  @ApiPropertyOptional({
    example: 600,
    minimum: 1,
    maximum: 31_536_000,
    nullable: false,
    description:
      'Seconds until it lapses, 1 to 31,536,000; left out: until deleted. null is refused with 400 VALIDATION_FAILED, as 0 is (neither means "no expiry")',
  })
  // Not IsOptional, which lets null through: null would block nothing and answer 201.
  @ValidateIf((_block, ttl) => ttl !== undefined)
  @IsInt()
  @Min(1)
  @Max(31_536_000)
  ttlSeconds?: number;

  @ApiPropertyOptional({ example: 'scalper script' })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  reason?: string;
}

export class BlockEntryDto {
  @ApiProperty({ enum: BLOCK_TYPES }) type: BlockType;
  @ApiProperty() value: string;
  @ApiProperty({ nullable: true, type: String }) reason: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) expiresAt: string | null;
}
