import { Injectable } from '@nestjs/common';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import { queueRestoreKeys, type SaleKeys } from '../../infra/redis/seckill-keys.js';
import type { Admission } from '../../infra/database/entities/goods.entity.js';

/** Fields or members per command of a load: each command stays a modest size. */
const LOAD_CHUNK = 1_000;

/** The sale's load into Redis (lua/seckill-preheat.lua in one MULTI with its history), typed. */
@Injectable()
export class LoadScripts {
  constructor(private readonly lua: LuaScriptsService) {}

  /**
   * A queue sale's waiting room is no longer taken as its MySQL journal's (lua/queue-restore.lua
   * "drop", which keeps when): written back from MySQL before it is used again.
   */
  async dropQueueJournalMark(goodsId: number): Promise<void> {
    await this.lua.run('queueRestore', ...queueRestoreKeys(goodsId), 'drop', 'marked');
  }

  /**
   * Loads one bucket in one MULTI: its buyers and restocked order numbers (a rebuild's history,
   * none for a first preheat), then lua/seckill-preheat.lua. A Redis that restarts during a load
   * gets the whole bucket or none of it: never a stock without the buyers written into the
   * server before it (which a purchase would take for a sale loaded with none). A `refresh`
   * (the caller found the sale loaded, so brings no history) writes nothing to a bucket Redis
   * has lost since (`lost`).
   */
  async preheat(
    keys: SaleKeys,
    sale: {
      totalStock: number;
      stock: number;
      startAt: Date;
      endAt: Date;
      perUserLimit: number;
      /** Default `open`. */
      admission?: Admission;
    },
    history: { buyers: { userId: number; quantity: number }[]; restocked: string[] } = {
      buyers: [],
      restocked: [],
    },
    { refresh = false } = {},
  ): Promise<{ loaded: boolean; lost: boolean; stock: number }> {
    const load = this.lua.multi();
    for (let i = 0; i < history.buyers.length; i += LOAD_CHUNK) {
      const chunk = history.buyers.slice(i, i + LOAD_CHUNK);
      load.hset(keys.buyers, Object.fromEntries(chunk.map((b) => [String(b.userId), b.quantity])));
    }
    for (let i = 0; i < history.restocked.length; i += LOAD_CHUNK) {
      load.sadd(keys.restocked, ...history.restocked.slice(i, i + LOAD_CHUNK));
    }
    // Queued on the transaction (a chainable, not a promise): its reply comes with exec().
    this.lua.queue(
      load,
      'seckillPreheat',
      keys.stock,
      keys.meta,
      sale.totalStock,
      sale.stock,
      sale.startAt.getTime(),
      sale.endAt.getTime(),
      sale.perUserLimit,
      refresh ? 1 : 0,
      sale.admission ?? 'open',
    );
    const replies = (await load.exec()) ?? [];
    const failed = replies.find(([error]) => error !== null);
    if (failed || replies.length === 0) {
      throw failed?.[0] ?? new Error('the sale load was discarded (Redis lost the transaction)');
    }
    const [loaded, stock] = replies.at(-1)![1] as [number, number];
    return { loaded: loaded === 1, lost: loaded === -1, stock };
  }
}
