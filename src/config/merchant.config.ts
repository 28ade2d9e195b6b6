import { configNamespace } from './config-namespace.js';
import { ConfigValidationError } from './config-validation.error.js';
import { readInt, readString, readUrl, type Env } from './env-readers.js';
import { MIN_WEBHOOK_SECRET_LENGTH } from './payments.config.js';

/** Order events to the merchant's webhook (docs/payments.md, "Order events"). */
export interface MerchantConfig {
  /** Where order events are POSTed; null: off (no event is written). */
  url: string | null;
  /** Signs them (the `Seckill-Signature` form of the provider's webhooks). */
  secret: string;
  /** How long an event is retried, from its creation, before it is parked. */
  retryForMs: number;
  /** One delivery's time limit; past it, the attempt failed. */
  timeoutMs: number;
}

function readMerchant(env: Env): MerchantConfig {
  const raw = readString(env, 'MERCHANT_WEBHOOK_URL', '');
  const url = raw === '' ? null : readUrl(env, 'MERCHANT_WEBHOOK_URL', raw, ['http:', 'https:']);
  const secret = readString(env, 'MERCHANT_WEBHOOK_SECRET', '');
  if (url !== null && secret.length < MIN_WEBHOOK_SECRET_LENGTH) {
    throw new ConfigValidationError(
      `MERCHANT_WEBHOOK_SECRET must be set, at least ${MIN_WEBHOOK_SECRET_LENGTH} characters, when MERCHANT_WEBHOOK_URL is`,
    );
  }
  return {
    url,
    secret,
    retryForMs: readInt(env, 'MERCHANT_WEBHOOK_RETRY_SECONDS', 86_400, 1, 30 * 86_400) * 1_000,
    timeoutMs: readInt(env, 'MERCHANT_WEBHOOK_TIMEOUT_MS', 5_000, 100, 60_000),
  };
}

export const merchantConfig = configNamespace('merchant', (env): MerchantConfig =>
  readMerchant(env),
);
