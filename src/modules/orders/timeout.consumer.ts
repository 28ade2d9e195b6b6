import { inConsumerSpan, inSpan, type Trace } from '../../infra/tracing/tracing.js';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter } from '../../common/database/transient-errors.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { rabbitmqConfig, type RabbitMqConfig } from '../../config/rabbitmq.config.js';
import { appConfig } from '../../config/app.config.js';
import type { AppSection } from '../../config/app-section.js';
import { RabbitMqConnection } from '../../infra/rabbitmq/rabbitmq.connection.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OrderLifecycleService, type ExpireOutcome } from './order-lifecycle.service.js';
import type { Delivery } from '../messaging/delivery.js';
import { OrderPublisher } from '../messaging/order.publisher.js';
import { QueueConsumer } from '../messaging/queue-consumer.js';
import { parseTimeoutMessage, type OrderTimeout } from '../messaging/timeout-message.js';

/**
 * Messages in hand at once. Each carries a written batch's orders (up to the consumer batch
 * size), so a few keep MySQL's pool busy: 8 x EXPIRE_CONCURRENCY expiries at most.
 */
const PREFETCH = 8;
const MAX_BACKOFF_MS = 5_000;
/**
 * Orders of one message expired at once. Each expiry is a few round trips to MySQL and Redis;
 * a message's orders share a goods row, whose stock update serialises their cancels anyway.
 * Measured on a 1,000-order message (shared 2-core box): one at a time 370-460 orders/s, four
 * 600-680, eight 610-780; the one-order messages before, 50 in flight, 380-630.
 */
const EXPIRE_CONCURRENCY = 4;
/**
 * An order whose timeout came at most this long before its deadline (by MySQL's clock: the host
 * that wrote `expire_at` runs ahead, or the delay queue let it go a moment early) is held and
 * expired once due, not sent round the delay queue for another whole payment timeout. Further
 * off (the payment timeout was lengthened since), it goes round again.
 */
const MAX_HOLD_MS = 10_000;

/**
 * Drains the timeout queue (fed by the delay queue's dead-lettering): cancels each order of a
 * message still unpaid and gives its stock back. Acks a message only once that is durable in
 * both stores for every order in it; paid or already cancelled orders are simply counted.
 * Expiring is idempotent per order (state-checked), so a redelivered message cancels nothing
 * twice.
 */
@Injectable()
export class TimeoutConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(TimeoutConsumer.name);
  private queue?: QueueConsumer;
  private readonly inProgress = new Set<Promise<void>>();
  private stopping = false;
  /** Ends the waits of held orders at shutdown. */
  private readonly stopped = new AbortController();

  constructor(
    private readonly rabbit: RabbitMqConnection,
    private readonly lifecycle: OrderLifecycleService,
    private readonly publisher: OrderPublisher,
    private readonly metrics: MetricsService,
    @InjectConfig(rabbitmqConfig) private readonly rabbitmq: RabbitMqConfig,
    @InjectConfig(appConfig) private readonly app: AppSection,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.rabbitmq.consumer.enabled) return;
    this.queue = new QueueConsumer(this.rabbit, {
      name: 'timeout-consumer',
      queue: this.rabbit.names.timeoutQueue,
      prefetch: PREFETCH,
      received: (delivery) => {
        if (this.stopping) return;
        const work = this.handle(delivery).finally(() => this.inProgress.delete(work));
        this.inProgress.add(work);
      },
    });
  }

  private async handle(delivery: Delivery): Promise<void> {
    const orders = parseTimeoutMessage(delivery.message.content);
    if (typeof orders === 'string') return this.expireMessage(delivery, orders);
    // The expiry of these orders, linked to each order's purchase and to the batch that wrote them.
    return inConsumerSpan(
      this.rabbit.names.timeoutQueue,
      [delivery.message.traceparent, ...orders.map((order) => order.trace)],
      orders.length,
      (trace) => this.expireMessage(delivery, orders, trace),
    );
  }

  private async expireMessage(
    delivery: Delivery,
    orders: OrderTimeout[] | string,
    trace?: Trace,
  ): Promise<void> {
    if (typeof orders === 'string') {
      this.logger.error(`dead-lettered timeout message: ${orders}`);
      delivery.settle('reject');
      this.metrics.timeoutMessages.inc({ outcome: 'dead_lettered' });
      return;
    }
    // Final outcomes so far, by order number: a retry expires only the other orders.
    const settled = new Map<string, ExpireOutcome>();
    for (let attempt = 0; !this.stopping;) {
      const { failed, heldForMs } = await this.expireAll(orders, settled, trace);
      if (settled.size === orders.length) {
        delivery.settle('ack');
        for (const outcome of settled.values()) this.metrics.timeoutMessages.inc({ outcome });
        return;
      }
      if (failed) {
        const backoff = backoffWithJitter(attempt++, 100, MAX_BACKOFF_MS);
        this.logger.error(
          `order timeout failed, retrying in ${backoff} ms: order=${failed.orderNo} unsettled=${orders.length - settled.size} ${failed.error.message}`,
        );
        await sleep(backoff);
      } else if (heldForMs !== undefined) {
        await sleep(heldForMs, undefined, { signal: this.stopped.signal }).catch(() => undefined);
      } else {
        break; // stopping: the rest were not taken
      }
    }
    // Stopping: left unacked, the broker hands it to the next consumer.
  }

  /**
   * Expires the message's orders not settled yet, a few at a time, and sends the early ones
   * round again in one message; records each final outcome in `settled`. Returns the first
   * failure, if any, and how long to wait before the held orders (due within MAX_HOLD_MS) are
   * due. Stops taking orders when the service stops.
   */
  private async expireAll(
    orders: OrderTimeout[],
    settled: Map<string, ExpireOutcome>,
    trace: Trace,
  ): Promise<{ failed?: { orderNo: string; error: Error }; heldForMs?: number }> {
    const pending = orders.filter(({ orderNo }) => !settled.has(orderNo));
    const early: OrderTimeout[] = [];
    let failed: { orderNo: string; error: Error } | undefined;
    let heldForMs: number | undefined;
    let next = 0;
    const worker = async () => {
      while (next < pending.length && !this.stopping) {
        const order = pending[next++];
        try {
          const result = await inSpan(
            'expire order',
            trace,
            { attributes: { 'order.number': order.orderNo, goods: order.goodsId } },
            () => this.lifecycle.expire(order.orderNo),
          );
          if (result.outcome === 'not_due') {
            if (result.dueInMs <= MAX_HOLD_MS) heldForMs = Math.max(heldForMs ?? 0, result.dueInMs);
            else early.push(order);
            continue;
          }
          if (result.outcome === 'not_found') {
            this.logger.warn(`timeout for an unknown order: order=${order.orderNo}`);
          }
          settled.set(order.orderNo, result.outcome);
        } catch (error) {
          failed ??= { orderNo: order.orderNo, error: error as Error };
        }
      }
    };
    await Promise.all(Array.from({ length: EXPIRE_CONCURRENCY }, worker));
    if (early.length > 0) {
      // Early (the payment timeout was lengthened since they were sent): wait another round.
      if (await this.publisher.publishTimeouts(early, trace)) {
        for (const order of early) settled.set(order.orderNo, 'not_due');
      } else {
        failed ??= { orderNo: early[0].orderNo, error: new Error('not confirmed') };
      }
    }
    return { failed, heldForMs };
  }

  async onModuleDestroy(): Promise<void> {
    if (!this.queue) return;
    this.stopping = true;
    this.stopped.abort();
    await Promise.race([Promise.all(this.inProgress), sleep(this.app.shutdownTimeoutMs)]);
    await this.queue.close();
  }
}
