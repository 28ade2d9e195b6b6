import {
  Column,
  CreateDateColumn,
  Entity,
  PrimaryGeneratedColumn,
  UpdateDateColumn,
} from 'typeorm';

export const ORDER_STATUSES = ['PENDING_PAYMENT', 'PAID', 'CANCELLED'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

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

  @CreateDateColumn({ name: 'created_at', type: 'datetime', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'datetime', precision: 3 })
  updatedAt: Date;
}
