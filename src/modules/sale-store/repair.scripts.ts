import { Inject, Injectable } from '@nestjs/common';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import type { SaleKeys } from '../../infra/redis/seckill-keys.js';
import type { OpenLoan } from './loan.scripts.js';

export interface RedisSaleSnapshot {
  /** null when Redis does not hold the sale */
  stock: number | null;
  buyersQuantity: number;
  inFlightQuantity: number;
  inFlightCount: number;
  loans: OpenLoan[];
}

export interface ActiveOrderRef {
  requestId: string;
  userId: number;
  quantity: number;
  orderNo: string;
}

/**
 * The reconcile's repair scripts (lua/seckill-snapshot, -rebuild, -freeze.lua), typed: the
 * snapshot it compares with MySQL, the rebuild from MySQL, and the freeze of a goods' buckets;
 * and the two plain reads a repair makes of one bucket (restocked orders, recorded loans).
 */
@Injectable()
export class RepairScripts {
  constructor(
    private readonly lua: LuaScriptsService,
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
  ) {}

  /** For each order number, whether this bucket's restocked set holds it. */
  async restockedAmong(keys: SaleKeys, orderNos: string[]): Promise<boolean[]> {
    if (orderNos.length === 0) return [];
    const flags = await this.redis.smismember(keys.restocked, ...orderNos);
    return flags.map((flag) => flag === 1);
  }

  /** Whether the loan of `requestId` is recorded in this (its home) bucket. */
  async loanRecorded(keys: SaleKeys, requestId: string): Promise<boolean> {
    return (await this.redis.hexists(keys.borrowed, requestId)) === 1;
  }

  /**
   * A repair's freeze of one bucket (lua/seckill-freeze.lua): `freeze` (for `lapseMs`, false
   * when another repair's freeze is in force), `held` (still this token's, without a break),
   * `thaw` (cleared, when it was this token's).
   */
  async freeze(
    keys: SaleKeys,
    op: 'freeze' | 'held' | 'thaw',
    token: string,
    lapseMs = 0,
  ): Promise<boolean> {
    return (await this.lua.run('seckillFreeze', keys.meta, op, token, lapseMs)) === 1;
  }

  async snapshot(keys: SaleKeys): Promise<RedisSaleSnapshot> {
    const [stock, buyersQuantity, inFlightQuantity, inFlightCount, lent, held] =
      (await this.lua.run(
        'seckillSnapshot',
        keys.stock,
        keys.buyers,
        keys.inflight,
        keys.loans,
        keys.meta,
      )) as [number, number, number, number, (string | number)[], number];
    const loans: OpenLoan[] = [];
    for (let i = 0; i < lent.length; i += 3) {
      loans.push({
        requestId: String(lent[i]),
        quantity: Number(lent[i + 1]),
        home: Number(lent[i + 2]),
      });
    }
    return {
      stock: held === 1 ? stock : null,
      buyersQuantity,
      inFlightQuantity,
      inFlightCount,
      loans,
    };
  }

  /**
   * Returns null when the sale is not preheated (no meta in Redis). `dryRun`: only counts what
   * is used (stock 0 in the answer), writes nothing.
   */
  async rebuild(
    keys: SaleKeys,
    totalStock: number,
    completedSince: number,
    activeOrders: ActiveOrderRef[],
    cancelledOrderNos: string[] = [],
    dryRun = false,
  ): Promise<{ stock: number; usedQuantity: number; buyerCount: number } | null> {
    const [stock, usedQuantity, buyerCount] = (await this.lua.run(
      'seckillRebuild',
      keys.stock,
      keys.buyers,
      keys.inflight,
      keys.completed,
      keys.meta,
      keys.restocked,
      keys.loans,
      keys.retaken,
      totalStock,
      completedSince,
      activeOrders.length,
      dryRun ? '1' : '0',
      ...activeOrders.flatMap((order) => [
        order.requestId,
        order.userId,
        order.quantity,
        order.orderNo,
      ]),
      ...cancelledOrderNos,
    )) as [number, number, number];
    return stock < 0 ? null : { stock, usedQuantity, buyerCount };
  }
}
