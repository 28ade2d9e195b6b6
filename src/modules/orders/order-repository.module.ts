import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { MerchantOutboxRepository } from './merchant-outbox.repository.js';
import { OrderRepository } from './order.repository.js';

/**
 * The orders table alone, apart from OrdersModule's services: for the purchase MySQL decides
 * while Redis is down (SeckillModule's DatabasePurchaseService writes its order) and the waiting
 * room's outlook of returns, which need the rows without the order lifecycle.
 */
@Module({
  imports: [TypeOrmModule.forFeature([OrderEntity])],
  providers: [OrderRepository, MerchantOutboxRepository],
  exports: [OrderRepository, MerchantOutboxRepository],
})
export class OrderRepositoryModule {}
