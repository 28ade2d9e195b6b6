import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { ChannelWrapper } from 'amqp-connection-manager';
import type { Channel, ConsumeMessage } from 'amqplib';
import { setTimeout as sleep } from 'node:timers/promises';
import { Batcher } from '../../common/batching/batcher.js';
import { backoffWithJitter, isPermanentDataError } from '../../common/database/transient-errors.js';
import { InjectConfig } from '../../config/app-config.js';
import { FaultInjector } from '../../config/fault-injector.js';
import type { AppConfig } from '../../config/env.validation.js';
import { RabbitConnection } from '../../infra/rabbitmq/rabbitmq.connection.js';
import { assertTopology } from '../../infra/rabbitmq/topology.js';
import { OrderWriter } from '../orders/order-writer.service.js';
import type { NewOrder } from '../orders/order.types.js';
import { OrdersService } from '../orders/orders.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { StockService } from '../stock/stock.service.js';
import { parseOrderMessage } from './order-message.js';
import { OrderPublisher } from './order-publisher.service.js';

interface Delivery {
  channel: Channel;
  message: ConsumeMessage;
}

interface Purchase {
  order: NewOrder;
  deliveries: Delivery[];
  /** Delivered CONSUMER_MAX_DELIVERIES times already: settle it for good this time. */
  exhausted: boolean;
}

const MAX_BACKOFF_MS = 5_000;

/**
 * Turns order messages into MySQL orders, in batches per goods (see OrderWriter), with manual
 * acks after the commit. At-least-once delivery is made exactly-once in effect by the unique
 * request_id: a redelivered message finds its order and is acked as done.
 */
@Injectable()
export class OrderConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(OrderConsumer.name);
  private channel?: ChannelWrapper;
  private readonly batcher: Batcher<Delivery>;
  private stopping = false;

  constructor(
    private readonly rabbit: RabbitConnection,
    private readonly writer: OrderWriter,
    private readonly orders: OrdersService,
    private readonly stock: StockService,
    private readonly metrics: MetricsService,
    private readonly publisher: OrderPublisher,
    private readonly faults: FaultInjector,
    @InjectConfig() private readonly config: AppConfig,
  ) {
    this.batcher = new Batcher({
      size: config.consumerBatchSize,
      waitMs: config.consumerBatchWaitMs,
      handle: (batch) => this.process(batch),
      onError: (error, batch) =>
        this.logger.error(
          `order batch abandoned, left for redelivery: n=${batch.length} ${error.message}`,
        ),
    });
  }

  onApplicationBootstrap(): void {
    if (!this.config.consumerEnabled) return;
    this.channel = this.rabbit.createChannel({
      name: 'order-consumer',
      setup: async (channel: Channel) => {
        await assertTopology(channel, this.rabbit.names);
        await channel.prefetch(this.config.consumerPrefetch);
        await channel.consume(
          this.rabbit.names.ordersQueue,
          (message) => message && this.receive({ channel, message }),
          { noAck: false },
        );
      },
    });
  }

  private receive(delivery: Delivery): void {
    if (this.stopping) return; // unacked: the broker gives it to another consumer
    this.batcher.push(delivery);
  }

  private async process(batch: Delivery[]): Promise<void> {
    const byGoods = new Map<number, Map<string, Purchase>>();
    for (const delivery of batch) {
      const parsed = parseOrderMessage(delivery.message.content);
      if (typeof parsed === 'string') {
        this.deadLetter(delivery, parsed);
        continue;
      }
      const deliveries = Number(delivery.message.properties.headers?.['x-delivery-count'] ?? 0);
      const purchases = byGoods.get(parsed.goodsId) ?? new Map<string, Purchase>();
      byGoods.set(parsed.goodsId, purchases);
      // The sweeper may have republished a message whose original is in this same batch.
      const purchase = purchases.get(parsed.requestId) ?? {
        order: parsed,
        deliveries: [],
        exhausted: false,
      };
      purchase.deliveries.push(delivery);
      purchase.exhausted ||= deliveries >= this.config.consumerMaxDeliveries;
      purchases.set(parsed.requestId, purchase);
    }
    for (const [goodsId, purchases] of byGoods) {
      await this.processGoodsUntilDone(goodsId, [...purchases.values()]);
    }
  }

  /**
   * Failures here are of MySQL or Redis being unreachable: retry with backoff rather than nack,
   * so an outage does not burn through the delivery limit and dead-letter good orders.
   */
  private async processGoodsUntilDone(goodsId: number, purchases: Purchase[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.processGoods(goodsId, purchases);
        return;
      } catch (error) {
        if (this.stopping) {
          this.logger.warn(
            `left for redelivery at shutdown: goods=${goodsId} n=${purchases.length}`,
          );
          return;
        }
        if (isPermanentDataError(error)) {
          try {
            await this.isolateRefusedRows(goodsId, purchases, error as Error);
            return;
          } catch (isolationError) {
            this.logger.error(
              `could not set refused orders aside, retrying: goods=${goodsId} ${(isolationError as Error).message}`,
            );
          }
        }
        const backoff = backoffWithJitter(attempt, 100, MAX_BACKOFF_MS);
        this.logger.error(
          `order batch failed, retrying in ${backoff} ms: goods=${goodsId} n=${purchases.length} ${(error as Error).message}`,
        );
        await sleep(backoff);
      }
    }
  }

  private async processGoods(goodsId: number, all: Purchase[]): Promise<void> {
    const purchases = all.filter((purchase) => !purchase.exhausted);
    for (const purchase of all.filter((candidate) => candidate.exhausted)) {
      await this.settleExhausted(goodsId, purchase);
    }
    if (purchases.length === 0) return;
    const claimed = await this.stock.claim(
      goodsId,
      purchases.map((purchase) => purchase.order.requestId),
    );
    const toWrite: Purchase[] = [];
    purchases.forEach((purchase, index) => {
      if (claimed[index]) {
        toWrite.push(purchase);
      } else {
        this.logger.log(
          `dropped voided purchase: request=${purchase.order.requestId} goods=${goodsId}`,
        );
        this.ackAll(purchase);
        this.metrics.orderMessages.inc({ outcome: 'voided' });
      }
    });
    if (toWrite.length === 0) return;

    const outcomes = await this.writer.writeBatch(
      goodsId,
      toWrite.map((purchase) => purchase.order),
    );
    this.faults.crashPoint('after-commit');
    const done = outcomes.filter((outcome) => outcome.kind !== 'rejected');
    for (const outcome of outcomes) {
      if (outcome.kind === 'rejected') {
        await this.stock.release(goodsId, outcome.order.requestId, outcome.reason, true);
        this.logger.warn(
          `purchase failed: request=${outcome.order.requestId} goods=${goodsId} user=${outcome.order.userId} reason=${outcome.reason}`,
        );
      }
    }
    await this.stock.complete(
      goodsId,
      done.map(({ order }) => ({
        requestId: order.requestId,
        userId: order.userId,
        orderNo: order.orderNo,
      })),
    );
    // The payment clock starts now. A duplicate gets its timeout again too: the first attempt
    // may have died before publishing it, and the timeout consumer is idempotent.
    if (
      done.length > 0 &&
      !(await this.publisher.publishTimeouts(done.map(({ order }) => order)))
    ) {
      throw new Error('payment timeout messages were not confirmed');
    }
    for (const purchase of toWrite) this.ackAll(purchase);
    for (const outcome of outcomes) this.metrics.orderMessages.inc({ outcome: outcome.kind });
  }

  /**
   * MySQL refused the batch's data. Each order is then written alone, so that only the one
   * MySQL refuses ends as FAILED (stock back, message dead-lettered) and the rest go through.
   */
  private async isolateRefusedRows(
    goodsId: number,
    purchases: Purchase[],
    error: Error,
  ): Promise<void> {
    if (purchases.length > 1) {
      for (const purchase of purchases) await this.processGoodsUntilDone(goodsId, [purchase]);
      return;
    }
    const [purchase] = purchases;
    const { order } = purchase;
    await this.stock.release(goodsId, order.requestId, 'REJECTED', true);
    this.logger.error(
      `order refused by MySQL, stock returned: request=${order.requestId} goods=${goodsId} user=${order.userId} ${error.message}`,
    );
    for (const delivery of purchase.deliveries) this.settle(delivery, 'reject');
    this.metrics.orderMessages.inc({ outcome: 'dead_lettered' });
  }

  /**
   * A valid order whose message keeps coming back (its instances kept dying): it must still end
   * as an order or as FAILED with its stock back, never vanish into the dead-letter queue.
   */
  private async settleExhausted(goodsId: number, purchase: Purchase): Promise<void> {
    const { order } = purchase;
    if (await this.orders.findByRequestId(order.requestId)) {
      await this.stock.complete(goodsId, [
        { requestId: order.requestId, userId: order.userId, orderNo: order.orderNo },
      ]);
      this.ackAll(purchase);
      return;
    }
    await this.stock.release(goodsId, order.requestId, 'UNDELIVERABLE', true);
    this.logger.error(
      `order given up after ${this.config.consumerMaxDeliveries} deliveries, stock returned: request=${order.requestId} goods=${goodsId} user=${order.userId}`,
    );
    for (const delivery of purchase.deliveries) this.settle(delivery, 'reject');
    this.metrics.orderMessages.inc({ outcome: 'dead_lettered' });
  }

  private ackAll(purchase: Purchase): void {
    for (const delivery of purchase.deliveries) this.settle(delivery, 'ack');
  }

  private deadLetter(delivery: Delivery, reason: string): void {
    this.logger.error(
      `dead-lettered order message: messageId=${String(delivery.message.properties.messageId)} ${reason}`,
    );
    this.settle(delivery, 'reject');
    this.metrics.orderMessages.inc({ outcome: 'dead_lettered' });
  }

  /** A channel that closed meanwhile takes its deliveries back to the queue: nothing to do. */
  private settle(delivery: Delivery, how: 'ack' | 'reject'): void {
    try {
      if (how === 'ack') delivery.channel.ack(delivery.message);
      else delivery.channel.nack(delivery.message, false, false);
    } catch (error) {
      this.logger.warn(`could not ${how}, it will be redelivered: ${(error as Error).message}`);
    }
  }

  /** Stops taking messages, finishes the batch in hand, acks it, then closes the channel. */
  async onModuleDestroy(): Promise<void> {
    if (!this.channel) return;
    this.stopping = true;
    await Promise.race([this.batcher.drain(), sleep(this.config.shutdownTimeoutMs)]);
    await this.channel.close();
    this.logger.log('consumer stopped');
  }
}
