import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import amqp, {
  type AmqpConnectionManager,
  type ChannelWrapper,
  type CreateChannelOpts,
} from 'amqp-connection-manager';
import { InjectConfig } from '../../config/config-namespace.js';
import { rabbitmqConfig, type RabbitMqConfig } from '../../config/rabbitmq.config.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { topologyNames, type TopologyNames } from './topology.js';

/**
 * Who a channel is for. Publishers and consumers get a connection each, as RabbitMQ advises:
 * the broker applies flow control per connection, and on a shared one the consumers' deliveries
 * and acks queue up with the purchases' publishes and confirms. Measured here: with both on one
 * connection a purchase waited ~25 ms for its confirm under load; apart, ~10 ms.
 */
export type ConnectionRole = 'publish' | 'consume';

/**
 * The process's broker connections, one per role, each opened when its first channel is made: an
 * `api` instance, which consumes nothing, never opens the consuming one. amqp-connection-manager
 * reconnects by itself and re-runs every channel's setup (topology, prefetch, consumers) after a
 * reconnect.
 */
@Injectable()
export class RabbitMqConnection implements OnApplicationShutdown {
  private readonly logger = new Logger(RabbitMqConnection.name);
  private readonly connections = new Map<ConnectionRole, AmqpConnectionManager>();
  readonly names: TopologyNames;

  constructor(
    @InjectConfig(rabbitmqConfig) private readonly rabbitmq: RabbitMqConfig,
    @InjectConfig(seckillConfig) seckill: SeckillConfig,
  ) {
    this.names = topologyNames(rabbitmq.prefix, {
      paymentTimeoutMs: seckill.orderPaymentTimeoutMs,
      maxQueueLength: rabbitmq.queueMaxLength,
      queueType: rabbitmq.queueType,
      quorumSize: rabbitmq.quorumSize,
    });
  }

  private connect(role: ConnectionRole): AmqpConnectionManager {
    // amqp-connection-manager tries the nodes in turn: a lost node's clients move to the next.
    const connection = amqp.connect(this.rabbitmq.urls, {
      heartbeatIntervalInSeconds: 10,
      reconnectTimeInSeconds: 1,
      connectionOptions: {
        timeout: 5_000,
        // amqplib leaves Nagle's algorithm on: a purchase's small publish frame then waits for
        // the broker's ACK of the previous segment. Measured under load: a confirm took ~25 ms
        // with it and ~5.5 ms without, and purchases/s rose by half.
        noDelay: true,
        // Named in the management UI and in `rabbitmqctl list_connections client_properties`.
        clientProperties: { connection_name: `seckill-${role}` },
      },
    });
    connection.on('connect', ({ connection: model }) => {
      if (!coalesceFrames(model)) {
        this.logger.warn(`broker frames not coalesced (amqplib internals changed): role=${role}`);
      }
      this.logger.log(`broker connected: role=${role}`);
    });
    connection.on('disconnect', ({ err }) =>
      this.logger.warn(`broker disconnected: role=${role} ${err?.message ?? 'closed'}`),
    );
    connection.on('connectFailed', ({ err }) =>
      this.logger.warn(`broker connect failed: role=${role} ${err?.message ?? 'unknown'}`),
    );
    return connection;
  }

  /** The publishing connection is up: purchases can be confirmed. */
  isConnected(): boolean {
    return this.connections.get('publish')?.isConnected() ?? false;
  }

  /** The connections this instance uses that are down now (readiness). */
  disconnected(): ConnectionRole[] {
    return [...this.connections]
      .filter(([, connection]) => !connection.isConnected())
      .map(([role]) => role);
  }

  createChannel(role: ConnectionRole, options: CreateChannelOpts): ChannelWrapper {
    let connection = this.connections.get(role);
    if (!connection) {
      connection = this.connect(role);
      this.connections.set(role, connection);
    }
    const channel = connection.createChannel(options);
    // A channel error (a failed setup, a closed channel) is retried by the manager; unheard,
    // the 'error' event would end the process.
    channel.on('error', (error: Error) =>
      this.logger.warn(`channel ${options.name ?? ''} error: ${error.message}`),
    );
    return channel;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.connections.values()].map((connection) => connection.close()));
  }
}

/** The parts of amqplib's connection that `coalesceFrames` reaches (amqplib 2.x, lib/mux.js). */
interface FrameWriter {
  connection?: {
    stream?: { cork?: () => void; uncork?: () => void };
    muxer?: { _readIncoming?: () => void };
  };
}

/**
 * amqplib's muxer writes each frame of its channels to the socket on its own (a syscall per
 * frame, Nagle being off): a purchase's publish, a delivery's ack, each separately. Corked while
 * the muxer runs, the frames it takes in one turn leave in one writev, in the same order and at
 * the same moment. False when the connection does not have the shape this relies on; frames then
 * go out one by one as before.
 */
export function coalesceFrames(model: unknown): boolean {
  const connection = (model as FrameWriter | undefined)?.connection;
  const socket = connection?.stream;
  const muxer = connection?.muxer;
  const readIncoming = muxer?._readIncoming;
  if (!muxer || !socket?.cork || !socket.uncork || typeof readIncoming !== 'function') {
    return false;
  }
  // Its own property once wrapped: the prototype's method is amqplib's.
  if (Object.hasOwn(muxer, '_readIncoming')) return true;
  const cork = socket.cork.bind(socket);
  const uncork = socket.uncork.bind(socket);
  muxer._readIncoming = function (this: unknown) {
    cork();
    try {
      readIncoming.call(this);
    } finally {
      uncork();
    }
  };
  return true;
}
