import { Column, Entity, PrimaryColumn } from 'typeorm';

/** An order barrier kept in MySQL, which the Redis-down fallback opens (DatabaseBarrierService). */
@Entity({ name: 'seckill_fallback_barrier' })
export class FallbackBarrierEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ name: 'opened_at', type: 'datetime', precision: 3 })
  openedAt: Date;

  @Column({ name: 'expires_at', type: 'datetime', precision: 3 })
  expiresAt: Date;

  /** When a consumer received the barrier's message; null until then. */
  @Column({ name: 'delivered_at', type: 'datetime', precision: 3, nullable: true })
  deliveredAt: Date | null;
}
