import { Module } from '@nestjs/common';
import { BlocklistScripts } from './blocklist.scripts.js';
import { BlocklistService } from './blocklist.service.js';
import { BlocklistStore } from './blocklist.store.js';

/** The shared blocklist; every role has it, since the rate limits' autoban writes to it. */
@Module({
  providers: [BlocklistService, BlocklistStore, BlocklistScripts],
  exports: [BlocklistService],
})
export class BlocklistModule {}
