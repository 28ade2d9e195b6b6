import { Injectable } from '@nestjs/common';
import { OrderRepository } from '../orders/order.repository.js';

/** How long one answer is shared by every standing and stream of the goods on this instance. */
const MEMO_MS = 1_000;

/**
 * Whether a sold-out queue sale may still get units back: an unpaid order is left, whose cancel
 * or expiry would give its stock back to the people in line. Until none is, a SOLD_OUT standing
 * is "sold out for now" (not final) and the queue streams stay open. Asked of MySQL at most once
 * a second per goods and instance, only while the goods reads sold out.
 */
@Injectable()
export class ReturnsOutlookService {
  private readonly memo = new Map<number, { mayReturn: Promise<boolean>; until: number }>();

  constructor(private readonly orders: OrderRepository) {}

  mayReturn(goodsId: number): Promise<boolean> {
    const now = Date.now();
    const held = this.memo.get(goodsId);
    if (held && now < held.until) return held.mayReturn;
    for (const [id, entry] of this.memo) if (now >= entry.until) this.memo.delete(id);
    const mayReturn = this.orders.hasUnpaid(goodsId);
    this.memo.set(goodsId, { mayReturn, until: now + MEMO_MS });
    // A failed read is not kept: the next standing asks again.
    mayReturn.catch(() => {
      if (this.memo.get(goodsId)?.mayReturn === mayReturn) this.memo.delete(goodsId);
    });
    return mayReturn;
  }
}
