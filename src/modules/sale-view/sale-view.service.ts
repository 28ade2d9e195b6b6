import { Injectable, Logger } from '@nestjs/common';
import type { GoodsViewDto } from '../goods/goods.dto.js';
import { admissionFields, GoodsService, statusOf } from '../goods/goods.service.js';
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
  ) {}

  async view(goodsId: number): Promise<GoodsViewDto> {
    const goods = await this.goods.findCached(goodsId);
    const live = await this.sale.remaining(goodsId).catch((error: Error) => {
      // Reading the page must not fail with Redis: MySQL's stock is a fine approximation.
      this.logger.warn(`remaining from MySQL, Redis failed: goods=${goodsId} ${error.message}`);
      return null;
    });
    const remaining = live ?? goods.stock;
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
      status: statusOf(goods, remaining, new Date()),
    };
  }
}
