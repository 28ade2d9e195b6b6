import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import amqp, {
  type AmqpConnectionManager,
  type ChannelWrapper,
  type CreateChannelOpts,
} from 'amqp-connection-manager';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { topologyNames, type TopologyNames } from './topology.js';

/**
 * One broker connection per process. amqp-connection-manager reconnects by itself and re-runs
 * every channel's setup (topology, prefetch, consumers) after a reconnect.
 */
@Injectable()
export class RabbitConnection implements OnApplicationShutdown {
  private readonly logger = new Logger(RabbitConnection.name);
  private readonly connection: AmqpConnectionManager;
  readonly names: TopologyNames;

  constructor(@InjectConfig() config: AppConfig) {
    this.names = topologyNames(config.rabbitmqPrefix, {
      paymentTimeoutMs: config.orderPaymentTimeoutMs,
      maxQueueLength: config.queueMaxLength,
      queueType: config.queueType,
    });
    this.connection = amqp.connect([config.rabbitmqUrl], {
      heartbeatIntervalInSeconds: 10,
      reconnectTimeInSeconds: 1,
      connectionOptions: { timeout: 5_000 },
    });
    this.connection.on('connect', () => this.logger.log('broker connected'));
    this.connection.on('disconnect', ({ err }) =>
      this.logger.warn(`broker disconnected: ${err?.message ?? 'closed'}`),
    );
    this.connection.on('connectFailed', ({ err }) =>
      this.logger.warn(`broker connect failed: ${err?.message ?? 'unknown'}`),
    );
  }

  isConnected(): boolean {
    return this.connection.isConnected();
  }

  createChannel(options: CreateChannelOpts): ChannelWrapper {
    const channel = this.connection.createChannel(options);
    // A channel error (a failed setup, a closed channel) is retried by the manager; unheard,
    // the 'error' event would end the process.
    channel.on('error', (error: Error) =>
      this.logger.warn(`channel ${options.name ?? ''} error: ${error.message}`),
    );
    return channel;
  }

  /** Resolves once connected; rejects after `timeoutMs` while reconnects go on behind. */
  async waitForConnect(timeoutMs: number): Promise<void> {
    if (this.isConnected()) return;
    await this.connection.connect({ timeout: timeoutMs });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connection.close();
  }
}
