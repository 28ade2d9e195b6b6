import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * A purchase given up after an unconfirmed publish, or by a consumer holding an exhausted copy of
 * its message, recorded in MySQL before its stock goes back (orders/voided-requests.service.ts):
 * its order can no longer be written, whatever Redis says.
 */
@Entity({ name: 'seckill_voided_request' })
export class VoidedRequestEntity {
  @PrimaryColumn({ name: 'request_id', type: 'char', length: 36 })
  requestId: string;

  @Column({ name: 'goods_id', type: 'bigint', unsigned: true })
  goodsId: number;

  @Index('idx_voided_request_voided_at')
  @Column({ name: 'voided_at', type: 'datetime', precision: 3 })
  voidedAt: Date;
}
