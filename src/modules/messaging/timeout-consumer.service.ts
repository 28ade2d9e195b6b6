import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { ChannelWrapper } from 'amqp-connection-manager';
import type { Channel, ConsumeMessage } from 'amqplib';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffWithJitter } from '../../common/database/transient-errors.js';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { RabbitConnection } from '../../infra/rabbitmq/rabbitmq.connection.js';
import { assertTopology } from '../../infra/rabbitmq/topology.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OrderLifecycleService } from '../orders/order-lifecycle.service.js';
import { OrderPublisher } from './order-publisher.service.js';
import { parseTimeoutMessage } from './timeout-message.js';

const PREFETCH = 50;
const MAX_BACKOFF_MS = 5_000;

/**
 * Drains the timeout queue (fed by the delay queue's dead-lettering): cancels each order still
 * unpaid and gives its stock back. Acks only once that is durable in both stores; a message
 * for a paid or already cancelled order is simply acked.
 */
@Injectable()
export class TimeoutConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(TimeoutConsumer.name);
  private channel?: ChannelWrapper;
  private readonly inProgress = new Set<Promise<void>>();
  private stopping = false;

  constructor(
    private readonly rabbit: RabbitConnection,
    private readonly lifecycle: OrderLifecycleService,
    private readonly publisher: OrderPublisher,
    private readonly metrics: MetricsService,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.consumerEnabled) return;
    this.channel = this.rabbit.createChannel('consume', {
      name: 'timeout-consumer',
      setup: async (channel: Channel) => {
        await assertTopology(channel, this.rabbit.names);
        await channel.prefetch(PREFETCH);
        await channel.consume(
          this.rabbit.names.timeoutQueue,
          (message) => {
            if (!message || this.stopping) return;
            const work = this.handle(channel, message).finally(() => this.inProgress.delete(work));
            this.inProgress.add(work);
          },
          { noAck: false },
        );
      },
    });
  }

  private async handle(channel: Channel, message: ConsumeMessage): Promise<void> {
    const parsed = parseTimeoutMessage(message.content);
    if (typeof parsed === 'string') {
      this.logger.error(`dead-lettered timeout message: ${parsed}`);
      this.settle(channel, message, false);
      this.metrics.timeoutMessages.inc({ outcome: 'dead_lettered' });
      return;
    }
    for (let attempt = 0; !this.stopping; attempt++) {
      try {
        const outcome = await this.lifecycle.expire(parsed.orderNo);
        if (outcome === 'not_due') {
          // Early (the payment timeout was lengthened since it was sent): wait another round.
          if (!(await this.publisher.publishTimeouts([parsed]))) throw new Error('not confirmed');
        }
        if (outcome === 'not_found') {
          this.logger.warn(`timeout for an unknown order: order=${parsed.orderNo}`);
        }
        this.settle(channel, message, true);
        this.metrics.timeoutMessages.inc({ outcome });
        return;
      } catch (error) {
        const backoff = backoffWithJitter(attempt, 100, MAX_BACKOFF_MS);
        this.logger.error(
          `order timeout failed, retrying in ${backoff} ms: order=${parsed.orderNo} ${(error as Error).message}`,
        );
        await sleep(backoff);
      }
    }
    // Stopping: left unacked, the broker hands it to the next consumer.
  }

  private settle(channel: Channel, message: ConsumeMessage, ack: boolean): void {
    try {
      if (ack) channel.ack(message);
      else channel.nack(message, false, false);
    } catch (error) {
      this.logger.warn(`could not settle, it will be redelivered: ${(error as Error).message}`);
    }
  }

  async onModuleDestroy(): Promise<void> {
    if (!this.channel) return;
    this.stopping = true;
    await Promise.race([Promise.all(this.inProgress), sleep(this.config.shutdownTimeoutMs)]);
    await this.channel.close();
  }
}
