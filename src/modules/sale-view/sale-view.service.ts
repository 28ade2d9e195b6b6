import { Injectable, Logger } from '@nestjs/common';
import { hasWaitingRoom } from '../../infra/database/entities/goods.entity.js';
import type { GoodsViewDto } from '../goods/goods.dto.js';
import { admissionFields, GoodsService, statusOf } from '../goods/goods.service.js';
import { DrawJournalService } from '../queue-journal/draw-journal.service.js';
import { SaleReadsStore } from '../sale-store/sale-reads.store.js';

/**
 * A sale as buyers see it: the goods row (GoodsService, a second in memory) with the live
 * remaining stock from Redis. Apart from GoodsModule because it reads the sale's Redis state,
 * which sits above the goods table (SaleStoreModule reads a goods' bucket count from its row).
 */
@Injectable()
export class SaleViewService {
  private readonly logger = new Logger(SaleViewService.name);

  constructor(
    private readonly goods: GoodsService,
    private readonly sale: SaleReadsStore,
    private readonly draws: DrawJournalService,
  ) {}

  async view(goodsId: number): Promise<GoodsViewDto> {
    const goods = await this.goods.findCached(goodsId);
    const live = await this.sale.remaining(goodsId).catch((error: Error) => {
      // Reading the page must not fail with Redis: MySQL's stock is a fine approximation.
      this.logger.warn(`remaining from MySQL, Redis failed: goods=${goodsId} ${error.message}`);
      return null;
    });
    const remaining = live ?? goods.stock;
    // A queue or draw sale's commitment to the secret its order is drawn with, from the room's
    // opening (the secret is drawn then, before any join: GET /goods/:id/fairness).
    const committed =
      hasWaitingRoom(goods) && goods.queueOpensAt && Date.now() >= goods.queueOpensAt.getTime()
        ? await this.draws.commitment(goods.id).then(
            (seedCommitment) => ({ seedCommitment }),
            (error: Error) => {
              this.logger.warn(`seed commitment not read: goods=${goodsId} ${error.message}`);
              return {};
            },
          )
        : {};
    return {
      id: goods.id,
      name: goods.name,
      price: Number(goods.price),
      totalStock: goods.totalStock,
      remaining,
      startAt: goods.startAt.toISOString(),
      endAt: goods.endAt.toISOString(),
      perUserLimit: goods.perUserLimit,
      stockShards: goods.stockShards,
      ...admissionFields(goods),
      ...committed,
      status: statusOf(goods, remaining, new Date()),
    };
  }
}
