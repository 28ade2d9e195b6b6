import { Global, Module } from '@nestjs/common';
import { RabbitConnection } from './rabbitmq.connection.js';

@Global()
@Module({
  providers: [RabbitConnection],
  exports: [RabbitConnection],
})
export class RabbitMqModule {}
