// Test settings, applied before any app module is imported. Each can be overridden from the
// shell, but the database name must contain "test": the suite drops and recreates it.
const defaults: Record<string, string> = {
  NODE_ENV: 'test',
  DATABASE_URL: 'mysql://root:@127.0.0.1:3306/seckill_test',
  REDIS_URL: 'redis://127.0.0.1:6379/15',
  RABBITMQ_URL: 'amqp://guest:guest@127.0.0.1:5672/',
  RABBITMQ_PREFIX: 'seckill_test',
  JWT_SECRET: 'test-secret-for-e2e-only',
  PREHEAT_CRON_ENABLED: 'false',
  OUTBOX_SWEEP_ENABLED: 'false',
  EXPIRY_SWEEP_ENABLED: 'false',
  RECONCILE_ENABLED: 'false',
  SALE_EVICTION_ENABLED: 'false',
  SWAGGER_ENABLED: 'true',
  LOG_LEVEL: 'warn',
  // The suite fires its crowds (up to 2,000 purchases at once) from its own process to prove
  // the sale's promises under contention; shedding them would test the shedding instead. It is
  // on in overload.e2e-spec.ts, and at its defaults in the random-fault checker's instances.
  OVERLOAD_MAX_IN_FLIGHT: '0',
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
  OVERLOAD_MAX_CONFIRM_WAIT_MS: '0',
};
for (const [name, value] of Object.entries(defaults)) process.env[name] ??= value;

if (!new URL(process.env.DATABASE_URL!).pathname.includes('test')) {
  throw new Error('Tests refuse to run against a DATABASE_URL whose database name lacks "test"');
}
