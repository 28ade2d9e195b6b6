import { Injectable } from '@nestjs/common';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import type { SaleKeys } from '../../infra/redis/seckill-keys.js';

export enum LoanCode {
  NotPreheated = -1,
  Empty = 0,
  Lent = 1,
  Frozen = 2,
}

/** Stock a bucket lent and that is not settled yet (see lua/seckill-loan.lua). */
export interface OpenLoan {
  requestId: string;
  quantity: number;
  home: number;
}

/** The scripts of loans between stock buckets (lua/seckill-loan.lua, -loan-settle.lua), typed. */
@Injectable()
export class LoanScripts {
  constructor(private readonly lua: LuaScriptsService) {}

  /** Takes stock from this bucket for a purchase recorded in `home` (lua/seckill-loan.lua). */
  async loan(
    keys: SaleKeys,
    requestId: string,
    quantity: number,
    userId: number,
    home: number,
  ): Promise<{ code: LoanCode; remaining: number }> {
    const [code, remaining] = (await this.lua.run(
      'seckillLoan',
      keys.stock,
      keys.loans,
      keys.meta,
      keys.voided,
      requestId,
      quantity,
      userId,
      home,
    )) as [number, number];
    return { code, remaining };
  }

  /** Closes a loan, giving its stock back or not; the quantity closed now, 0 if closed before. */
  async settleLoan(keys: SaleKeys, requestId: string, giveBack: boolean): Promise<number> {
    return (await this.lua.run(
      'seckillLoanSettle',
      keys.stock,
      keys.loans,
      keys.voided,
      requestId,
      giveBack ? '1' : '0',
    )) as number;
  }

  /** The clock loans are stamped with: the server holding this bucket (on a cluster, its slot's master). */
  serverTimeMs(keys: SaleKeys): Promise<number> {
    return this.lua.serverTimeMs(keys.stock);
  }
}
