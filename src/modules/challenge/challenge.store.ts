import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import { saleKeys } from '../../infra/redis/seckill-keys.js';

/** The solved challenges redeemed so far, in Redis under the sale's hash tag. */
@Injectable()
export class ChallengeStore {
  constructor(@Inject(REDIS_CLIENT) private readonly redis: RedisClient) {}

  /**
   * Marks the challenge of this signature redeemed until `ttlMs` from now (when it would have
   * expired anyway): true the first time, false if it was redeemed before.
   */
  async redeemOnce(goodsId: number, signature: string, ttlMs: number): Promise<boolean> {
    const key = saleKeys(goodsId).challenge(signature);
    return (await this.redis.set(key, '1', 'PX', ttlMs, 'NX')) !== null;
  }
}
