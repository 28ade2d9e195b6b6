import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { UnavailableError } from '../../common/errors/domain-error.js';
import { FaultInjectorService } from '../../config/fault-injector.service.js';
import { RedisLocksService } from '../../infra/redis/redis-locks.service.js';
import { MetricsService } from '../metrics/metrics.service.js';

/** Longer than a rebuild of a large sale takes (its history read and load), short if one dies. */
const SALE_STATE_LOCK_TTL_MS = 30_000;
const BUSY_RETRIES = 3;
const BUSY_RETRY_MS = 100;

/** The paths that wipe or load a sale's Redis keys, as the busy-lock metric names them. */
export type SaleStatePath =
  'preheat' | 'fallback-return' | 'repair' | 'survivor-wipe' | 'queue-restore';

declare const heldBrand: unique symbol;

/** Proof, for work that needs it, that its caller holds the goods' sale-state lock. */
export interface SaleStateHold {
  readonly goodsId: number;
  readonly [heldBrand]: true;
}

/**
 * The one per-goods lock held by every path that wipes or loads a sale's Redis keys: preheat and
 * rebuild (PreheatService), the fallback's return (FallbackReturnService), the repair (ReconcileRepairService)
 * and the survivor wipe after a restart (SurvivorWipeService). Each reads its premise (is the sale
 * loaded? is it still marked stale? is this wipe still the restart's?) after taking it: a premise
 * read before could be undone by another path's work in between. A lock still held after a few
 * short retries answers UNAVAILABLE (503, nothing changed), and the scheduled paths try again
 * later.
 */
@Injectable()
export class SaleStateLockService {
  private readonly logger = new Logger(SaleStateLockService.name);

  constructor(
    private readonly locks: RedisLocksService,
    private readonly faults: FaultInjectorService,
    private readonly metrics: MetricsService,
  ) {}

  async hold<T>(
    goodsId: number,
    path: SaleStatePath,
    work: (held: SaleStateHold) => Promise<T>,
  ): Promise<T> {
    await this.faults.pausePoint('before-sale-lock', { goodsId, path });
    let lock = await this.locks.tryLockJob(`sale-state:${goodsId}`, SALE_STATE_LOCK_TTL_MS);
    // Most holds last a few milliseconds (a preheat that finds the sale loaded, a rebuild that
    // finds its barrier not passed): an operator's preheat is not refused for one of those.
    for (let attempt = 1; !lock && attempt <= BUSY_RETRIES; attempt++) {
      await sleep(BUSY_RETRY_MS);
      lock = await this.locks.tryLockJob(`sale-state:${goodsId}`, SALE_STATE_LOCK_TTL_MS);
    }
    // Held all along: by a path under way, or by nobody, a lock Redis loaded from a snapshot at
    // a restart (or a replica kept at a failover), which would hold the sale's rebuild back for
    // the rest of its time to live.
    if (!lock && (await this.locks.dropStaleJobLock(`sale-state:${goodsId}`))) {
      this.logger.warn(
        `sale-state lock dropped: goods=${goodsId} this Redis server did not set it (a snapshot's or a replica's)`,
      );
      lock = await this.locks.tryLockJob(`sale-state:${goodsId}`, SALE_STATE_LOCK_TTL_MS);
    }
    if (!lock) {
      this.metrics.saleStateLockBusy.inc({ path });
      throw new UnavailableError(
        `Another rebuild, wipe or repair of goods ${goodsId} is under way; try again shortly`,
      );
    }
    try {
      return await work({ goodsId } as SaleStateHold);
    } finally {
      await lock.release();
    }
  }
}
