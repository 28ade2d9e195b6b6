import { Injectable } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { RedisLocksService, type PurchaseLock } from '../../infra/redis/redis-locks.service.js';
import type { SaleKeys } from '../../infra/redis/seckill-keys.js';

/** The per-(goods, user) purchase lock, held PURCHASE_LOCK_TTL_MS at most. */
@Injectable()
export class PurchaseLocksService {
  constructor(
    private readonly locks: RedisLocksService,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
  ) {}

  /** Null while another click of this buyer holds it. `home`: the buyer's home bucket's keys. */
  tryLock(home: SaleKeys, userId: number): Promise<PurchaseLock | null> {
    return this.locks.tryLockPurchase(home, userId, this.seckill.purchaseLockTtlMs);
  }
}
