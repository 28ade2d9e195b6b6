import { Inject, Injectable } from '@nestjs/common';
import { scanKeys, type RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import {
  ActiveOrderRef,
  CompletedOrder,
  DeductCode,
  ReleaseCode,
  RestockCode,
  SeckillScripts,
} from '../../infra/redis/seckill-scripts.js';
import { SALES_INDEX_KEY, saleKeys } from '../../infra/redis/seckill-keys.js';
import { SoldOutMemo } from './sold-out-memo.js';

export { DeductCode, ReleaseCode, RestockCode };
export type { ActiveOrderRef, CompletedOrder };

export interface PurchaseResult {
  status: 'QUEUED' | 'SUCCESS' | 'FAILED';
  requestId: string;
  orderNo?: string;
  reason?: string;
}

export interface SaleSnapshot {
  totalStock: number;
  startAt: Date;
  endAt: Date;
  perUserLimit: number;
  stock: number;
}

/** How long a released request id is remembered, so that its late message is dropped. */
const VOIDED_RETENTION_MS = 24 * 60 * 60 * 1000;

/** The sale's live state in Redis: stock, buyers, in-flight purchases, results. */
@Injectable()
export class StockService {
  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly scripts: SeckillScripts,
    private readonly soldOut: SoldOutMemo,
  ) {}

  async deduct(
    goodsId: number,
    userId: number,
    quantity: number,
    requestId: string,
    message: string,
  ) {
    const result = await this.scripts.deduct(
      saleKeys(goodsId),
      userId,
      quantity,
      requestId,
      message,
    );
    if (result.code === DeductCode.SoldOut && result.remaining === 0) {
      this.soldOut.markSoldOut(goodsId);
    }
    return result;
  }

  /**
   * Gives an accepted purchase back unless a consumer already owns it (`force` skips that) or it
   * is an order already (told by the user's result, when `userId` is given).
   */
  async release(
    goodsId: number,
    requestId: string,
    reason: string,
    force = false,
    userId?: number,
  ) {
    const code = await this.scripts.release(saleKeys(goodsId), requestId, force, reason, userId);
    if (code === ReleaseCode.Released) await this.stockBack(goodsId);
    return code;
  }

  claim(goodsId: number, requestIds: string[]) {
    return this.scripts.claim(saleKeys(goodsId), requestIds);
  }

  complete(goodsId: number, orders: CompletedOrder[]) {
    return this.scripts.complete(saleKeys(goodsId), orders);
  }

  /**
   * Loads the sale unless Redis already holds its stock. When MySQL already has orders (Redis
   * lost the sale), their buyers and the cancelled orders' numbers are written before the stock
   * key makes the sale purchasable again, so no buyer buys twice and no cancellation is
   * restocked twice.
   */
  async preheat(
    goodsId: number,
    sale: SaleSnapshot,
    history: { buyers: { userId: number; quantity: number }[]; cancelledOrderNos: string[] },
  ): Promise<{ loaded: boolean; stock: number }> {
    const keys = saleKeys(goodsId);
    const hasHistory = history.buyers.length > 0 || history.cancelledOrderNos.length > 0;
    if (hasHistory && !(await this.isPreheated(goodsId))) {
      for (let i = 0; i < history.buyers.length; i += 1_000) {
        const chunk = history.buyers.slice(i, i + 1_000);
        await this.redis.hset(
          keys.buyers,
          Object.fromEntries(chunk.map((buyer) => [String(buyer.userId), buyer.quantity])),
        );
      }
      for (let i = 0; i < history.cancelledOrderNos.length; i += 1_000) {
        await this.redis.sadd(keys.restocked, ...history.cancelledOrderNos.slice(i, i + 1_000));
      }
    }
    const result = await this.scripts.preheat(keys, sale);
    await this.redis.sadd(SALES_INDEX_KEY, String(goodsId));
    // The preheat job runs on every open sale each interval; only a load puts stock in.
    if (result.loaded) await this.stockBack(goodsId);
    return result;
  }

  async isPreheated(goodsId: number): Promise<boolean> {
    return (await this.redis.exists(saleKeys(goodsId).stock)) === 1;
  }

  /** Gives a cancelled order's stock back, once per order number. */
  async restock(goodsId: number, orderNo: string, userId: number, quantity: number) {
    const code = await this.scripts.restock(saleKeys(goodsId), orderNo, userId, quantity);
    if (code === RestockCode.Restocked) await this.stockBack(goodsId);
    return code;
  }

  /** Which of these cancelled orders Redis has not given back yet. */
  async notYetRestocked(goodsId: number, orderNos: string[]): Promise<Set<string>> {
    const pending = new Set<string>();
    for (let i = 0; i < orderNos.length; i += 1_000) {
      const chunk = orderNos.slice(i, i + 1_000);
      const flags = await this.redis.smismember(saleKeys(goodsId).restocked, ...chunk);
      chunk.forEach((orderNo, index) => flags[index] === 0 && pending.add(orderNo));
    }
    return pending;
  }

  snapshot(goodsId: number) {
    return this.scripts.snapshot(saleKeys(goodsId));
  }

  /** `completedSince`: serverTimeMs(goodsId) read before MySQL's active orders were. */
  async rebuild(
    goodsId: number,
    totalStock: number,
    completedSince: number,
    activeOrders: ActiveOrderRef[],
    cancelledOrderNos: string[],
  ) {
    const rebuilt = await this.scripts.rebuild(
      saleKeys(goodsId),
      totalStock,
      completedSince,
      activeOrders,
      cancelledOrderNos,
    );
    await this.stockBack(goodsId);
    return rebuilt;
  }

  /**
   * Stock may be back: every instance drops its sold-out memo. Best effort, after the stock is
   * back for real: a lost announcement only keeps the memo until it lapses (SOLD_OUT_MEMO_MS).
   */
  private async stockBack(goodsId: number): Promise<void> {
    await this.soldOut.announceStockBack(goodsId).catch(() => undefined);
  }

  /**
   * The clock (epoch ms) the Lua scripts stamp this sale's records with: that of the server
   * holding the sale (on a cluster, the master of its slot; masters' clocks may differ).
   */
  serverTimeMs(goodsId: number): Promise<number> {
    return this.scripts.serverTimeMs(saleKeys(goodsId).stock);
  }

  /** The sale's end as Redis holds it (epoch ms), or null when it is not preheated. */
  async saleEndAt(goodsId: number): Promise<number | null> {
    const value = await this.redis.hget(saleKeys(goodsId).meta, 'endAt');
    return value === null ? null : Number(value);
  }

  /** Remaining stock in Redis, or null when the sale is not preheated. */
  async remaining(goodsId: number): Promise<number | null> {
    const value = await this.redis.get(saleKeys(goodsId).stock);
    return value === null ? null : Number(value);
  }

  async result(goodsId: number, userId: number): Promise<PurchaseResult | null> {
    const raw = await this.redis.hget(saleKeys(goodsId).results, String(userId));
    return raw === null ? null : (JSON.parse(raw) as PurchaseResult);
  }

  /**
   * Drops everything Redis holds for a sale that is over. Refused (false) while purchases are
   * still on their way to MySQL: their bookkeeping must outlive them.
   */
  async evict(goodsId: number): Promise<boolean> {
    const keys = saleKeys(goodsId);
    if ((await this.redis.hlen(keys.inflight)) > 0) return false;
    const names = Object.values(keys).filter((key): key is string => typeof key === 'string');
    await this.redis.del(...names);
    await this.redis.srem(SALES_INDEX_KEY, String(goodsId));
    return true;
  }

  /**
   * After a Redis restart or failover: true for the one instance that gets to wipe the sales
   * this Redis holds (whatever survived is a snapshot older than the truth); false for the others
   * while it is at it, and once it is done. The claim is a lease: if its holder dies mid-wipe, the
   * claim lapses and another instance wipes.
   */
  async claimRecovery(marker: string, leaseMs: number): Promise<boolean> {
    return (await this.redis.set(marker, 'wiping', 'PX', leaseMs, 'NX')) === 'OK';
  }

  /** The survivors of this Redis server are wiped: sales may be rebuilt and sold again. */
  async markRecovered(marker: string): Promise<void> {
    await this.redis.set(marker, 'wiped', 'EX', 86_400);
  }

  /** `marker`: recoveryKey() of the restart. */
  async isRecovered(marker: string): Promise<boolean> {
    return (await this.redis.get(marker)) === 'wiped';
  }

  /**
   * Lists again, in the index of preheated sales, every sale some Redis server holds (by its
   * meta key, found with SCAN on every master): the index was lost with the server that held it.
   */
  async reindexSales(): Promise<void> {
    const ids = (await scanKeys(this.redis, 'seckill:{*}:meta'))
      .map((key) => /^seckill:\{(\d+)\}:meta$/.exec(key)?.[1])
      .filter((id): id is string => id !== undefined);
    for (let i = 0; i < ids.length; i += 1_000) {
      await this.redis.sadd(SALES_INDEX_KEY, ...ids.slice(i, i + 1_000));
    }
  }

  /** Drops a sale's keys unconditionally (they are about to be rebuilt from MySQL). */
  async forget(goodsId: number): Promise<void> {
    const names = Object.values(saleKeys(goodsId)).filter(
      (key): key is string => typeof key === 'string',
    );
    await this.redis.del(...names);
  }

  /** Goods ids that were ever preheated on this Redis (the sweeper walks these). */
  async preheatedSales(): Promise<number[]> {
    const members = await this.redis.smembers(SALES_INDEX_KEY);
    return members.map(Number).filter((id) => Number.isSafeInteger(id) && id > 0);
  }

  /** Accepted purchases whose publish was not confirmed before `olderThan` (epoch ms). */
  async staleOutbox(
    goodsId: number,
    olderThan: number,
    limit: number,
  ): Promise<{ requestId: string; message: string | null }[]> {
    const keys = saleKeys(goodsId);
    const requestIds = await this.redis.zrangebyscore(keys.outbox, 0, olderThan, 'LIMIT', 0, limit);
    if (requestIds.length === 0) return [];
    const messages = await this.redis.hmget(keys.inflight, ...requestIds);
    return requestIds.map((requestId, index) => ({ requestId, message: messages[index] }));
  }

  /** The broker confirmed the message: the sweeper must not publish it again. */
  async markPublished(goodsId: number, requestIds: string[]): Promise<void> {
    if (requestIds.length === 0) return;
    await this.redis.zrem(saleKeys(goodsId).outbox, ...requestIds);
  }

  async forgetOldVoided(goodsId: number, now: number): Promise<void> {
    await this.redis.zremrangebyscore(saleKeys(goodsId).voided, 0, now - VOIDED_RETENTION_MS);
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }
}
