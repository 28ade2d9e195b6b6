import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import type { BlockType } from './blocklist.service.js';

export const BLOCK_TYPES: readonly BlockType[] = ['ip', 'user'];

export class CreateBlockDto {
  @ApiProperty({ enum: BLOCK_TYPES })
  @IsIn(BLOCK_TYPES)
  type: BlockType;

  @ApiProperty({
    example: '203.0.113.7',
    description: 'A user id, or a client address (an IPv6 address blocks its /64)',
  })
  @IsString()
  @Length(1, 64)
  value: string;

  @ApiPropertyOptional({
    example: 600,
    description: 'Seconds until it lapses; none: until deleted',
  })
  @IsOptional()
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
