import { DynamicModule, Global, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { appConfigProvider, APP_CONFIG } from './app-config.js';
import type { AppConfig } from './env.validation.js';
import { FaultInjector } from './fault-injector.js';

/**
 * Serves the configuration validated once at boot (createApp → validateEnv) through
 * @nestjs/config. The environment is passed in rather than read here, so that tests can start
 * several apps with different settings in one process.
 */
@Global()
@Module({})
export class AppConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppConfigModule,
      imports: [
        ConfigModule.forRoot({
          cache: true,
          ignoreEnvFile: true,
          ignoreEnvVars: true,
          load: [() => ({ app: config })],
        }),
      ],
      providers: [appConfigProvider, FaultInjector],
      exports: [APP_CONFIG, FaultInjector],
    };
  }
}
