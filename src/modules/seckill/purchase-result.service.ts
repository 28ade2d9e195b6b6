import { Injectable } from '@nestjs/common';
import { UnavailableError } from '../../common/errors/domain-error.js';
import { GoodsService } from '../goods/goods.service.js';
import { OrdersService } from '../orders/orders.service.js';
import { PurchaseAvailabilityService } from '../availability/purchase-availability.service.js';
import { PurchaseLedgerStore } from '../sale-store/purchase-ledger.store.js';
import type { PurchaseResultView } from './purchase.types.js';

/** What became of a user's latest purchase of a goods (the result route). */
@Injectable()
export class PurchaseResultService {
  constructor(
    private readonly ledger: PurchaseLedgerStore,
    private readonly orders: OrdersService,
    private readonly goods: GoodsService,
    private readonly availability: PurchaseAvailabilityService,
  ) {}

  /**
   * Redis answers first; MySQL is the truth when Redis has no word (or only QUEUED for an order
   * the consumer has just committed). NONE only when neither store may still hear of one: not
   * while Redis is down, nor while the sale is rebuilt after a restart (Redis's record is gone,
   * and a purchase whose message is still in the queue is written before the rebuild ends).
   */
  async result(goodsId: number, userId: number): Promise<PurchaseResultView> {
    let redisDown = false;
    const live = await this.ledger.result(goodsId, userId).catch(() => {
      redisDown = true;
      return null;
    });
    if (live?.status === 'QUEUED') {
      const order = await this.orders.findByRequestId(live.requestId);
      return order
        ? { status: 'SUCCESS', requestId: live.requestId, orderNo: order.orderNo }
        : { status: 'QUEUED', requestId: live.requestId };
    }
    if (live) return live;
    const order = await this.orders.latestForUser(goodsId, userId);
    if (order) return { status: 'SUCCESS', requestId: order.requestId, orderNo: order.orderNo };
    await this.goods.findOrThrow(goodsId);
    // Without Redis a purchase still on its way cannot be told from none at all.
    if (redisDown) throw new UnavailableError('Redis is unavailable; try again shortly');
    if (this.availability.ticket(goodsId).rebuilding) {
      throw new UnavailableError(
        'This sale is being rebuilt after a Redis restart; try again shortly',
      );
    }
    return { status: 'NONE' };
  }
}
