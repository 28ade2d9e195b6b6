import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AuthModule } from '../auth/auth.module.js';
import { RateLimitModule } from '../rate-limit/rate-limit.module.js';
import { EntryGuard } from './entry.guard.js';

/**
 * The one global guard (EntryGuard): authentication (AuthModule), then the rate limits
 * (RateLimitModule), in that order. Apart from both so that each stays below it: the rate limits
 * read the verified user, and auth knows nothing of the limits.
 */
@Module({
  imports: [AuthModule, RateLimitModule],
  providers: [{ provide: APP_GUARD, useClass: EntryGuard }],
})
export class EntryModule {}
