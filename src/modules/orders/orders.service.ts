import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { OrderEntity } from '../../infra/database/entities/order.entity.js';
import { DomainError } from '../../common/errors/domain-error.js';

/** Anything else cannot be an order number: answered 404 without a query. */
const ORDER_NO_SHAPE = /^[A-Za-z0-9]{1,32}$/;

export interface OrderView {
  orderNo: string;
  userId: number;
  goodsId: number;
  quantity: number;
  status: OrderEntity['status'];
  expireAt: string;
  createdAt: string;
}

export interface Viewer {
  userId: number;
  admin: boolean;
}

export function toOrderView(order: OrderEntity): OrderView {
  return {
    orderNo: order.orderNo,
    userId: order.userId,
    goodsId: order.goodsId,
    quantity: order.quantity,
    status: order.status,
    expireAt: order.expireAt.toISOString(),
    createdAt: order.createdAt.toISOString(),
  };
}

@Injectable()
export class OrdersService {
  constructor(@InjectRepository(OrderEntity) private readonly orders: Repository<OrderEntity>) {}

  /** Only the owner or an admin sees an order; anyone else learns only that it is not theirs. */
  async getForViewer(orderNo: string, viewer: Viewer): Promise<OrderView> {
    const order = ORDER_NO_SHAPE.test(orderNo)
      ? await this.orders.findOne({ where: { orderNo } })
      : null;
    if (!order) throw new DomainError('ORDER_NOT_FOUND', `Order ${orderNo} not found`);
    if (!viewer.admin && order.userId !== viewer.userId) {
      throw new DomainError('FORBIDDEN', 'This order belongs to another user');
    }
    return toOrderView(order);
  }

  findByRequestId(requestId: string): Promise<OrderEntity | null> {
    return this.orders.findOne({ where: { requestId } });
  }

  /** The user's most recent order of this goods, whatever its status. */
  latestForUser(goodsId: number, userId: number): Promise<OrderEntity | null> {
    return this.orders.findOne({ where: { goodsId, userId }, order: { id: 'DESC' } });
  }

  /** Users holding a not-cancelled order of this goods, with the quantity they hold. */
  async activeBuyers(goodsId: number): Promise<{ userId: number; quantity: number }[]> {
    const rows = await this.orders
      .createQueryBuilder('o')
      .select('o.user_id', 'userId')
      .addSelect('SUM(o.quantity)', 'quantity')
      .where('o.goods_id = :goodsId', { goodsId })
      .andWhere("o.status <> 'CANCELLED'")
      .groupBy('o.user_id')
      .getRawMany<{ userId: string; quantity: string }>();
    return rows.map((row) => ({ userId: Number(row.userId), quantity: Number(row.quantity) }));
  }
}
