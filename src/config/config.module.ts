import { Global, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { appConfigProvider, APP_CONFIG } from './app-config.js';
import { validateEnv } from './env.validation.js';

@Global()
@Module({
  imports: [
    ConfigModule.forRoot({
      cache: true,
      // Validated once here; a bad variable stops the boot with a message naming it.
      validate: (env: Record<string, unknown>) => ({
        ...env,
        app: validateEnv(env as Record<string, string | undefined>),
      }),
    }),
  ],
  providers: [appConfigProvider],
  exports: [APP_CONFIG],
})
export class AppConfigModule {}
