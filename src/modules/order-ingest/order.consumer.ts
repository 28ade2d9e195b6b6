import { inConsumerSpan, type Trace } from '../../infra/tracing/tracing.js';
import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { Batcher } from '../../common/batching/batcher.js';
import { backoffWithJitter } from '../../common/database/transient-errors.js';
import { randomHex } from '../../common/random/random-hex.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { rabbitmqConfig, type RabbitMqConfig } from '../../config/rabbitmq.config.js';
import { appConfig } from '../../config/app.config.js';
import type { AppSection } from '../../config/app-section.js';
import { RabbitMqConnection } from '../../infra/rabbitmq/rabbitmq.connection.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OrderIngestService } from './order-ingest.service.js';
import type { IngestOutcome, IngestPurchase } from './order-ingest.types.js';
import { ConsumerSession } from '../messaging/consumer-session.js';
import type { Delivery } from '../messaging/delivery.js';
import { QueueConsumer, type ConsumerChannel } from '../messaging/queue-consumer.js';
import { ORDER_BARRIER_STORES, type BarrierStore } from '../messaging/barrier-store.js';
import { CONSUMER_TICK_MS } from '../messaging/redis-barrier.store.js';
import {
  BARRIER_MESSAGE_TYPE,
  parseBarrierMessage,
  parseOrderMessage,
} from '../messaging/order-message.js';

/** A purchase of the batch and every delivery that carries it (the sweeper may republish). */
interface Purchase extends IngestPurchase {
  deliveries: Delivery[];
}

/**
 * What each outcome does to the purchase's messages, and how it is counted. A deferred one is
 * left unsettled: the broker hands it to the next consumer.
 */
const SETTLEMENT: Record<IngestOutcome['kind'], { how: 'ack' | 'reject'; metric: string } | null> =
  {
    written: { how: 'ack', metric: 'written' },
    duplicate: { how: 'ack', metric: 'duplicate' },
    completed: { how: 'ack', metric: 'duplicate' },
    rejected: { how: 'ack', metric: 'rejected' },
    voided: { how: 'ack', metric: 'voided' },
    refused: { how: 'reject', metric: 'dead_lettered' },
    exhausted: { how: 'reject', metric: 'dead_lettered' },
    deferred: null,
  };

/**
 * Feeds order messages to OrderIngestService in batches per goods and settles each delivery once,
 * after its purchase's outcome is final: acks only after the commit. At-least-once delivery is
 * made exactly-once in effect by the unique request_id (a redelivered message finds its order).
 */
@Injectable()
export class OrderConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(OrderConsumer.name);
  private queue?: QueueConsumer;
  private readonly batcher: Batcher<Delivery>;
  private readonly stop = new AbortController();
  private readonly instance = randomHex(6);
  private sessionsStarted = 0;
  /** The session new deliveries go to, the one that drains barriers (see ConsumerSession). */
  private current?: ConsumerSession;
  /** Sessions on the current channel that gave a delivery back: they beat until idle. */
  private readonly retiring = new Set<ConsumerSession>();
  private ticker?: NodeJS.Timeout;
  private ticking = false;

  constructor(
    private readonly rabbit: RabbitMqConnection,
    private readonly ingest: OrderIngestService,
    private readonly metrics: MetricsService,
    @InjectConfig(rabbitmqConfig) private readonly rabbitmq: RabbitMqConfig,
    @InjectConfig(appConfig) private readonly app: AppSection,
    @Inject(ORDER_BARRIER_STORES) private readonly stores: BarrierStore[],
  ) {
    this.batcher = new Batcher({
      size: rabbitmq.consumer.batchSize,
      waitMs: rabbitmq.consumer.batchWaitMs,
      handle: (batch) => this.process(batch),
      onError: (error, batch) => this.abandon(error, batch),
    });
  }

  onApplicationBootstrap(): void {
    if (!this.rabbitmq.consumer.enabled) return;
    this.queue = new QueueConsumer(this.rabbit, {
      name: 'order-consumer',
      queue: this.rabbit.names.ordersQueue,
      prefetch: this.rabbitmq.consumer.prefetch,
      opened: async (channel) => {
        // A new channel is a new session: what the old one held went back to the queue, and
        // the old sessions beat no more. It is in the barrier's registry before its first
        // delivery.
        this.retiring.clear();
        await this.join(this.startSession(channel));
      },
      received: (delivery) => {
        // Stopping: left unacked, the broker gives it to another consumer.
        if (this.stop.signal.aborted) return;
        if (delivery.message.type === BARRIER_MESSAGE_TYPE) {
          void this.barrierDelivered(delivery);
          return;
        }
        this.batcher.push(this.current!.receive(delivery));
      },
    });
    this.ticker = setInterval(() => void this.tick(), CONSUMER_TICK_MS);
    this.ticker.unref();
  }

  /** Marks an order barrier delivered (retrying while Redis fails), then acks its message. */
  private async barrierDelivered(delivery: Delivery): Promise<void> {
    const id = parseBarrierMessage(delivery.message.content);
    for (let attempt = 0; id !== null && !this.stop.signal.aborted; attempt++) {
      try {
        await this.storeOf(id).markDelivered(id);
        break;
      } catch (error) {
        this.logger.warn(`barrier not marked delivered yet: id=${id} ${(error as Error).message}`);
        await sleep(backoffWithJitter(attempt, 100, 1_000));
      }
    }
    delivery.settle('ack');
  }

  private startSession(channel: ConsumerChannel): ConsumerSession {
    this.current = new ConsumerSession(`${this.instance}.${++this.sessionsStarted}`, channel);
    return this.current;
  }

  /** A session's first beat, before it takes a delivery. */
  private async join(session: ConsumerSession): Promise<void> {
    for (const registry of this.stores) {
      await registry.tick({ session: session.id }).catch((error: Error) => {
        this.logger.warn(`not in the order barrier's registry yet: ${error.message}`);
      });
    }
  }

  /**
   * A batch whose handling failed unexpectedly: its deliveries not settled yet go back to the
   * queue (each once, in the session that received it), so that no barrier waits on them until
   * the channel closes. A session that gave one back drains nothing more (see ConsumerSession):
   * the next deliveries on its channel start a new one.
   */
  private abandon(error: Error, batch: Delivery[]): void {
    const requeued = batch.filter((delivery) => delivery.settle('requeue')).length;
    if (requeued > 0) this.metrics.orderMessages.inc({ outcome: 'requeued' }, requeued);
    this.logger.error(
      `order batch abandoned, given back to the queue: n=${batch.length} requeued=${requeued} ${error.message}`,
    );
    const current = this.current;
    if (!current?.retired) return;
    this.retiring.add(current);
    void this.join(this.startSession(current.channel));
  }

  /**
   * Beats in the order barrier's registry, and drains the open barriers that were delivered: once
   * every delivery received before it saw one (after a round trip on the channel: whatever the
   * broker had sent is in) is settled, it marks the barrier drained by this session.
   */
  private async tick(): Promise<void> {
    const session = this.current;
    if (this.ticking || !session || this.stop.signal.aborted) return;
    this.ticking = true;
    for (const retired of this.retiring) if (retired.idle) this.retiring.delete(retired);
    const retiring = [...this.retiring];
    // Each registry on its own: the one in MySQL must go on while Redis is down.
    await Promise.all(
      this.stores.map(async (registry) => {
        try {
          for (const retired of retiring) await registry.tick({ session: retired.id });
          const { open } = await registry.tick({ session: session.id });
          session.forget((id) => this.storeOf(id) === registry && !open.includes(id));
          for (const id of open) await this.drain(session, id);
        } catch (error) {
          this.logger.warn(`order barrier tick failed: ${(error as Error).message}`);
        }
      }),
    );
    this.ticking = false;
  }

  private storeOf(id: string): BarrierStore {
    return this.stores.find((store) => store.owns(id)) ?? this.stores[0];
  }

  private async drain(session: ConsumerSession, id: string): Promise<void> {
    const drain = session.drainOf(id);
    if (drain === 'drained') return;
    if (drain === 'none') {
      if (!(await this.storeOf(id).isDelivered(id))) return;
      // The round trip on the session's own channel: one that closed meanwhile fails here.
      await session.channel.roundTrip();
      session.fence(id);
      return;
    }
    // A session replaced meanwhile (its channel re-opened, or it gave a delivery back) never
    // drains: the barrier restarts.
    if (session !== this.current || !session.mayMarkDrained(id)) return;
    await this.storeOf(id).markDrained(id, session.id);
    session.markedDrained(id);
  }

  private async process(batch: Delivery[]): Promise<void> {
    // One trace per batch, linked to every purchase's publish in it: a purchase's trace leads
    // here, and the batch's MySQL write and timeout publish are its children.
    return inConsumerSpan(
      this.rabbit.names.ordersQueue,
      batch.map((delivery) => delivery.message.traceparent),
      batch.length,
      (trace) => this.processBatch(batch, trace),
    );
  }

  private async processBatch(batch: Delivery[], trace: Trace): Promise<void> {
    for (const [goodsId, purchases] of this.byGoods(batch)) {
      const endWrite = this.metrics.orderBatchWrites.startTimer();
      const outcomes = await this.ingest.ingest(
        goodsId,
        purchases.map(({ order, exhausted }) => ({ order, exhausted })),
        this.stop.signal,
        trace,
      );
      endWrite();
      const committedAt = Date.now();
      purchases.forEach((purchase, index) => {
        if (outcomes[index].kind === 'written') {
          this.metrics.orderWriteLag.observe(
            Math.max(0, committedAt - purchase.order.acceptedAt) / 1_000,
          );
        }
        this.settle(purchase, outcomes[index]);
      });
    }
  }

  /** Valid purchases per goods, one per request id; a poison message is dead-lettered here. */
  private byGoods(batch: Delivery[]): Map<number, Purchase[]> {
    const byGoods = new Map<number, Map<string, Purchase>>();
    for (const delivery of batch) {
      const order = parseOrderMessage(delivery.message.content);
      if (typeof order === 'string') {
        this.deadLetter(delivery, order);
        continue;
      }
      // Kept with the order, so that its payment timeout links to the purchase's trace.
      if (delivery.message.traceparent !== undefined) order.trace = delivery.message.traceparent;
      const purchases = byGoods.get(order.goodsId) ?? new Map<string, Purchase>();
      byGoods.set(order.goodsId, purchases);
      // The sweeper may have republished a message whose original is in this same batch.
      const purchase = purchases.get(order.requestId) ?? {
        order,
        exhausted: false,
        deliveries: [],
      };
      purchase.deliveries.push(delivery);
      purchase.exhausted ||=
        delivery.message.previousDeliveries >= this.rabbitmq.consumer.maxDeliveries;
      purchases.set(order.requestId, purchase);
    }
    return new Map([...byGoods].map(([goodsId, purchases]) => [goodsId, [...purchases.values()]]));
  }

  private settle(purchase: Purchase, outcome: IngestOutcome): void {
    const settlement = SETTLEMENT[outcome.kind];
    if (settlement === null) return;
    for (const delivery of purchase.deliveries) delivery.settle(settlement.how);
    this.metrics.orderMessages.inc({ outcome: settlement.metric });
  }

  private deadLetter(delivery: Delivery, reason: string): void {
    this.logger.error(
      `dead-lettered order message: messageId=${delivery.message.messageId} ${reason}`,
    );
    delivery.settle('reject');
    this.metrics.orderMessages.inc({ outcome: 'dead_lettered' });
  }

  /** Stops taking messages, finishes the batch in hand, acks it, then closes the channel. */
  async onModuleDestroy(): Promise<void> {
    if (!this.queue) return;
    clearInterval(this.ticker);
    this.stop.abort();
    await Promise.race([this.batcher.drain(), sleep(this.app.shutdownTimeoutMs)]);
    await this.queue.close();
    // Gone now rather than when its beat expires: a barrier that saw it restarts at once.
    for (const store of this.stores) {
      for (const session of [this.current, ...this.retiring]) {
        if (session) await store.leave?.(session.id).catch(() => undefined);
      }
    }
    this.logger.log('consumer stopped');
  }
}
