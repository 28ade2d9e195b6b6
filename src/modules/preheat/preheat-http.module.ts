import { Module } from '@nestjs/common';
import { PreheatController } from './preheat.controller.js';
import { PreheatModule } from './preheat.module.js';

/** The admin preheat route, on the instances that serve the API (ApiModule). */
@Module({
  imports: [PreheatModule],
  controllers: [PreheatController],
})
export class PreheatHttpModule {}
