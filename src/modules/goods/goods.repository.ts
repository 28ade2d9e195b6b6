import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, IsNull, Repository } from 'typeorm';
import { GoodsEntity, hasWaitingRoom } from '../../infra/database/entities/goods.entity.js';
import type { OrderStatus } from '../../infra/database/entities/order.entity.js';
import { ReplicaReadsService } from '../../infra/database/replica-reads.service.js';
import type { Tx } from '../../infra/database/transactions.service.js';

export type NewGoods = Pick<
  GoodsEntity,
  | 'name'
  | 'price'
  | 'totalStock'
  | 'stock'
  | 'startAt'
  | 'endAt'
  | 'perUserLimit'
  | 'stockShards'
  | 'admission'
  | 'queueOpensAt'
  | 'admitPerSecond'
  | 'admissionTtlSeconds'
  | 'entriesCloseAt'
  | 'winnersFactor'
>;

/** The goods row read after a refused fallback UPDATE: what it judged, by MySQL's clock. */
export interface FallbackSaleState {
  stock: number;
  fallbackOpen: boolean;
  notStarted: boolean;
  ended: boolean;
  perUserLimit: number;
  /** A `queue` or `draw` sale: never sold without Redis, where its waiting room and admissions live. */
  queue: boolean;
}

/** A listed sale and the orders of one status (status null: a sale without orders). */
export interface SaleOrdersRow {
  id: number | string;
  name: string;
  totalStock: number | string;
  stock: number | string;
  startAt: Date;
  endAt: Date;
  admission: string;
  admitPerSecond: number | string | null;
  admissionTtlSeconds: number | string | null;
  admissionPaused: number | string;
  winnersFactor: number | string | null;
  status: OrderStatus | null;
  orders: number | string;
  units: number | string;
}

/**
 * `seckill_goods`: the sale's row, MySQL's stock, and the marks of the Redis-down fallback. The
 * statements whose races matter (the stock UPDATEs, the first load, the fallback's open) are
 * conditional, and say through their affected rows whether they took.
 */
@Injectable()
export class GoodsRepository {
  constructor(
    @InjectRepository(GoodsEntity) private readonly goods: Repository<GoodsEntity>,
    private readonly reads: ReplicaReadsService,
  ) {}

  create(fields: NewGoods): Promise<GoodsEntity> {
    return this.goods.save(this.goods.create(fields));
  }

  findById(goodsId: number): Promise<GoodsEntity | null> {
    return this.goods.findOne({ where: { id: goodsId } });
  }

  /**
   * The row as a page shows it, on the replica when caught up (see ReplicaReadsService); a goods the
   * replica does not hold yet (created a moment ago) is looked up on the primary.
   */
  async findByIdMayLag(goodsId: number): Promise<GoodsEntity | null> {
    const read = await this.reads.read(
      (db) => db.findOne(GoodsEntity, { where: { id: goodsId } }),
      { onPrimaryToo: (goods) => goods === null },
    );
    return read.value;
  }

  findByIds(ids: number[]): Promise<GoodsEntity[]> {
    return ids.length === 0 ? Promise.resolve([]) : this.goods.findBy({ id: In(ids) });
  }

  /**
   * Sales whose window opens before `until` and is still open at `now`; a draw sale from its
   * draw (entriesCloseAt), which hands out rights as far as the stock in Redis lets it.
   */
  startingBefore(until: Date, now: Date): Promise<GoodsEntity[]> {
    return this.goods
      .createQueryBuilder('g')
      .where('LEAST(g.start_at, COALESCE(g.entries_close_at, g.start_at)) <= :until', { until })
      .andWhere('g.end_at > :now', { now })
      .orderBy('g.start_at', 'ASC')
      .limit(1_000)
      .getMany();
  }

  /**
   * A queue sale's admission as the operator sets it: paused or not, its pace. False when the
   * goods is not a queue sale (or does not exist).
   */
  async setAdmission(
    goodsId: number,
    change: { paused?: boolean; admitPerSecond?: number },
  ): Promise<boolean> {
    const result = await this.goods.update(
      { id: goodsId, admission: 'queue' },
      {
        ...(change.paused === undefined ? {} : { admissionPaused: change.paused }),
        ...(change.admitPerSecond === undefined ? {} : { admitPerSecond: change.admitPerSecond }),
      },
    );
    return result.affected === 1;
  }

  /**
   * Queue and draw sales whose waiting room is open at `now`: from queueOpensAt (a draw's
   * entriesOpenAt) to the sale's end.
   */
  openQueues(now: Date): Promise<GoodsEntity[]> {
    return this.goods
      .createQueryBuilder('g')
      .where("g.admission IN ('queue', 'draw')")
      .andWhere('g.queue_opens_at <= :now', { now })
      .andWhere('g.end_at > :now', { now })
      .orderBy('g.start_at', 'ASC')
      .limit(1_000)
      .getMany();
  }

  /** False when the first load was marked already. By MySQL's clock. */
  async markFirstLoad(goodsId: number): Promise<boolean> {
    const result = await this.goods.update(
      { id: goodsId, redisLoadedAt: IsNull() },
      { redisLoadedAt: () => 'NOW(3)' },
    );
    return result.affected === 1;
  }

  /** null for an unknown goods. */
  async stockShardsOf(goodsId: number): Promise<number | null> {
    const row = await this.goods.findOne({
      where: { id: goodsId },
      select: { id: true, stockShards: true },
    });
    return row?.stockShards ?? null;
  }

  async stockAndVersion(
    tx: Tx,
    goodsId: number,
  ): Promise<{ stock: number; version: number } | null> {
    const [row] = await tx.query<{ stock: number; version: number }[]>(
      'SELECT stock, version FROM seckill_goods WHERE id = ?',
      [goodsId],
    );
    return row ?? null;
  }

  /** Taken only if no one changed the row since `version` was read, and the stock holds it. */
  takeStockAtVersion(tx: Tx, goodsId: number, quantity: number, version: number): Promise<boolean> {
    return this.changeStock(tx, goodsId, '-', quantity, ' AND version = ? AND stock >= ?', [
      version,
      quantity,
    ]);
  }

  /**
   * A sale decided by MySQL alone: taken only while the fallback is open, inside the window by
   * MySQL's NOW(3), within the per-user limit, and the stock holds it; never a queue sale (its
   * admissions are in Redis).
   */
  takeStockThroughFallback(tx: Tx, goodsId: number, quantity: number): Promise<boolean> {
    return this.changeStock(
      tx,
      goodsId,
      '-',
      quantity,
      " AND fallback_open = 1 AND admission = 'open' AND stock >= ? AND per_user_limit >= ? AND start_at <= NOW(3) AND end_at > NOW(3)",
      [quantity, quantity],
    );
  }

  /** Whether the sale ended more than `ms` ago, by MySQL's clock. */
  async endedBefore(tx: Tx, goodsId: number, ms: number): Promise<boolean> {
    const [row] = await tx.query<{ ended: number | string }[]>(
      'SELECT end_at < NOW(3) - INTERVAL ? MICROSECOND AS ended FROM seckill_goods WHERE id = ?',
      [ms * 1_000, goodsId],
    );
    return Number(row?.ended) === 1;
  }

  /** Taken only if the stock holds it (a late payment's retake, under the row's lock). */
  takeStockIfLeft(tx: Tx, goodsId: number, quantity: number): Promise<boolean> {
    return this.changeStock(tx, goodsId, '-', quantity, ' AND stock >= ?', [quantity]);
  }

  async returnStock(tx: Tx, goodsId: number, quantity: number): Promise<void> {
    await this.changeStock(tx, goodsId, '+', quantity, '', []);
  }

  /**
   * Every change of the stock bumps the version: a writer that read the stock before it then
   * fails its version check and reads again, instead of deciding on a stale count.
   */
  private async changeStock(
    tx: Tx,
    goodsId: number,
    sign: '-' | '+',
    quantity: number,
    conditions: string,
    params: unknown[],
  ): Promise<boolean> {
    const result = await tx.query<{ affectedRows: number }>(
      `UPDATE seckill_goods SET stock = stock ${sign} ?, version = version + 1 WHERE id = ?${conditions}`,
      [quantity, goodsId, ...params],
    );
    return result.affectedRows === 1;
  }

  async stockTotals(
    tx: Tx,
    goodsId: number,
  ): Promise<{ totalStock: number; stock: number } | null> {
    const [row] = await tx.query<{ total_stock: number; stock: number }[]>(
      'SELECT total_stock, stock FROM seckill_goods WHERE id = ?',
      [goodsId],
    );
    return row ? { totalStock: Number(row.total_stock), stock: Number(row.stock) } : null;
  }

  /** A locking read (FOR UPDATE): the row stays locked until the transaction ends. */
  async lockStock(tx: Tx, goodsId: number): Promise<number | null> {
    const [row] = await tx.query<{ stock: number }[]>(
      'SELECT stock FROM seckill_goods WHERE id = ? FOR UPDATE',
      [goodsId],
    );
    return row ? Number(row.stock) : null;
  }

  /** Redis holds the sale again: the fallback closes, its marks clear, the rebuild is stamped. */
  async markRebuilt(tx: Tx, goodsId: number): Promise<void> {
    await tx.query(
      'UPDATE seckill_goods SET fallback_open = 0, redis_stale = 0, fallback_held_at = NULL, rebuilt_at = NOW(3) WHERE id = ?',
      [goodsId],
    );
  }

  /** The stamp of markRebuilt as an opaque string, so that it compares exactly (microseconds). */
  async lastRebuild(goodsId: number): Promise<string | null> {
    const [row] = await this.goods.query<{ rebuilt: string | null }[]>(
      "SELECT DATE_FORMAT(rebuilt_at, '%Y-%m-%d %H:%i:%s.%f') AS rebuilt FROM seckill_goods WHERE id = ?",
      [goodsId],
    );
    return row?.rebuilt ?? null;
  }

  async markRedisStale(goodsId: number): Promise<void> {
    await this.goods.query('UPDATE seckill_goods SET redis_stale = 1 WHERE id = ?', [goodsId]);
  }

  async staleIds(): Promise<number[]> {
    const rows = await this.goods.query<{ id: string | number }[]>(
      'SELECT id FROM seckill_goods WHERE redis_stale = 1',
    );
    return rows.map((row) => Number(row.id));
  }

  async isRedisStale(goodsId: number): Promise<boolean> {
    const [row] = await this.goods.query<{ stale: number }[]>(
      'SELECT redis_stale AS stale FROM seckill_goods WHERE id = ?',
      [goodsId],
    );
    return Number(row?.stale) === 1;
  }

  /** Once per outage: a hold already under way keeps its first time. */
  async holdFromRedis(goodsId: number): Promise<void> {
    await this.goods.query(
      'UPDATE seckill_goods SET redis_stale = 1, fallback_held_at = IFNULL(fallback_held_at, NOW(3)) WHERE id = ? AND fallback_open = 0',
      [goodsId],
    );
  }

  async fallbackHold(goodsId: number): Promise<{ open: boolean; heldAt: Date | null } | null> {
    const [row] = await this.goods.query<{ open: number; heldAt: Date | null }[]>(
      'SELECT fallback_open AS open, fallback_held_at AS heldAt FROM seckill_goods WHERE id = ?',
      [goodsId],
    );
    if (!row) return null;
    return {
      open: Number(row.open) === 1,
      heldAt: row.heldAt === null ? null : new Date(row.heldAt),
    };
  }

  /**
   * Opens only a goods still held (a rebuild meanwhile cleared the hold) and held at least
   * `heldForMs` before `fence`; false when it opened nothing (another instance may have).
   */
  async openToFallback(goodsId: number, fence: Date, heldForMs: number): Promise<boolean> {
    const opened = await this.goods.query<{ affectedRows: number }>(
      'UPDATE seckill_goods SET fallback_open = 1 WHERE id = ? AND fallback_open = 0 AND redis_stale = 1 AND fallback_held_at <= ? - INTERVAL ? MICROSECOND',
      [goodsId, fence, heldForMs * 1_000],
    );
    return opened.affectedRows === 1;
  }

  async fallbackSaleState(goodsId: number): Promise<FallbackSaleState | null> {
    const [row] = await this.goods.query<
      {
        stock: number;
        fallback_open: number;
        not_started: number;
        ended: number;
        per_user_limit: number;
        admission: string;
      }[]
    >(
      'SELECT stock, fallback_open, start_at > NOW(3) AS not_started, end_at <= NOW(3) AS ended, per_user_limit, admission FROM seckill_goods WHERE id = ?',
      [goodsId],
    );
    if (!row) return null;
    return {
      stock: Number(row.stock),
      fallbackOpen: Number(row.fallback_open) === 1,
      notStarted: Number(row.not_started) === 1,
      ended: Number(row.ended) === 1,
      perUserLimit: Number(row.per_user_limit),
      queue: hasWaitingRoom(row),
    };
  }

  /**
   * The sales ending at `endedSince` or later and starting by `startingBy` (those open at `now`
   * first, then the newest; at most `limit`), each with its orders counted by status: one
   * statement, so one consistent read in InnoDB. The dashboard's history: it may lag, by up to
   * the replica's bound (see ReplicaReadsService).
   */
  async listedWithOrders(window: {
    endedSince: Date;
    startingBy: Date;
    now: Date;
    limit: number;
  }): Promise<SaleOrdersRow[]> {
    const read = await this.reads.read((db) =>
      db.query<SaleOrdersRow[]>(
        `SELECT g.id, g.name, g.total_stock AS totalStock, g.stock, g.start_at AS startAt,
              g.end_at AS endAt, g.admission, g.admit_per_second AS admitPerSecond,
              g.admission_ttl_seconds AS admissionTtlSeconds, g.admission_paused AS admissionPaused,
              g.winners_factor AS winnersFactor, o.status, COUNT(o.id) AS orders,
              COALESCE(SUM(o.quantity), 0) AS units
         FROM (SELECT id FROM seckill_goods WHERE end_at >= ? AND start_at <= ?
                ORDER BY (start_at <= ? AND end_at > ?) DESC, start_at DESC, id DESC
                LIMIT ?) AS listed
         JOIN seckill_goods g ON g.id = listed.id
         LEFT JOIN seckill_order o ON o.goods_id = g.id
        GROUP BY g.id, g.name, g.total_stock, g.stock, g.start_at, g.end_at, g.admission,
                 g.admit_per_second, g.admission_ttl_seconds, g.admission_paused, g.winners_factor,
                 o.status
        ORDER BY g.start_at DESC, g.id DESC`,
        [window.endedSince, window.startingBy, window.now, window.now, window.limit],
      ),
    );
    return read.value;
  }
}
