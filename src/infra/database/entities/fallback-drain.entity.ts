import { Entity, PrimaryColumn } from 'typeorm';

/** A consumer session that drained a MySQL order barrier (DatabaseBarrierService). */
@Entity({ name: 'seckill_fallback_drain' })
export class FallbackDrainEntity {
  @PrimaryColumn({ name: 'barrier_id', type: 'varchar', length: 64 })
  barrierId: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  session: string;
}
