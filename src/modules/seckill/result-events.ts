import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { UnavailableError } from '../../common/errors/domain-error.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import { resultChannel } from '../../infra/redis/seckill-keys.js';

interface Channel {
  listeners: Set<() => void>;
  /** Settles once Redis has confirmed the subscription. */
  subscribed: Promise<unknown>;
}

/**
 * Tells this instance's result streams that a user's result changed, from one Redis subscriber
 * connection: the scripts that write a result (deduct, complete, release) publish on that user's
 * channel (resultChannel), and the instance subscribes to a channel only while it streams that
 * user's result. An open stream costs nothing while nothing changes; a change reaches only the
 * instances streaming it. A listener is called once per change, with nothing: it re-reads the
 * result. After the connection comes back (ioredis subscribes again), every listener is called
 * once, since changes during the outage were not heard.
 */
@Injectable()
export class ResultEvents implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(ResultEvents.name);
  private readonly channels = new Map<string, Channel>();
  private subscriber?: Redis;
  private ready = false;

  constructor(@Inject(REDIS_CLIENT) private readonly redis: Redis) {}

  onModuleInit(): void {
    const subscriber = this.redis.duplicate({ enableOfflineQueue: true });
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined); // the main client already logs Redis errors
    subscriber.on('close', () => {
      this.ready = false;
    });
    subscriber.on('ready', () => {
      const reconnected = this.channels.size > 0;
      this.ready = true;
      if (!reconnected) return;
      // ioredis subscribes again before 'ready'; the PING returns once Redis has done so, and a
      // result read after that misses no change.
      subscriber.ping().then(
        () => {
          this.logger.warn(`result events back: re-reading ${this.channels.size} streamed results`);
          for (const channel of this.channels.values()) this.notify(channel);
        },
        () => undefined,
      );
    });
    subscriber.on('message', (name: string) => {
      const channel = this.channels.get(name);
      if (channel) this.notify(channel);
    });
  }

  /**
   * Calls `listener` whenever the user's result for this goods may have changed, from the moment
   * this resolves; the returned function stops it. 503 while the subscriber connection is down.
   */
  async watch(goodsId: number, userId: number, listener: () => void): Promise<() => void> {
    const subscriber = this.subscriber;
    if (!subscriber || !this.ready) {
      throw new UnavailableError('Result events are unavailable; try again shortly');
    }
    const name = resultChannel(goodsId, userId);
    let channel = this.channels.get(name);
    if (!channel) {
      channel = { listeners: new Set(), subscribed: subscriber.subscribe(name) };
      this.channels.set(name, channel);
    }
    const joined = channel;
    joined.listeners.add(listener);
    const unwatch = () => {
      if (!joined.listeners.delete(listener) || joined.listeners.size > 0) return;
      if (this.channels.get(name) !== joined) return;
      this.channels.delete(name);
      // On the same connection as any later SUBSCRIBE to it, so Redis sees them in order.
      subscriber.unsubscribe(name).catch(() => undefined);
    };
    try {
      await joined.subscribed;
    } catch (error) {
      unwatch();
      throw new UnavailableError('Result events are unavailable; try again shortly', error);
    }
    return unwatch;
  }

  /** Channels this instance listens on (one per user and goods streamed). */
  get channelCount(): number {
    return this.channels.size;
  }

  private notify(channel: Channel): void {
    for (const listener of channel.listeners) listener();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.subscriber?.quit().catch(() => this.subscriber?.disconnect());
  }
}
