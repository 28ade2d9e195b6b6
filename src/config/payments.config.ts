import { configNamespace } from './config-namespace.js';
import { ConfigValidationError } from './config-validation.error.js';
import { readInt, readString, type Env } from './env-readers.js';

/** Shorter secrets are refused at boot: an HMAC key anyone could guess signs nothing. */
export const MIN_WEBHOOK_SECRET_LENGTH = 16;

/** The payment provider's webhook (docs/payments.md). */
export interface PaymentsConfig {
  /**
   * The provider's signing secrets in force: one, or two while one is rotated. Empty: the webhook
   * route answers 503 UNAVAILABLE (nothing can be trusted without one).
   */
  webhookSecrets: string[];
  /** How far a webhook's signed time may be from now, either way. */
  toleranceSeconds: number;
  /** How much a `payment.started` extends an order's payment deadline, once. */
  graceMs: number;
  /** The ISO 4217 code of every price; a payment event in another currency is refused. */
  currency: string;
}

export function readSecretList(env: Env, name: string, most: number): string[] {
  const secrets = readString(env, name, '')
    .split(',')
    .map((secret) => secret.trim())
    .filter((secret) => secret !== '');
  if (secrets.length > most) {
    throw new ConfigValidationError(`${name} holds at most ${most} comma-separated secrets`);
  }
  if (secrets.some((secret) => secret.length < MIN_WEBHOOK_SECRET_LENGTH)) {
    throw new ConfigValidationError(
      `${name}: each secret must be at least ${MIN_WEBHOOK_SECRET_LENGTH} characters`,
    );
  }
  return secrets;
}

export const paymentsConfig = configNamespace('payments', (env): PaymentsConfig => {
  const currency = readString(env, 'SHOP_CURRENCY', 'CNY');
  if (!/^[A-Z]{3}$/.test(currency)) {
    throw new ConfigValidationError(
      `SHOP_CURRENCY must be an ISO 4217 code of three capital letters, got "${currency}"`,
    );
  }
  return {
    webhookSecrets: readSecretList(env, 'PAYMENT_WEBHOOK_SECRET', 2),
    toleranceSeconds: readInt(env, 'PAYMENT_WEBHOOK_TOLERANCE_SECONDS', 300, 1, 86_400),
    // Two minutes: long enough for a provider's 3-D Secure step, short enough that a unit a
    // buyer walked away from comes back soon.
    graceMs: readInt(env, 'PAYMENT_GRACE_SECONDS', 120, 0, 86_400) * 1_000,
    currency,
  };
});
