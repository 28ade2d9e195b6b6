import { validateCronExpression } from 'cron';
import { configNamespace } from './config-namespace.js';
import { ConfigValidationError } from './config-validation.error.js';
import { readBool, readInt, readString, type Env } from './env-readers.js';

/** The scheduled jobs (run by the `all` and `worker` roles); each can be switched off. */
export interface JobsConfig {
  preheat: {
    enabled: boolean;
    /** When the preheat job runs: a cron expression (an optional seconds field first). */
    cron: string;
    lookaheadMs: number;
  };
  outboxSweep: { enabled: boolean; intervalMs: number; staleMs: number };
  expirySweep: { enabled: boolean; intervalMs: number; graceMs: number };
  reconcile: { enabled: boolean; intervalMs: number };
  saleEviction: { enabled: boolean; intervalMs: number; keysRetentionMs: number };
}

/** Every 10 seconds. */
export const DEFAULT_PREHEAT_CRON = '*/10 * * * * *';

function readPreheatCron(env: Env): string {
  if (readString(env, 'PREHEAT_INTERVAL_MS', '') !== '') {
    // Ignoring it would quietly run the job on another schedule than the one asked for.
    throw new ConfigValidationError(
      `PREHEAT_INTERVAL_MS is no longer read: set PREHEAT_CRON, a cron expression (default "${DEFAULT_PREHEAT_CRON}", every 10 s; "*/30 * * * * *" is every 30 s)`,
    );
  }
  const expression = readString(env, 'PREHEAT_CRON', DEFAULT_PREHEAT_CRON);
  const { valid, error } = validateCronExpression(expression);
  if (!valid) {
    throw new ConfigValidationError(
      `PREHEAT_CRON must be a cron expression ("[second] minute hour day-of-month month day-of-week", e.g. "${DEFAULT_PREHEAT_CRON}"), got "${expression}"${error ? `: ${error.message}` : ''}`,
    );
  }
  return expression;
}

export const jobsConfig = configNamespace('jobs', (env): JobsConfig => ({
  preheat: {
    enabled: readBool(env, 'PREHEAT_CRON_ENABLED', true),
    cron: readPreheatCron(env),
    lookaheadMs: readInt(env, 'PREHEAT_LOOKAHEAD_MS', 600_000, 0, 7 * 86_400_000),
  },
  outboxSweep: {
    enabled: readBool(env, 'OUTBOX_SWEEP_ENABLED', true),
    intervalMs: readInt(env, 'OUTBOX_SWEEP_INTERVAL_MS', 2_000, 100, 3_600_000),
    staleMs: readInt(env, 'OUTBOX_STALE_MS', 5_000, 100, 3_600_000),
  },
  expirySweep: {
    enabled: readBool(env, 'EXPIRY_SWEEP_ENABLED', true),
    intervalMs: readInt(env, 'EXPIRY_SWEEP_INTERVAL_MS', 60_000, 1_000, 86_400_000),
    graceMs: readInt(env, 'EXPIRY_SWEEP_GRACE_MS', 60_000, 0, 86_400_000),
  },
  reconcile: {
    enabled: readBool(env, 'RECONCILE_ENABLED', true),
    intervalMs: readInt(env, 'RECONCILE_INTERVAL_MS', 60_000, 1_000, 86_400_000),
  },
  saleEviction: {
    enabled: readBool(env, 'SALE_EVICTION_ENABLED', true),
    intervalMs: readInt(env, 'SALE_EVICTION_INTERVAL_MS', 600_000, 1_000, 86_400_000),
    keysRetentionMs: readInt(env, 'SALE_KEYS_RETENTION_MS', 86_400_000, 0, 30 * 86_400_000),
  },
}));
