import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { InjectConfig } from '../../config/app-config.js';
import type { AppConfig } from '../../config/env.validation.js';
import { REDIS_CLIENT } from './redis.constants.js';

/**
 * Notices when the Redis server behind the client is a new one (its `run_id` changed): a
 * restart or a failover, after which the sales it held may be gone (Redis here keeps nothing
 * on disk) or older than the truth.
 */
@Injectable()
export class RedisWatchdog implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RedisWatchdog.name);
  private runId: string | null = null;
  /** The server behind the current connection has been identified since it connected. */
  private identified = false;
  /** Counts dropped connections, so that a reply from before a drop identifies nothing. */
  private drops = 0;
  private timer?: NodeJS.Timeout;
  private readonly listeners: ((previous: string, current: string) => void)[] = [];

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: Redis,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    // Between a reconnect and the first run_id read, the server may be a new one holding an old
    // snapshot: nothing may be sold against it until it is identified.
    this.redis.on('close', () => {
      this.drops++;
      this.identified = false;
    });
    this.redis.on('ready', () => void this.check());
    this.timer = setInterval(() => void this.check(), this.config.redisWatchIntervalMs);
    this.timer.unref();
    void this.check();
  }

  /**
   * False from the moment the connection drops until the server it reconnected to is known to be
   * the same one (or its restart has been announced to the listeners).
   */
  get identifiedSinceConnect(): boolean {
    return this.identified;
  }

  onRestart(listener: (previous: string, current: string) => void): void {
    this.listeners.push(listener);
  }

  /** Reads the server's run_id; tells the listeners when it is not the one seen before. */
  async check(): Promise<void> {
    const drops = this.drops;
    let current: string | undefined;
    try {
      const info = await this.redis.info('server');
      current = /run_id:(\w+)/.exec(info)?.[1];
    } catch {
      return; // down: nothing to compare yet; the purchase path answers 503 meanwhile
    }
    if (!current) return;
    const previous = this.runId;
    this.runId = current;
    if (previous !== null && previous !== current) {
      this.logger.error(`redis server changed: run_id ${previous} -> ${current}`);
      for (const listener of this.listeners) listener(previous, current);
    }
    if (drops === this.drops) this.identified = true;
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
