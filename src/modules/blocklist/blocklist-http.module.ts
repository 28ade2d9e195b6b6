import { Module } from '@nestjs/common';
import { BlocklistController } from './blocklist.controller.js';
import { BlocklistModule } from './blocklist.module.js';

/** The admin routes of the blocklist, on the instances that serve the API (ApiModule). */
@Module({
  imports: [BlocklistModule],
  controllers: [BlocklistController],
})
export class BlocklistHttpModule {}
