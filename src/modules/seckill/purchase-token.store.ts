import { Inject, Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import { saleKeys } from '../../infra/redis/seckill-keys.js';

/** What lua/purchase-token-consume.lua leaves in a spent token's key. */
export const USED = 'used';

/** lua/purchase-token-consume.lua's answers. */
export enum TokenConsumeCode {
  Unknown = 0,
  Consumed = 1,
  OtherUser = 2,
  Used = 3,
}

/** A token is kept by its SHA-256 only: what Redis holds cannot be spent by whoever reads it. */
const digest = (token: string) => createHash('sha256').update(token).digest('hex');

/** The purchase tokens handed out, in Redis under the sale's hash tag: token -> its owner. */
@Injectable()
export class PurchaseTokenStore {
  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly lua: LuaScriptsService,
  ) {}

  async save(goodsId: number, token: string, userId: number, ttlMs: number): Promise<void> {
    await this.redis.set(
      saleKeys(goodsId).purchaseToken(digest(token)),
      String(userId),
      'PX',
      ttlMs,
    );
  }

  /** The owner's user id, `USED` once spent, or null (unknown or expired). */
  ownerOf(goodsId: number, token: string): Promise<string | null> {
    return this.redis.get(saleKeys(goodsId).purchaseToken(digest(token)));
  }

  /** Spends the token atomically (lua/purchase-token-consume.lua). */
  async spend(goodsId: number, token: string, userId: number): Promise<TokenConsumeCode> {
    const key = saleKeys(goodsId).purchaseToken(digest(token));
    return (await this.lua.run('purchaseTokenConsume', key, userId)) as TokenConsumeCode;
  }
}
