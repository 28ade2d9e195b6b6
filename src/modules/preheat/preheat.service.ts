import { Injectable, Logger } from '@nestjs/common';
import { GoodsService } from '../goods/goods.service.js';
import { OrdersService } from '../orders/orders.service.js';
import { StockService } from '../stock/stock.service.js';

export interface PreheatResult {
  goodsId: number;
  stock: number;
  loaded: boolean;
}

@Injectable()
export class PreheatService {
  private readonly logger = new Logger(PreheatService.name);

  constructor(
    private readonly goods: GoodsService,
    private readonly orders: OrdersService,
    private readonly stock: StockService,
  ) {}

  /**
   * Copies the sale into Redis. Idempotent: once Redis holds the sale's stock it is left alone
   * (only the window and limit are refreshed), so a live sale never has its sales reset.
   */
  async preheat(goodsId: number): Promise<PreheatResult> {
    const goods = await this.goods.findOrThrow(goodsId);
    const history = (await this.stock.isPreheated(goodsId))
      ? { buyers: [], cancelledOrderNos: [] }
      : await this.orders.history(goodsId);
    const result = await this.stock.preheat(
      goodsId,
      {
        totalStock: goods.totalStock,
        stock: goods.stock,
        startAt: goods.startAt,
        endAt: goods.endAt,
        perUserLimit: goods.perUserLimit,
      },
      history,
    );
    if (result.loaded) {
      this.logger.log(
        `preheated: goods=${goodsId} stock=${result.stock} buyers=${history.buyers.length}`,
      );
    }
    return { goodsId, stock: result.stock, loaded: result.loaded };
  }

  /** Preheats every sale that opens within `lookaheadMs` and has not ended. */
  async preheatUpcoming(lookaheadMs: number): Promise<PreheatResult[]> {
    const sales = await this.goods.startingBefore(new Date(Date.now() + lookaheadMs));
    const results: PreheatResult[] = [];
    for (const sale of sales) results.push(await this.preheat(sale.id));
    return results;
  }
}
