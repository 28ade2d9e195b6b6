import { appConfig } from './app.config.js';
import { readAppSection, type AppSection } from './app-section.js';
import { authConfig, type AuthConfig } from './auth.config.js';
import { availabilityConfig, type AvailabilityConfig } from './availability.config.js';
import type { ConfigNamespace } from './config-namespace.js';
import { databaseConfig, type DatabaseConfig } from './database.config.js';
import type { Env } from './env-readers.js';
import { faultsConfig, type FaultsConfig } from './faults.config.js';
import { httpConfig, type HttpConfig } from './http.config.js';
import { jobsConfig, type JobsConfig } from './jobs.config.js';
import { loggingConfig, type LoggingConfig } from './logging.config.js';
import { merchantConfig, type MerchantConfig } from './merchant.config.js';
import { overloadConfig, type OverloadConfig } from './overload.config.js';
import { tracingConfig, type TracingConfig } from './tracing.config.js';
import { paymentsConfig, type PaymentsConfig } from './payments.config.js';
import { rabbitmqConfig, type RabbitMqConfig } from './rabbitmq.config.js';
import { rateLimitConfig, type RateLimitConfig } from './rate-limit.config.js';
import { redisConfig, type RedisConfig } from './redis.config.js';
import { seckillConfig, type SeckillConfig } from './seckill.config.js';
import { waitingRoomConfig, type WaitingRoomConfig } from './waiting-room.config.js';

/**
 * The environment is read once, at boot, into a typed object of one section per concern (each
 * read and validated by its own `*.config.ts`). Anything wrong stops the process with a message
 * naming the variable, so a bad deploy fails before it takes traffic.
 */
export interface AppConfig {
  app: AppSection;
  logging: LoggingConfig;
  http: HttpConfig;
  database: DatabaseConfig;
  redis: RedisConfig;
  rabbitmq: RabbitMqConfig;
  auth: AuthConfig;
  seckill: SeckillConfig;
  waitingRoom: WaitingRoomConfig;
  payments: PaymentsConfig;
  merchant: MerchantConfig;
  jobs: JobsConfig;
  rateLimit: RateLimitConfig;
  availability: AvailabilityConfig;
  overload: OverloadConfig;
  tracing: TracingConfig;
  faults: FaultsConfig;
}

/**
 * Every section, by its key, in the order they are read: typed so that a section left out does
 * not compile. `auth` comes right after `app`: a production boot with the public JWT secret is
 * refused for that before any other section is read.
 */
export const CONFIG_NAMESPACES: { [K in keyof AppConfig]: ConfigNamespace<K, AppConfig[K]> } = {
  app: appConfig,
  auth: authConfig,
  logging: loggingConfig,
  http: httpConfig,
  database: databaseConfig,
  redis: redisConfig,
  rabbitmq: rabbitmqConfig,
  seckill: seckillConfig,
  waitingRoom: waitingRoomConfig,
  payments: paymentsConfig,
  merchant: merchantConfig,
  jobs: jobsConfig,
  rateLimit: rateLimitConfig,
  availability: availabilityConfig,
  overload: overloadConfig,
  tracing: tracingConfig,
  faults: faultsConfig,
};

export function validateEnv(env: Env): AppConfig {
  const app = readAppSection(env);
  const sections = Object.values(CONFIG_NAMESPACES).map((namespace) => [
    namespace.key,
    namespace === appConfig ? app : namespace.read(env, app),
  ]);
  return Object.fromEntries(sections) as AppConfig;
}
