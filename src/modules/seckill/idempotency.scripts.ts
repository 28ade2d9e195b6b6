import { Injectable } from '@nestjs/common';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';

/** The Idempotency-Key's reservation and stored answer in Redis (lua/idempotency-*.lua), typed. */
@Injectable()
export class IdempotencyScripts {
  constructor(private readonly lua: LuaScriptsService) {}

  /**
   * lua/idempotency-reserve.lua: null when reserved for this attempt, else the JSON the key
   * holds.
   */
  async reserve(
    key: string,
    goodsId: number,
    quantity: number,
    reservationId: string,
    reservationTtlMs: number,
  ): Promise<string | null> {
    const [reserved, stored] = (await this.lua.run(
      'idempotencyReserve',
      key,
      goodsId,
      reservationId,
      reservationTtlMs,
      quantity,
    )) as [number, string?];
    return reserved === 1 ? null : (stored ?? null);
  }

  /**
   * lua/idempotency-settle.lua: stores `answer` (or frees the key when it is null); false if the
   * reservation had expired.
   */
  async settle(
    key: string,
    reservationId: string,
    answer: string | null,
    ttlMs: number,
  ): Promise<boolean> {
    return (await this.lua.run('idempotencySettle', key, reservationId, answer ?? '', ttlMs)) === 1;
  }
}
