import { Module } from '@nestjs/common';
import { AuthGuard } from './auth.guard.js';
import { AuthenticatorService } from './authenticator.service.js';

/**
 * Who the caller is: the bearer token checked (AuthenticatorService) and the route's access
 * (AuthGuard). The one global guard that runs it, before the rate limits, is EntryModule's.
 */
@Module({
  providers: [AuthenticatorService, AuthGuard],
  exports: [AuthenticatorService, AuthGuard],
})
export class AuthModule {}
