import { DynamicModule, Global, Module } from '@nestjs/common';
import { ConfigModule, registerAs } from '@nestjs/config';
import { CONFIG_NAMESPACES, type AppConfig } from './env.validation.js';
import { FaultInjectorService } from './fault-injector.service.js';

/**
 * Serves the configuration validated once at boot (createApp → validateEnv) through
 * @nestjs/config, one provider per section under registerAs's token (`@InjectConfig(redisConfig)`
 * injects `CONFIGURATION(redis)`). A service then depends on the sections it reads and nothing
 * else, and its unit test builds just those. The sections' values are the ones validated from
 * the environment passed in, not registerAs factories reading process.env, so that tests can
 * start several apps with different settings in one process.
 */
@Global()
@Module({})
export class AppConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppConfigModule,
      imports: [
        ConfigModule.forRoot({
          // The section tokens are provided by ConfigModule: global, so every module sees them.
          isGlobal: true,
          cache: true,
          ignoreEnvFile: true,
          ignoreEnvVars: true,
          load: Object.values(CONFIG_NAMESPACES).map((namespace) =>
            registerAs(namespace.key, () => config[namespace.key]),
          ),
        }),
      ],
      providers: [FaultInjectorService],
      exports: [FaultInjectorService],
    };
  }
}
