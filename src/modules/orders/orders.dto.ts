import { ApiProperty } from '@nestjs/swagger';
import { ORDER_STATUSES } from '../../infra/database/entities/order.entity.js';

export class OrderViewDto {
  @ApiProperty({ example: 'SK1764400000000A1B2C3' }) orderNo: string;
  @ApiProperty({ example: 42 }) userId: number;
  @ApiProperty({ example: 1 }) goodsId: number;
  @ApiProperty({ example: 1 }) quantity: number;
  @ApiProperty({ enum: ORDER_STATUSES }) status: string;
  @ApiProperty({ format: 'date-time' }) expireAt: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}
