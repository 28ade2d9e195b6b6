import { Injectable } from '@nestjs/common';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import { saleKeys } from '../../infra/redis/seckill-keys.js';

/** A sale's card as lua/dashboard-sale.lua reads it in one call, typed. */
export interface SaleCardRead {
  /** -1 when Redis does not hold the sale. */
  stock: number;
  inFlight: number;
  inFlightPurchases: number;
  /** The stored verdict's JSON, or '' when none. */
  rawVerdict: string;
  /** This instance took the verdict's refresh claim. */
  claimed: boolean;
  /** Per second of the window, its flat {outcome, count, …} list. */
  seconds: string[][];
}

@Injectable()
export class DashboardScripts {
  constructor(private readonly lua: LuaScriptsService) {}

  /** The sale's goods-wide keys and the rate seconds `start` to `start + count - 1`. */
  async sale(
    goodsId: number,
    start: number,
    count: number,
    verdictRefreshMs: number,
  ): Promise<SaleCardRead> {
    const keys = saleKeys(goodsId);
    const rateKeys = Array.from({ length: count }, (_, i) => keys.rate(start + i));
    const [stock, inFlight, inFlightPurchases, rawVerdict, claimed, ...seconds] =
      (await this.lua.run(
        'dashboardSale',
        5 + rateKeys.length,
        keys.stock,
        keys.meta,
        keys.inflight,
        keys.verdict,
        keys.verdictClaim,
        ...rateKeys,
        verdictRefreshMs,
      )) as [number, number, number, string, number, ...string[][]];
    return { stock, inFlight, inFlightPurchases, rawVerdict, claimed: claimed === 1, seconds };
  }
}
