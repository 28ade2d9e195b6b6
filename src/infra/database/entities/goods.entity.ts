import {
  Column,
  CreateDateColumn,
  Entity,
  PrimaryGeneratedColumn,
  UpdateDateColumn,
} from 'typeorm';

export const ADMISSIONS = ['open', 'queue', 'draw'] as const;
export type Admission = (typeof ADMISSIONS)[number];

/**
 * A sale whose buyers go through a waiting room (modules/waiting-room/): `queue` (admitted in a
 * drawn order, paced) or `draw` (entries ranked by a draw; the first hold purchase rights). Only
 * the buyers it let in may buy, and never without Redis, where it lives.
 */
export function hasWaitingRoom(goods: { admission: string }): boolean {
  return goods.admission === 'queue' || goods.admission === 'draw';
}

@Entity({ name: 'seckill_goods' })
export class GoodsEntity {
  @PrimaryGeneratedColumn({ type: 'bigint', unsigned: true })
  id: number;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  /** DECIMAL arrives as a string from mysql2; kept as a string so no cent is lost to floats. */
  @Column({ type: 'decimal', precision: 12, scale: 2 })
  price: string;

  @Column({ name: 'total_stock', type: 'int', unsigned: true })
  totalStock: number;

  /** MySQL's authoritative remaining stock; only changed by version-checked UPDATEs. */
  @Column({ type: 'int', unsigned: true })
  stock: number;

  @Column({ type: 'int', unsigned: true, default: 0 })
  version: number;

  @Column({ name: 'start_at', type: 'datetime', precision: 3 })
  startAt: Date;

  @Column({ name: 'end_at', type: 'datetime', precision: 3 })
  endAt: Date;

  @Column({ name: 'per_user_limit', type: 'int', unsigned: true, default: 1 })
  perUserLimit: number;

  /** Redis buckets the stock is split over (see common/stock-buckets.ts); fixed at creation. */
  @Column({ name: 'stock_shards', type: 'tinyint', unsigned: true, default: 1 })
  stockShards: number;

  /**
   * `open` (the fastest request wins), `queue` (the waiting room admits) or `draw` (a draw among
   * the entries hands out purchase rights): modules/waiting-room/.
   */
  @Column({ type: 'varchar', length: 8, default: 'open' })
  admission: Admission;

  /** A `queue` sale: when joining starts (before startAt); a `draw` sale: entriesOpenAt. */
  @Column({ name: 'queue_opens_at', type: 'datetime', precision: 3, nullable: true })
  queueOpensAt: Date | null;

  /** A `queue` sale: the most buyers admitted in any second, across every instance. */
  @Column({ name: 'admit_per_second', type: 'int', unsigned: true, nullable: true })
  admitPerSecond: number | null;

  /** A `queue` sale: how long an admitted buyer may take to buy; a `draw` sale: claimSeconds. */
  @Column({ name: 'admission_ttl_seconds', type: 'int', unsigned: true, nullable: true })
  admissionTtlSeconds: number | null;

  /** A `draw` sale: when entries close and the draw ranks them (at or before startAt). */
  @Column({ name: 'entries_close_at', type: 'datetime', precision: 3, nullable: true })
  entriesCloseAt: Date | null;

  /** A `draw` sale: purchase rights in force per unit left (at the draw: stock × this). */
  @Column({ name: 'winners_factor', type: 'smallint', unsigned: true, nullable: true })
  winnersFactor: number | null;

  /** A `queue` sale: the operator paused its admissions (joining and buying go on). */
  @Column({ name: 'admission_paused', type: 'boolean', default: false })
  admissionPaused: boolean;

  /** When the sale was first loaded into Redis (see migrations/1764400000004-GoodsRedisLoaded). */
  @Column({ name: 'redis_loaded_at', type: 'datetime', precision: 3, nullable: true })
  redisLoadedAt: Date | null;

  /** MySQL sells this goods while Redis is down (the fallback opened it; see modules/fallback/). */
  @Column({ name: 'fallback_open', type: 'boolean', default: false })
  fallbackOpen: boolean;

  /** MySQL sold or changed the goods without Redis: Redis must be rebuilt before it sells again. */
  @Column({ name: 'redis_stale', type: 'boolean', default: false })
  redisStale: boolean;

  /** When Redis was last rebuilt from MySQL (MySQL's clock), or null. */
  @Column({ name: 'rebuilt_at', type: 'datetime', precision: 3, nullable: true })
  rebuiltAt: Date | null;

  /** When an instance began holding the goods from Redis to open it to the fallback, or null. */
  @Column({ name: 'fallback_held_at', type: 'datetime', precision: 3, nullable: true })
  fallbackHeldAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'datetime', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'datetime', precision: 3 })
  updatedAt: Date;
}
