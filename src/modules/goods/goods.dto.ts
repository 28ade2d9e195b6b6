import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
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
import { MAX_STOCK_SHARDS } from '../../infra/redis/stock-buckets.js';

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
}

export class GoodsCreatedDto {
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

export class GoodsViewDto {
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
  @ApiProperty({ enum: GOODS_STATUSES }) status: GoodsStatus;
}
