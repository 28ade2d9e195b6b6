import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { OrderRepository } from './order.repository.js';

/**
 * The orders table alone, apart from OrdersModule: FallbackModule writes the orders it sells
 * while Redis is down, and OrdersModule imports FallbackModule (the Redis-down policy).
 */
@Module({
  imports: [TypeOrmModule.forFeature([OrderEntity])],
  providers: [OrderRepository],
  exports: [OrderRepository],
})
export class OrderRepositoryModule {}
