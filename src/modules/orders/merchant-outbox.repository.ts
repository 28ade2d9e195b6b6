import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InjectConfig } from '../../config/config-namespace.js';
import { merchantConfig, type MerchantConfig } from '../../config/merchant.config.js';
import type { OrderStatus } from '../../infra/database/entities/order.entity.js';
import type { Tx } from '../../infra/database/transactions.service.js';

export const MERCHANT_EVENT_TYPES = [
  'order.created',
  'order.paid',
  'order.cancelled',
  'order.expired',
  'order.refund_required',
] as const;
export type MerchantEventType = (typeof MERCHANT_EVENT_TYPES)[number];

/** What an order event tells of its order (the contract's `data`). */
export interface OrderEventData {
  orderNo: string;
  goodsId: number;
  userId: number;
  quantity: number;
  status: OrderStatus;
}

/** The event as the merchant receives it (POST body, JSON). */
export interface MerchantEventBody {
  id: string;
  type: MerchantEventType;
  createdAt: string;
  data: OrderEventData;
}

/** The status an order is in once the event's change is made. */
const STATUS_OF: Record<MerchantEventType, OrderStatus> = {
  'order.created': 'PENDING_PAYMENT',
  'order.paid': 'PAID',
  'order.cancelled': 'CANCELLED',
  'order.expired': 'CANCELLED',
  'order.refund_required': 'REFUND_REQUIRED',
};

/**
 * The write side of the merchant's outbox (`seckill_merchant_event`): each order change appends
 * its event in the change's own transaction, so that an event exists exactly when its change
 * committed. Delivery is src/modules/merchant-events/'s. Nothing is written while
 * MERCHANT_WEBHOOK_URL is unset.
 */
@Injectable()
export class MerchantOutboxRepository {
  constructor(@InjectConfig(merchantConfig) private readonly merchant: MerchantConfig) {}

  get enabled(): boolean {
    return this.merchant.url !== null;
  }

  /** One statement for all the orders' events. */
  async append(
    tx: Tx,
    type: MerchantEventType,
    orders: Omit<OrderEventData, 'status'>[],
  ): Promise<void> {
    if (!this.enabled || orders.length === 0) return;
    const createdAt = new Date();
    const rows: string[] = [];
    const params: unknown[] = [];
    for (const order of orders) {
      const body: MerchantEventBody = {
        id: randomUUID(),
        type,
        createdAt: createdAt.toISOString(),
        data: {
          orderNo: order.orderNo,
          goodsId: order.goodsId,
          userId: order.userId,
          quantity: order.quantity,
          status: STATUS_OF[type],
        },
      };
      rows.push('(?, ?, ?, ?, ?, ?)');
      params.push(body.id, order.orderNo, order.goodsId, type, JSON.stringify(body), createdAt);
    }
    await tx.query(
      `INSERT INTO seckill_merchant_event (event_id, order_no, goods_id, type, body, created_at) VALUES ${rows.join(', ')}`,
      params,
    );
  }
}
