import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { duplicateClient, type RedisClient } from './redis-client.js';
import { REDIS_CLIENT } from './redis.constants.js';

type Handler = (message: string) => void;

interface Channel {
  handlers: Set<Handler>;
  /** Settles once Redis has confirmed the subscription. */
  subscribed: Promise<unknown>;
}

/**
 * The instance's one Redis pub/sub connection (a duplicate of the main client, opened on first
 * use), shared by whatever listens: the sold-out memo (`seckill:stock-back`) and the result
 * streams (a channel per streamed user). A channel is subscribed while it has a handler.
 * ioredis subscribes to them again after a reconnection; `onBack` handlers run once Redis has
 * confirmed that (messages published while the connection was down were not heard), `onDown`
 * handlers as soon as it drops.
 */
@Injectable()
export class RedisSubscriberService implements OnApplicationShutdown {
  private readonly logger = new Logger(RedisSubscriberService.name);
  private readonly channels = new Map<string, Channel>();
  private readonly downHandlers = new Set<() => void>();
  private readonly backHandlers = new Set<() => void>();
  private connection?: RedisClient;
  private up = false;

  constructor(@Inject(REDIS_CLIENT) private readonly redis: RedisClient) {}

  /** Whether the connection is up (a new subscription is confirmed quickly). */
  get isUp(): boolean {
    return this.up;
  }

  onDown(handler: () => void): void {
    this.downHandlers.add(handler);
  }

  onBack(handler: () => void): void {
    this.backHandlers.add(handler);
  }

  /**
   * Calls `handler` with each message on `channel`, from when this resolves (the subscription
   * is confirmed; while the connection is down, that waits for it). The returned function stops
   * it, and unsubscribes the channel once nothing listens to it.
   */
  async listen(channel: string, handler: Handler): Promise<() => void> {
    const connection = this.start();
    let entry = this.channels.get(channel);
    if (!entry) {
      entry = { handlers: new Set(), subscribed: connection.subscribe(channel) };
      this.channels.set(channel, entry);
    }
    const joined = entry;
    joined.handlers.add(handler);
    const stop = () => {
      if (!joined.handlers.delete(handler) || joined.handlers.size > 0) return;
      if (this.channels.get(channel) !== joined) return;
      this.channels.delete(channel);
      // On the same connection as any later SUBSCRIBE to it, so Redis sees them in order.
      connection.unsubscribe(channel).catch(() => undefined);
    };
    try {
      await joined.subscribed;
    } catch (error) {
      stop();
      throw error;
    }
    return stop;
  }

  /** Channels subscribed now. */
  get channelCount(): number {
    return this.channels.size;
  }

  /** Opens the connection unless it is open already (listen does too). */
  start(): RedisClient {
    if (this.connection) return this.connection;
    // On a cluster, ioredis subscribes through one node of its choice and moves the subscription
    // to another when that node goes; PUBLISH reaches every node of a cluster.
    const connection = duplicateClient(this.redis, { enableOfflineQueue: true });
    this.connection = connection;
    let wasUp = false;
    connection.on('error', () => undefined); // the main client already logs Redis errors
    connection.on('close', () => {
      if (!this.up) return;
      this.up = false;
      for (const handler of this.downHandlers) handler();
    });
    connection.on('ready', () => {
      this.up = true;
      if (!wasUp) {
        wasUp = true;
        return;
      }
      // ioredis subscribes again before 'ready'; the PING returns once Redis has done so.
      connection.ping().then(
        () => {
          this.logger.warn(`pub/sub connection back (${this.channels.size} channels)`);
          for (const handler of this.backHandlers) handler();
        },
        () => undefined,
      );
    });
    connection.on('message', (channel: string, message: string) => {
      const entry = this.channels.get(channel);
      if (entry) for (const handler of entry.handlers) handler(message);
    });
    return connection;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connection?.quit().catch(() => this.connection?.disconnect());
  }
}
