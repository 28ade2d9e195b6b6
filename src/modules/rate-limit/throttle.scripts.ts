import { Injectable } from '@nestjs/common';
import {
  LuaScriptsService,
  MAX_THROTTLE_BUDGETS,
  type ThrottleCommand,
} from '../../infra/redis/lua-scripts.service.js';
import { keySlot } from '../../infra/redis/redis-client.js';
import type { throttleKeys } from '../../infra/redis/seckill-keys.js';

/** One rate-limit budget a request spends: its two keys and its window, limit and block. */
export interface ThrottleBudget {
  keys: ReturnType<typeof throttleKeys>;
  windowMs: number;
  limit: number;
  blockMs: number;
}

export interface ThrottleVerdict {
  /** The index of the budget that refused the request, or -1 when every one let it through. */
  refused: number;
  msToBlockEnd: number;
  /** The last budget checked's count and window (the refusing one, or the last). */
  totalHits: number;
  msToWindowEnd: number;
}

function throttleCommand(budgets: number): ThrottleCommand {
  if (budgets < 1 || budgets > MAX_THROTTLE_BUDGETS) {
    throw new Error(
      `a request spends 1 to ${MAX_THROTTLE_BUDGETS} rate-limit budgets, not ${budgets}`,
    );
  }
  return `throttleHits${budgets}`;
}

/** The rate limits' scripts (lua/throttle-hits.lua, lua/autoban-count.lua), typed. */
@Injectable()
export class ThrottleScripts {
  constructor(private readonly lua: LuaScriptsService) {}

  /**
   * Spends one request from each budget in order; see lua/throttle-hits.lua. On one Redis that
   * is one call. On a cluster a script may only touch keys of one slot, and a request's budgets
   * (per user, per IP, global) are in different slots: the budgets are grouped by slot, one call
   * per group, the groups concurrently, and the verdict is the first refusal in the budgets'
   * order. Within a slot the walk still stops at the first refusal; across slots it cannot
   * without a round trip per slot, so a request refused by one budget still spends the other
   * slots' budgets (a user hammering past its own limit also counts against its address's and
   * the global budget; the answer is the same 429).
   */
  async throttleHits(budgets: readonly ThrottleBudget[]): Promise<ThrottleVerdict> {
    if (!this.lua.onCluster) return this.throttleGroup(budgets);
    const groups = new Map<number, number[]>();
    budgets.forEach(({ keys }, index) => {
      const slot = keySlot(keys.hits);
      const group = groups.get(slot);
      if (group) group.push(index);
      else groups.set(slot, [index]);
    });
    if (groups.size === 1) return this.throttleGroup(budgets);
    const verdicts = await Promise.all(
      [...groups.values()].map(async (indexes) => {
        const verdict = await this.throttleGroup(indexes.map((index) => budgets[index]));
        return {
          ...verdict,
          refused: verdict.refused < 0 ? -1 : indexes[verdict.refused],
          last: indexes[indexes.length - 1],
        };
      }),
    );
    const refusals = verdicts.filter((verdict) => verdict.refused >= 0);
    const chosen =
      refusals.length > 0
        ? refusals.reduce((first, verdict) => (verdict.refused < first.refused ? verdict : first))
        : verdicts.find((verdict) => verdict.last === budgets.length - 1)!;
    const { refused, msToBlockEnd, totalHits, msToWindowEnd } = chosen;
    return { refused, msToBlockEnd, totalHits, msToWindowEnd };
  }

  /** One throttle-hits call: budgets whose keys share a slot (any budgets on one Redis). */
  private async throttleGroup(budgets: readonly ThrottleBudget[]): Promise<ThrottleVerdict> {
    const args: (string | number)[] = [];
    for (const { keys } of budgets) args.push(keys.hits, keys.block);
    for (const { windowMs, limit, blockMs } of budgets) args.push(windowMs, limit, blockMs);
    const [refused, msToBlockEnd, totalHits, msToWindowEnd] = (await this.lua.run(
      throttleCommand(budgets.length),
      ...args,
    )) as [number, number, number, number];
    return { refused: refused - 1, msToBlockEnd, totalHits, msToWindowEnd };
  }

  /** See lua/autoban-count.lua: the client's throttled requests in the window, this one included. */
  async autobanCount(counterKey: string, windowMs: number): Promise<number> {
    return (await this.lua.run('autobanCount', counterKey, windowMs)) as number;
  }
}
