import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { ChannelWrapper } from 'amqp-connection-manager';
import type { ConfirmChannel } from 'amqplib';
import { setTimeout as sleep } from 'node:timers/promises';
import { InjectConfig } from '../../config/config-namespace.js';
import { rabbitmqConfig, type RabbitMqConfig } from '../../config/rabbitmq.config.js';
import { RabbitMqConnection } from '../../infra/rabbitmq/rabbitmq.connection.js';
import { inSpan, SpanKind, traceHeaders, type Trace } from '../../infra/tracing/tracing.js';
import { assertTopology } from '../../infra/rabbitmq/topology.js';
import type { NewOrder } from './order-message.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { BARRIER_MESSAGE_TYPE, encodeOrderMessage } from './order-message.js';
import {
  encodeTimeoutMessage,
  MAX_TIMEOUTS_PER_MESSAGE,
  type OrderTimeout,
} from './timeout-message.js';

/** What each of the service's queues is for: orders, payment timeouts due, the delay, the dead. */
export type QueueRole = 'orders' | 'timeout' | 'delay' | 'dead';

/**
 * Publishes order messages on a confirm channel, persistent, to the durable orders queue.
 * Publishes run concurrently (awaiting confirms one at a time caps a channel at ~2.6k/s here).
 */
@Injectable()
export class OrderPublisher implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(OrderPublisher.name);
  private channel: ChannelWrapper;
  private pending = 0;
  private readonly returned = new Set<string>();

  constructor(
    private readonly rabbit: RabbitMqConnection,
    private readonly metrics: MetricsService,
    @InjectConfig(rabbitmqConfig) private readonly rabbitmq: RabbitMqConfig,
  ) {}

  onModuleInit(): void {
    this.channel = this.rabbit.createChannel('publish', {
      name: 'order-publisher',
      confirm: true,
      publishTimeout: this.rabbitmq.publishConfirmTimeoutMs,
      setup: async (channel: ConfirmChannel) => {
        // The broker acks a message it could not route (after returning it): without this,
        // an unbound queue would swallow purchases that were answered 202.
        channel.on('return', (message: { properties: { messageId?: unknown } }) => {
          const id = message.properties.messageId;
          if (typeof id === 'string') this.returned.add(id);
        });
        await assertTopology(channel, this.rabbit.names);
      },
    });
  }

  /** The broker is reachable now; a purchase is refused up front (nothing taken) when not. */
  isReady(): boolean {
    return this.rabbit.isConnected();
  }

  /**
   * True once the broker confirmed the message. False when it refused it or no confirm came in
   * time; in the second case the message may still arrive, so the caller must void it, not
   * merely give its stock back.
   */
  async publish(order: NewOrder, trace?: Trace): Promise<boolean> {
    if (trace === undefined) return this.publishOrder(order);
    return inSpan(
      `${this.rabbit.names.ordersExchange} publish`,
      trace,
      {
        kind: SpanKind.PRODUCER,
        attributes: { 'messaging.system': 'rabbitmq', 'messaging.message.id': order.requestId },
      },
      // The headers name the publish span: the consumer's batch links to it.
      (publish) => this.publishOrder(order, traceHeaders(publish)),
    );
  }

  private async publishOrder(order: NewOrder, headers?: Record<string, string>): Promise<boolean> {
    this.pending++;
    try {
      await this.channel.publish(
        this.rabbit.names.ordersExchange,
        this.rabbit.names.ordersRoutingKey,
        Buffer.from(encodeOrderMessage(order)),
        {
          persistent: true,
          contentType: 'application/json',
          messageId: order.requestId,
          timestamp: Math.floor(order.acceptedAt / 1000),
          mandatory: true,
          ...(headers === undefined ? {} : { headers }),
        },
      );
      // basic.return comes before the ack, so a returned message is known by now.
      if (this.returned.delete(order.requestId)) {
        this.metrics.publishes.inc({ result: 'unroutable' });
        this.logger.error(
          `publish unroutable (is ${this.rabbit.names.ordersQueue} bound?): request=${order.requestId} goods=${order.goodsId}`,
        );
        return false;
      }
      this.metrics.publishes.inc({ result: 'confirmed' });
      return true;
    } catch (error) {
      this.metrics.publishes.inc({ result: 'unconfirmed' });
      this.logger.warn(
        `publish not confirmed: request=${order.requestId} goods=${order.goodsId} ${(error as Error).message}`,
      );
      return false;
    } finally {
      // A return followed by a confirm that never came would otherwise stay here for good.
      this.returned.delete(order.requestId);
      this.pending--;
    }
  }

  /**
   * Starts the payment clock of written orders: one message into the delay queue for all of
   * them (several past MAX_TIMEOUTS_PER_MESSAGE). True when every message was confirmed; the
   * caller then acks the order messages, never before.
   */
  async publishTimeouts(orders: OrderTimeout[], trace?: Trace): Promise<boolean> {
    if (trace === undefined) return this.publishTimeoutMessages(orders);
    return inSpan(
      `${this.rabbit.names.delayQueue} publish`,
      trace,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          'messaging.system': 'rabbitmq',
          'messaging.batch.message_count': orders.length,
        },
      },
      (publish) => this.publishTimeoutMessages(orders, traceHeaders(publish)),
    );
  }

  private async publishTimeoutMessages(
    orders: OrderTimeout[],
    headers?: Record<string, string>,
  ): Promise<boolean> {
    const messages: OrderTimeout[][] = [];
    for (let i = 0; i < orders.length; i += MAX_TIMEOUTS_PER_MESSAGE) {
      messages.push(orders.slice(i, i + MAX_TIMEOUTS_PER_MESSAGE));
    }
    this.pending++;
    try {
      await Promise.all(
        messages.map((message) =>
          this.channel.sendToQueue(
            this.rabbit.names.delayQueue,
            Buffer.from(encodeTimeoutMessage(message)),
            // Any one id will do: the consumer is idempotent by each order's state, not by message.
            {
              persistent: true,
              contentType: 'application/json',
              messageId: message[0].orderNo,
              ...(headers === undefined ? {} : { headers }),
            },
          ),
        ),
      );
      this.metrics.publishes.inc({ result: 'confirmed' }, messages.length);
      return true;
    } catch (error) {
      this.metrics.publishes.inc({ result: 'unconfirmed' });
      this.logger.warn(
        `timeout publish not confirmed: order=${orders[0]?.orderNo} n=${orders.length} ${(error as Error).message}`,
      );
      return false;
    } finally {
      this.pending--;
    }
  }

  /**
   * Proves the broker confirms publishes now (a connection can be up while the broker stalls):
   * an empty message to no queue, which a healthy broker acks at once. Rejects on timeout.
   */
  async probeConfirms(timeoutMs: number): Promise<void> {
    await this.channel.publish(
      '',
      `${this.rabbit.names.ordersQueue}.health-probe`,
      Buffer.alloc(0),
      {
        timeout: timeoutMs,
      },
    );
  }

  /**
   * Publishes an order barrier's message (see RedisBarrierStore) into the orders queue, behind every
   * order message taken before it. True once confirmed.
   */
  async publishBarrier(id: string): Promise<boolean> {
    try {
      await this.channel.publish(
        this.rabbit.names.ordersExchange,
        this.rabbit.names.ordersRoutingKey,
        Buffer.from(JSON.stringify({ barrier: id })),
        {
          persistent: true,
          contentType: 'application/json',
          type: BARRIER_MESSAGE_TYPE,
          messageId: `barrier:${id}`,
          mandatory: true,
        },
      );
      return !this.returned.delete(`barrier:${id}`);
    } catch (error) {
      this.logger.warn(`barrier publish not confirmed: id=${id} ${(error as Error).message}`);
      return false;
    }
  }

  /** Consumers of the orders queue, as the broker counts them. */
  async ordersConsumers(): Promise<number> {
    // After the setup has declared the topology: checking a queue that does not exist yet would
    // make the broker close the channel.
    await this.channel.waitForConnect();
    return (await this.channel.checkQueue(this.rabbit.names.ordersQueue)).consumerCount;
  }

  /** Messages ready in each of the service's queues (consumer lag). */
  async queueDepths(): Promise<Record<string, number>> {
    const depths: Record<string, number> = {};
    for (const stats of await this.queueStats()) depths[stats.queue] = stats.messages;
    return depths;
  }

  /** Per queue of the service: messages ready (not yet delivered) and consumers attached. */
  async queueStats(): Promise<
    { role: QueueRole; queue: string; messages: number; consumers: number }[]
  > {
    const names = this.rabbit.names;
    const queues: [QueueRole, string][] = [
      ['orders', names.ordersQueue],
      ['timeout', names.timeoutQueue],
      ['delay', names.delayQueue],
      ['dead', names.deadLetterQueue],
    ];
    await this.channel.waitForConnect();
    const stats = [];
    for (const [role, queue] of queues) {
      const { messageCount, consumerCount } = await this.channel.checkQueue(queue);
      stats.push({ role, queue, messages: messageCount, consumers: consumerCount });
    }
    return stats;
  }

  async onApplicationShutdown(): Promise<void> {
    // Confirms still owed are waited for (bounded by the publish timeout) before the channel goes.
    const deadline = Date.now() + this.rabbitmq.publishConfirmTimeoutMs + 500;
    while (this.pending > 0 && Date.now() < deadline) await sleep(20);
    await this.channel.close();
    this.logger.log('publisher closed');
  }
}
