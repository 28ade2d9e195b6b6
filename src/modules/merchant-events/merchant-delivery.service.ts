import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { backoffWithJitter } from '../../common/database/transient-errors.js';
import { signatureHeader } from '../../common/webhook-signature.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { merchantConfig, type MerchantConfig } from '../../config/merchant.config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { MerchantEventRepository, type ClaimedEvent } from './merchant-event.repository.js';

/** Events one worker claims per pass (each of another order: they are sent at once). */
const BATCH = 50;
/** A failed event is tried again after 0.5 s, 1 s, 2 s… with jitter, at most a minute apart. */
const RETRY_BASE_MS = 500;
const RETRY_MAX_MS = 60_000;
const DELIVERED_KEPT_MS = 7 * 86_400_000;
const PRUNE_BATCH = 5_000;

/**
 * Delivers the merchant's order events (docs/payments.md, "Order events"): each POSTed as its
 * JSON, signed (`Seckill-Signature`, the provider's form, MERCHANT_WEBHOOK_SECRET), with its id
 * in `Seckill-Event-Id`. A 2xx is delivered; anything else (another status, a timeout, a refused
 * connection) is tried again with backoff and jitter until MERCHANT_WEBHOOK_RETRY_SECONDS have
 * passed, then parked. At least once: a worker that dies after the merchant's 2xx and before it
 * marks the event delivered lets its lease run out, and another sends it again (the merchant
 * de-duplicates by the id).
 */
@Injectable()
export class MerchantDeliveryService {
  private readonly logger = new Logger(MerchantDeliveryService.name);

  constructor(
    @InjectConfig(merchantConfig) private readonly merchant: MerchantConfig,
    private readonly events: MerchantEventRepository,
    private readonly metrics: MetricsService,
  ) {}

  get enabled(): boolean {
    return this.merchant.url !== null;
  }

  /**
   * Delivered events are kept a week (an operator looking into what the shop was told), then
   * dropped a batch at a time; the provider's events, the idempotency record, are kept.
   */
  async prune(): Promise<number> {
    return this.events.pruneDelivered(DELIVERED_KEPT_MS, PRUNE_BATCH);
  }

  /** One pass: claims what is due and delivers it; returns how many were claimed. */
  async deliverDue(): Promise<number> {
    if (!this.enabled) return 0;
    const token = randomUUID();
    // Longer than a delivery can take, so that a live worker never loses its claim.
    const leaseMs = this.merchant.timeoutMs * 3;
    const claimed = await this.events.claimDue(token, leaseMs, BATCH);
    await Promise.all(claimed.map((event) => this.deliver(event, token)));
    return claimed.length;
  }

  private async deliver(event: ClaimedEvent, token: string): Promise<void> {
    const failure = await this.post(event);
    if (failure === null) {
      await this.events.markDelivered(event.id, token);
      this.metrics.merchantEvents.inc({ outcome: 'delivered' });
      this.logger.log(
        `merchant event delivered: event=${event.eventId} type=${event.type} order=${event.orderNo} attempts=${event.attempts + 1}`,
      );
      return;
    }
    const retryInMs = backoffWithJitter(event.attempts, RETRY_BASE_MS, RETRY_MAX_MS);
    const outcome = await this.events.markFailed(
      event.id,
      token,
      failure,
      retryInMs,
      this.merchant.retryForMs,
    );
    this.metrics.merchantEvents.inc({ outcome: outcome === 'parked' ? 'parked' : 'failed' });
    const line = `event=${event.eventId} type=${event.type} order=${event.orderNo} attempts=${event.attempts + 1} ${failure}`;
    if (outcome === 'parked') this.logger.error(`merchant event parked: ${line}`);
    else this.logger.warn(`merchant event not delivered, retried in ${retryInMs} ms: ${line}`);
  }

  /** null on a 2xx; otherwise what went wrong, in a few words. */
  private async post(event: ClaimedEvent): Promise<string | null> {
    try {
      const response = await fetch(this.merchant.url!, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'seckill-signature': signatureHeader([this.merchant.secret], event.body),
          'seckill-event-id': event.eventId,
          'user-agent': 'seckill-merchant-events/1',
        },
        body: event.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.merchant.timeoutMs),
      });
      // The body is not read; it is released so that the connection can be reused.
      await response.body?.cancel();
      return response.ok ? null : `status ${response.status}`;
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      return cause ?? (error as Error).name ?? 'error';
    }
  }
}
