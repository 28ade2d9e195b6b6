import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { RateLimitModule } from '../rate-limit/rate-limit.module.js';
import { AuthGuard } from './auth.guard.js';
import { AuthenticatorService } from './authenticator.service.js';
import { EntryGuard } from './entry.guard.js';

@Module({
  imports: [RateLimitModule],
  providers: [AuthenticatorService, AuthGuard, { provide: APP_GUARD, useClass: EntryGuard }],
  exports: [AuthenticatorService],
})
export class AuthModule {}
