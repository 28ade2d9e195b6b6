import { Module } from '@nestjs/common';
import { BlocklistScripts } from './blocklist.scripts.js';
import { BlocklistService } from './blocklist.service.js';

/** The shared blocklist; every role has it, since the rate limits' autoban writes to it. */
@Module({
  providers: [BlocklistService, BlocklistScripts],
  exports: [BlocklistService],
})
export class BlocklistModule {}
