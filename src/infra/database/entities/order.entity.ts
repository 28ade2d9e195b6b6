import {
  Column,
  CreateDateColumn,
  Entity,
  PrimaryGeneratedColumn,
  UpdateDateColumn,
} from 'typeorm';

/**
 * `REFUND_REQUIRED`: paid after its cancel, with no unit left to take again. Like a cancelled order
 * it holds no stock (it was given back at the cancel).
 */
export const ORDER_STATUSES = ['PENDING_PAYMENT', 'PAID', 'CANCELLED', 'REFUND_REQUIRED'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/** The statuses whose stock was given back: not active, the buyer may hold another order. */
export const STOCK_RETURNED: readonly OrderStatus[] = ['CANCELLED', 'REFUND_REQUIRED'];
export const holdsStock = (status: OrderStatus): boolean => !STOCK_RETURNED.includes(status);

const integer = {
  to: (value: number) => value,
  from: (value: string | number) => Number(value),
};

@Entity({ name: 'seckill_order' })
export class OrderEntity {
  @PrimaryGeneratedColumn({ type: 'bigint', unsigned: true })
  id: number;

  @Column({ name: 'order_no', type: 'varchar', length: 32 })
  orderNo: string;

  /** The purchase's server-made id: unique, so a redelivered message can never write twice. */
  @Column({ name: 'request_id', type: 'char', length: 36 })
  requestId: string;

  @Column({ name: 'user_id', type: 'bigint', unsigned: true, transformer: integer })
  userId: number;

  @Column({ name: 'goods_id', type: 'bigint', unsigned: true, transformer: integer })
  goodsId: number;

  @Column({ type: 'int', unsigned: true })
  quantity: number;

  @Column({ type: 'varchar', length: 16 })
  status: OrderStatus;

  @Column({ type: 'int', unsigned: true, default: 0 })
  version: number;

  @Column({ name: 'expire_at', type: 'datetime', precision: 3 })
  expireAt: Date;

  /** When a `payment.started` extended the deadline (once); null before. */
  @Column({ name: 'payment_grace_at', type: 'datetime', precision: 3, nullable: true })
  paymentGraceAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'datetime', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'datetime', precision: 3 })
  updatedAt: Date;
}
