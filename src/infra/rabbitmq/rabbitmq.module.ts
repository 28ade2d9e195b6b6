import { Global, Module } from '@nestjs/common';
import { RabbitMqConnection } from './rabbitmq.connection.js';

@Global()
@Module({
  providers: [RabbitMqConnection],
  exports: [RabbitMqConnection],
})
export class RabbitMqModule {}
