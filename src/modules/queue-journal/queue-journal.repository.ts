import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/** A join as the waiting room placed it: in the pre-queue (its join index) or behind it. */
export interface JoinRow {
  goodsId: number;
  userId: number;
  /** 0: the pre-queue (position = join index 0, 1, …); 1: after the seed (position = 1, 2, …). */
  line: 0 | 1;
  position: number;
  /** The client address, for the per-address account cap; null when not counted. */
  address: string | null;
}

/** What the room's admission step last wrote (all of it outlives Redis). */
export interface RoomRow {
  seed: string | null;
  /** The pre-queue's size the seed orders, written at the draw. */
  preSize: number | null;
  /** Places admitted so far. */
  head: number;
  /** The room's clock (lua/lib/room-clock.lua) at the last step written. */
  roomMs: number | null;
}

export interface AdmissionRow {
  userId: number;
  /** In the room's clock. */
  untilMs: number;
  /** The place in the order it was given at (null: not known, a restore's own). */
  place?: number | null;
}

/** A queue sale's commit-and-reveal secrets (fairness.ts). */
export interface RoomSecrets {
  /** 32 bytes, committed to before the first join, revealed after the draw. */
  secret: Buffer;
  /** 32 bytes, never revealed: the buyers' pseudonyms in the export are keyed by it. */
  pseudonymKey: Buffer;
}

/** The draw as MySQL keeps it. */
export interface DrawRow {
  seed: string;
  /** The pre-queue's digest the seed was drawn from (null: a draw from before digests). */
  digest: string | null;
  preSize: number;
}

/** A join in the export: its place in its line, and the place in the order it was admitted at. */
export interface ExportRow {
  userId: number;
  position: number;
  place: number | null;
}

/**
 * `seckill_queue_join`, `seckill_queue_room`, `seckill_queue_admission`: a queue sale's waiting
 * room in MySQL (migration QueueJournal), written as Redis changes it and read back when Redis
 * lost or outdated it.
 */
@Injectable()
export class QueueJournalRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** One statement for the batch; a join there already (the same buyer) is left as it is. */
  async insertJoins(rows: JoinRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.query(
      `INSERT IGNORE INTO seckill_queue_join (goods_id, user_id, line, position, address) VALUES ${rows
        .map(() => '(?, ?, ?, ?, ?)')
        .join(', ')}`,
      rows.flatMap((row) => [row.goodsId, row.userId, row.line, row.position, row.address]),
    );
  }

  /** The joins of these buyers as kept, by `goodsId:userId` (one indexed read per goods). */
  async joinsOf(keys: { goodsId: number; userId: number }[]): Promise<Map<string, JoinRow>> {
    const byGoods = new Map<number, number[]>();
    for (const { goodsId, userId } of keys) {
      const users = byGoods.get(goodsId) ?? [];
      users.push(userId);
      byGoods.set(goodsId, users);
    }
    const kept = new Map<string, JoinRow>();
    for (const [goodsId, users] of byGoods) {
      const rows = await this.db.query<RawJoin[]>(
        `SELECT goods_id, user_id, line, position, address FROM seckill_queue_join
          WHERE goods_id = ? AND user_id IN (?)`,
        [goodsId, users],
      );
      for (const raw of rows) {
        const row = joinOf(raw);
        kept.set(`${row.goodsId}:${row.userId}`, row);
      }
    }
    return kept;
  }

  /** One line's joins from `after` (exclusive), in place order: the restore pages through them. */
  async joins(goodsId: number, line: 0 | 1, after: number, limit: number): Promise<JoinRow[]> {
    const rows = await this.db.query<RawJoin[]>(
      `SELECT goods_id, user_id, line, position, address FROM seckill_queue_join
        WHERE goods_id = ? AND line = ? AND position > ? ORDER BY position LIMIT ?`,
      [goodsId, line, after, limit],
    );
    return rows.map(joinOf);
  }

  /**
   * The sale's secret and pseudonym key, drawing `candidate`'s where there are none yet: only
   * the first ever kept, so that the commitment published never changes.
   */
  async drawSecrets(goodsId: number, candidate: RoomSecrets): Promise<RoomSecrets> {
    await this.db.query(
      `INSERT INTO seckill_queue_room (goods_id, secret, pseudonym_key) VALUES (?, ?, ?)
         ON DUPLICATE KEY UPDATE secret = COALESCE(secret, VALUES(secret)),
           pseudonym_key = COALESCE(pseudonym_key, VALUES(pseudonym_key))`,
      [goodsId, candidate.secret, candidate.pseudonymKey],
    );
    const [row] = await this.db.query<{ secret: Buffer; pseudonym_key: Buffer }[]>(
      'SELECT secret, pseudonym_key FROM seckill_queue_room WHERE goods_id = ?',
      [goodsId],
    );
    return { secret: row.secret, pseudonymKey: row.pseudonym_key };
  }

  /**
   * The draw, kept once: the seed with the digest and the pre-queue's size it was drawn from. A
   * draw kept already (another instance's, the same one) stands; what is kept is returned. A seed
   * without its pre-queue size (drawn ahead of the start before draws were committed to, and
   * never taken by Redis: a Redis that took one has it, and its tick never asks for another) is
   * replaced.
   */
  async drawSeed(goodsId: number, draw: DrawRow): Promise<DrawRow> {
    await this.db.query(
      `UPDATE seckill_queue_room SET seed = ?, digest = ?, pre_size = ?
        WHERE goods_id = ? AND (seed IS NULL OR pre_size IS NULL)`,
      [draw.seed, draw.digest, draw.preSize, goodsId],
    );
    const kept = await this.draw(goodsId);
    if (!kept) throw new Error(`no waiting room row for goods ${goodsId} to keep its draw in`);
    return kept;
  }

  /** The draw kept, or null before it (a seed drawn before digests were kept has none). */
  async draw(goodsId: number): Promise<DrawRow | null> {
    const [row] = await this.db.query<
      { seed: string | null; digest: string | null; pre_size: unknown }[]
    >('SELECT seed, digest, pre_size FROM seckill_queue_room WHERE goods_id = ?', [goodsId]);
    if (!row?.seed || row.pre_size === null) return null;
    return { seed: row.seed, digest: row.digest, preSize: Number(row.pre_size) };
  }

  /**
   * The pre-queue's joins at these join indices, by index (a list, not a range: one join whose
   * write failed long ago must not make every later look-up read all the joins since).
   */
  async preQueueAt(goodsId: number, indices: number[]): Promise<Map<number, number>> {
    if (indices.length === 0) return new Map();
    const rows = await this.db.query<{ user_id: unknown; position: unknown }[]>(
      `SELECT user_id, position FROM seckill_queue_join
        WHERE goods_id = ? AND line = 0 AND position IN (?)`,
      [goodsId, indices],
    );
    return new Map(rows.map((row) => [Number(row.position), Number(row.user_id)]));
  }

  /**
   * One line's joins from `after` (exclusive) in place order, each with the place its admission
   * was given (null: not admitted, or admitted before places were kept): the export's pages.
   */
  async exportPage(
    goodsId: number,
    line: 0 | 1,
    after: number,
    limit: number,
  ): Promise<ExportRow[]> {
    const rows = await this.db.query<{ user_id: unknown; position: unknown; place: unknown }[]>(
      `SELECT j.user_id, j.position, a.place FROM seckill_queue_join j
         LEFT JOIN seckill_queue_admission a ON a.goods_id = j.goods_id AND a.user_id = j.user_id
        WHERE j.goods_id = ? AND j.line = ? AND j.position > ? ORDER BY j.position LIMIT ?`,
      [goodsId, line, after, limit],
    );
    return rows.map((row) => ({
      userId: Number(row.user_id),
      position: Number(row.position),
      place: row.place === null ? null : Number(row.place),
    }));
  }

  /**
   * How far the admission went and the room's clock then; the pre-queue's size once (the first
   * written stays). Never moves back: two workers' late writes keep the furthest.
   */
  async recordStep(
    goodsId: number,
    step: { head: number; roomMs: number; preSize?: number },
  ): Promise<void> {
    await this.db.query(
      `INSERT INTO seckill_queue_room (goods_id, head, room_ms, pre_size) VALUES (?, ?, ?, ?)
         ON DUPLICATE KEY UPDATE head = GREATEST(head, VALUES(head)),
           room_ms = GREATEST(COALESCE(room_ms, 0), VALUES(room_ms)),
           pre_size = COALESCE(pre_size, VALUES(pre_size))`,
      [goodsId, step.head, step.roomMs, step.preSize ?? null],
    );
  }

  /** Write-once: a buyer is admitted once, and the first record of it stands. */
  async recordAdmissions(goodsId: number, admissions: AdmissionRow[]): Promise<void> {
    if (admissions.length === 0) return;
    await this.db.query(
      `INSERT IGNORE INTO seckill_queue_admission (goods_id, user_id, until_ms, place) VALUES ${admissions
        .map(() => '(?, ?, ?, ?)')
        .join(', ')}`,
      admissions.flatMap((admission) => [
        goodsId,
        admission.userId,
        admission.untilMs,
        admission.place ?? null,
      ]),
    );
  }

  async room(goodsId: number): Promise<RoomRow | null> {
    const [row] = await this.db.query<
      { seed: string | null; pre_size: unknown; head: unknown; room_ms: unknown }[]
    >('SELECT seed, pre_size, head, room_ms FROM seckill_queue_room WHERE goods_id = ?', [goodsId]);
    if (!row) return null;
    return {
      seed: row.seed,
      preSize: row.pre_size === null ? null : Number(row.pre_size),
      head: Number(row.head),
      roomMs: row.room_ms === null ? null : Number(row.room_ms),
    };
  }

  async admissions(goodsId: number): Promise<AdmissionRow[]> {
    const rows = await this.db.query<{ user_id: unknown; until_ms: unknown }[]>(
      'SELECT user_id, until_ms FROM seckill_queue_admission WHERE goods_id = ?',
      [goodsId],
    );
    return rows.map((row) => ({ userId: Number(row.user_id), untilMs: Number(row.until_ms) }));
  }

  /** Buyers who ever had an order of the goods, cancelled or not: they used their admission. */
  async buyersWithOrders(goodsId: number): Promise<Set<number>> {
    const rows = await this.db.query<{ user_id: unknown }[]>(
      'SELECT DISTINCT user_id FROM seckill_order WHERE goods_id = ?',
      [goodsId],
    );
    return new Set(rows.map((row) => Number(row.user_id)));
  }
}

interface RawJoin {
  goods_id: unknown;
  user_id: unknown;
  line: unknown;
  position: unknown;
  address: string | null;
}

function joinOf(raw: RawJoin): JoinRow {
  return {
    goodsId: Number(raw.goods_id),
    userId: Number(raw.user_id),
    line: Number(raw.line) === 1 ? 1 : 0,
    position: Number(raw.position),
    address: raw.address,
  };
}
