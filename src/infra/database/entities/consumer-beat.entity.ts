import { Column, Entity, PrimaryColumn } from 'typeorm';

/** An order consumer session alive in MySQL's registry, until its beat expires (DatabaseBarrierService). */
@Entity({ name: 'seckill_consumer_beat' })
export class ConsumerBeatEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  session: string;

  @Column({ name: 'expires_at', type: 'datetime', precision: 3 })
  expiresAt: Date;
}
