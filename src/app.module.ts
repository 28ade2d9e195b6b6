import { DynamicModule, Module, type Type } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import { loggerParams } from './common/logging/logging.js';
import { AppConfigModule } from './config/app-config.module.js';
import type { AppRole } from './config/app-section.js';
import type { AppConfig } from './config/env.validation.js';
import { DatabaseModule } from './infra/database/database.module.js';
import { RabbitMqModule } from './infra/rabbitmq/rabbitmq.module.js';
import { RedisModule } from './infra/redis/redis.module.js';
import { TracingModule } from './infra/tracing/tracing.module.js';
import { EntryModule } from './modules/entry/entry.module.js';
import { HealthModule } from './modules/health/health.module.js';
import { MetricsModule } from './modules/metrics/metrics.module.js';
import { OverloadModule } from './modules/overload/overload.module.js';
import { ApiModule } from './roles/api.module.js';
import { WorkerModule } from './roles/worker.module.js';

/** Every role: tracing, the stores, metrics, /health/* and /metrics, the load monitor, and the edge's authentication. */
const CORE = [
  TracingModule,
  DatabaseModule,
  RedisModule,
  RabbitMqModule,
  MetricsModule,
  OverloadModule,
  EntryModule,
  HealthModule,
];

/** Chosen once, at build time: a role's module graph holds nothing it does not run. */
const ROLE_MODULES: Record<AppRole, Type[]> = {
  all: [ApiModule, WorkerModule],
  api: [ApiModule],
  worker: [WorkerModule],
};

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logDestination?: DestinationStream): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(config),
        LoggerModule.forRoot(loggerParams(config.logging.level, config.app.role, logDestination)),
        ...CORE,
        ...ROLE_MODULES[config.app.role],
      ],
    };
  }
}
