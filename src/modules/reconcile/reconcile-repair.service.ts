import { Injectable, Logger } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error.js';
import { GoodsService } from '../goods/goods.service.js';
import { OrdersService } from '../orders/orders.service.js';
import { PreheatService } from '../preheat/preheat.service.js';
import { SaleStateLockService } from '../sale-store/sale-state-lock.service.js';
import { SaleRepairService } from '../sale-store/sale-repair.service.js';
import { ReconcileService, type RepairReport } from './reconcile.service.js';

/** The operator's repair of a sale's Redis side from MySQL (POST …/reconcile/repair). */
@Injectable()
export class ReconcileRepairService {
  private readonly logger = new Logger(ReconcileRepairService.name);

  constructor(
    private readonly reconcile: ReconcileService,
    private readonly saleLock: SaleStateLockService,
    private readonly goods: GoodsService,
    private readonly preheat: PreheatService,
    private readonly orders: OrdersService,
    private readonly store: SaleRepairService,
  ) {}

  /**
   * Rebuilds the sale's Redis stock and buyers from MySQL's active orders plus what is still in
   * flight (see lua/seckill-rebuild.lua: safe while the sale runs). A goods split over several
   * buckets answers 503 to its purchases for the moment its buckets are rebuilt
   * (SaleRepairService.rebuild). Under the goods' sale-state lock: 503 while a rebuild, a wipe or the
   * fallback's return of the sale holds it. What it found is read under the lock too, confirmed
   * as the reconcile job confirms it, so that the report (and the log line) tells drift that was
   * there from a reading caught between an order's two writes.
   */
  async repair(goodsId: number): Promise<RepairReport> {
    const outcome = await this.saleLock.hold(goodsId, 'repair', async (held) => {
      const goods = await this.goods.findOrThrow(goodsId);
      const found = await this.reconcile.confirmedReading(goodsId);
      // Makes sure the window and limit are in Redis (and the stock, if Redis lost the sale),
      // under the lock the rebuild below needs too: no wipe or rebuild runs in between.
      await this.preheat.preheatHeld(held);
      const since = await this.store.serverTimeMs(goodsId);
      const rebuilt = await this.orders.history(goodsId, (history) =>
        this.store.rebuild(
          goodsId,
          goods.totalStock,
          since,
          history.activeOrders,
          history.cancelledOrderNos,
        ),
      );
      return rebuilt ? { rebuilt, found } : undefined;
    });
    if (!outcome) throw new DomainError('NOT_PREHEATED', 'The sale could not be loaded into Redis');
    const { rebuilt, found } = outcome;
    const { report: before, settling } = found;
    const drifted = before.redisState === 'LOADED' && !before.consistent && !settling;
    const line = `redis rebuilt from mysql: goods=${goodsId} stock ${String(before.redisStock)} -> ${rebuilt.stock} buyers=${rebuilt.buyerCount}`;
    if (drifted) {
      this.logger.error(
        `${line}; it had drifted: redisDrift=${String(before.drift.redis)} dbDrift=${before.drift.db}`,
      );
    } else {
      this.logger.warn(line);
    }
    // The verdict before the repair no longer holds; the dashboard's next tick refreshes it.
    await this.reconcile.forgetVerdict(goodsId);
    return {
      goodsId,
      before,
      found: { drifted, settling },
      after: await this.reconcile.reconcile(goodsId),
    };
  }
}
