import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsIn,
  IsInt,
  IsISO8601,
  IsNumber,
  IsOptional,
  IsString,
  Length,
  Max,
  Min,
} from 'class-validator';
import { IsPlainText } from '../../common/pipes/plain-text.js';
import { MAX_STOCK_SHARDS } from '../../common/stock-buckets.js';
import { ADMISSIONS, type Admission } from '../../infra/database/entities/goods.entity.js';

/** The most admissions per second and the longest admission a queue sale may ask for. */
export const MAX_ADMIT_PER_SECOND = 100_000;
export const MAX_ADMISSION_TTL_SECONDS = 3_600;
/** The longest purchase right a draw sale may give (a week), and the most rights per unit. */
export const MAX_CLAIM_SECONDS = 7 * 86_400;
export const MAX_WINNERS_FACTOR = 100;

export const GOODS_STATUSES = ['UPCOMING', 'ACTIVE', 'SOLD_OUT', 'ENDED'] as const;
export type GoodsStatus = (typeof GOODS_STATUSES)[number];

export class CreateGoodsDto {
  @ApiProperty({ example: 'Phone X, 256 GB' })
  @IsString()
  @Length(1, 200)
  @IsPlainText()
  name: string;

  @ApiProperty({ example: 4999.0, description: 'Up to two decimals' })
  @IsNumber({ maxDecimalPlaces: 2, allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(9_999_999_999.99)
  price: number;

  @ApiProperty({ example: 100, description: 'Units for sale' })
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  stock: number;

  @ApiProperty({ example: '2026-12-01T10:00:00.000Z' })
  @IsISO8601({ strict: true })
  startAt: string;

  @ApiProperty({ example: '2026-12-01T10:30:00.000Z', description: 'Must be after startAt' })
  @IsISO8601({ strict: true })
  endAt: string;

  @ApiPropertyOptional({
    example: 1,
    default: 1,
    description: 'Most units one user may hold (in one order) of this goods',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000)
  perUserLimit?: number;

  @ApiPropertyOptional({
    example: 8,
    description:
      'Redis buckets the stock is split over, each in its own cluster slot (default STOCK_SHARDS)',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_STOCK_SHARDS)
  stockShards?: number;

  @ApiPropertyOptional({
    enum: ADMISSIONS,
    default: 'open',
    description:
      '`open`: the fastest request wins. `queue`: buyers join a waiting room from queueOpensAt; at startAt those who joined are put in a random order, then admitted in that order at admitPerSecond, paced by the stock; only admitted buyers may buy. `draw`: accounts enter from entriesOpenAt to entriesCloseAt; then a draw ranks the entries, the first stock × winnersFactor get a purchase right for claimSeconds (from startAt at the earliest), and a right that lapses, or a unit that comes back, passes to the next entry; only a holder of a right in force may buy',
  })
  @IsOptional()
  @IsIn(ADMISSIONS)
  admission?: Admission;

  @ApiPropertyOptional({
    example: '2026-12-01T09:45:00.000Z',
    description:
      'A queue sale: when joining starts, before startAt (default startAt minus 15 minutes)',
  })
  @IsOptional()
  @IsISO8601({ strict: true })
  queueOpensAt?: string;

  @ApiPropertyOptional({
    example: 50,
    description:
      'A queue sale (required): the most buyers admitted in any second, across every instance',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_ADMIT_PER_SECOND)
  admitPerSecond?: number;

  @ApiPropertyOptional({
    example: 120,
    description: 'A queue sale (required): how long an admitted buyer may take to buy',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_ADMISSION_TTL_SECONDS)
  admissionTtlSeconds?: number;

  @ApiPropertyOptional({
    example: '2026-11-30T10:00:00.000Z',
    description: 'A draw sale (required): when entering starts',
  })
  @IsOptional()
  @IsISO8601({ strict: true })
  entriesOpenAt?: string;

  @ApiPropertyOptional({
    example: '2026-12-01T09:00:00.000Z',
    description:
      'A draw sale (required): when entering ends and the draw ranks the entries; after entriesOpenAt, at or before startAt',
  })
  @IsOptional()
  @IsISO8601({ strict: true })
  entriesCloseAt?: string;

  @ApiPropertyOptional({
    example: 600,
    description:
      'A draw sale (required): how long a purchase right lasts, counted from startAt for the rights given before it',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_CLAIM_SECONDS)
  claimSeconds?: number;

  @ApiPropertyOptional({
    example: 1,
    default: 1,
    description:
      'A draw sale: purchase rights in force per unit left (the draw gives stock × winnersFactor; a lapsed right passes on while the rights in force stay within the units left times this)',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_WINNERS_FACTOR)
  winnersFactor?: number;
}

/** A sale's admission as the goods answers show it. */
class AdmissionFieldsDto {
  @ApiProperty({ enum: ADMISSIONS }) admission: Admission;
  @ApiPropertyOptional({ format: 'date-time', description: 'A queue sale only' })
  queueOpensAt?: string;
  @ApiPropertyOptional({ description: 'A queue sale only' }) admitPerSecond?: number;
  @ApiPropertyOptional({ description: 'A queue sale only' }) admissionTtlSeconds?: number;
  @ApiPropertyOptional({ format: 'date-time', description: 'A draw sale only' })
  entriesOpenAt?: string;
  @ApiPropertyOptional({ format: 'date-time', description: 'A draw sale only' })
  entriesCloseAt?: string;
  @ApiPropertyOptional({ description: 'A draw sale only' }) claimSeconds?: number;
  @ApiPropertyOptional({ description: 'A draw sale only' }) winnersFactor?: number;
}

export class GoodsCreatedDto extends AdmissionFieldsDto {
  @ApiProperty() id: number;
  @ApiProperty() name: string;
  @ApiProperty() price: number;
  @ApiProperty() totalStock: number;
  @ApiProperty() stock: number;
  @ApiProperty({ format: 'date-time' }) startAt: string;
  @ApiProperty({ format: 'date-time' }) endAt: string;
  @ApiProperty() perUserLimit: number;
  @ApiProperty() stockShards: number;
}

export class GoodsViewDto extends AdmissionFieldsDto {
  @ApiProperty() id: number;
  @ApiProperty() name: string;
  @ApiProperty() price: number;
  @ApiProperty() totalStock: number;
  @ApiProperty({ description: 'Live stock (Redis once preheated, MySQL before)' })
  remaining: number;
  @ApiProperty({ format: 'date-time' }) startAt: string;
  @ApiProperty({ format: 'date-time' }) endAt: string;
  @ApiProperty() perUserLimit: number;
  @ApiProperty() stockShards: number;
  @ApiPropertyOptional({
    description:
      'A queue sale from queueOpensAt, a draw sale from entriesOpenAt: the hex SHA-256 of the secret the order is drawn with (at startAt, or entriesCloseAt), committed before the first join or entry (GET /api/v1/goods/{goodsId}/fairness reveals the secret after the draw)',
  })
  seedCommitment?: string;
  @ApiProperty({ enum: GOODS_STATUSES }) status: GoodsStatus;
}
