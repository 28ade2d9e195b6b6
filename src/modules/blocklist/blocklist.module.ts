import { Module } from '@nestjs/common';
import { BlocklistService } from './blocklist.service.js';

/** The shared blocklist; every role has it, since the rate limits' autoban writes to it. */
@Module({
  providers: [BlocklistService],
  exports: [BlocklistService],
})
export class BlocklistModule {}
