import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { JwtModule } from '@nestjs/jwt';
import { createSecretKey } from 'node:crypto';
import { authConfig, type AuthConfig } from '../../config/auth.config.js';
import { RateLimitModule } from '../rate-limit/rate-limit.module.js';
import { AuthGuard } from './auth.guard.js';
import { Authenticator } from './authenticator.js';
import { EntryGuard } from './entry.guard.js';

@Module({
  imports: [
    RateLimitModule,
    JwtModule.registerAsync({
      inject: [authConfig.KEY],
      useFactory: (auth: AuthConfig) => ({
        // A KeyObject, not the string: given a string, jsonwebtoken first tries to parse it as a
        // public key on every verify, which cost a third of the purchase route's CPU (profiled).
        secret: createSecretKey(Buffer.from(auth.jwtSecret, 'utf8')) as unknown as string,
        verifyOptions: { algorithms: ['HS256'] },
      }),
    }),
  ],
  providers: [Authenticator, AuthGuard, { provide: APP_GUARD, useClass: EntryGuard }],
  exports: [Authenticator],
})
export class AuthModule {}
