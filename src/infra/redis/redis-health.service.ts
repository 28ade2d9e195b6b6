import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from './redis-client.js';
import { REDIS_CLIENT } from './redis.constants.js';

/** The readiness probe's question to Redis: does it answer (on a cluster, the node asked). */
@Injectable()
export class RedisHealthService {
  constructor(@Inject(REDIS_CLIENT) private readonly redis: RedisClient) {}

  async ping(): Promise<void> {
    await this.redis.ping();
  }
}
