import { DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { AppConfigModule } from './config/config.module.js';
import type { AppConfig } from './config/env.validation.js';
import { DatabaseModule } from './infra/database/database.module.js';
import { RabbitMqModule } from './infra/rabbitmq/rabbitmq.module.js';
import { RedisModule } from './infra/redis/redis.module.js';
import { AuthModule } from './modules/auth/auth.module.js';
import { GoodsModule } from './modules/goods/goods.module.js';
import { HealthModule } from './modules/health/health.module.js';
import { MessagingModule } from './modules/messaging/messaging.module.js';
import { MetricsModule } from './modules/metrics/metrics.module.js';
import { OrdersModule } from './modules/orders/orders.module.js';
import { PreheatModule } from './modules/preheat/preheat.module.js';
import { ReconcileModule } from './modules/reconcile/reconcile.module.js';
import { SeckillModule } from './modules/seckill/seckill.module.js';
import { StockModule } from './modules/stock/stock.module.js';

const FEATURES = [
  ScheduleModule.forRoot(),
  DatabaseModule,
  RedisModule,
  RabbitMqModule,
  MetricsModule,
  AuthModule,
  GoodsModule,
  StockModule,
  OrdersModule,
  MessagingModule,
  PreheatModule,
  SeckillModule,
  ReconcileModule,
  HealthModule,
];

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return { module: AppModule, imports: [AppConfigModule.forRoot(config), ...FEATURES] };
  }
}
