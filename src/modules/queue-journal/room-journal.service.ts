import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { QueueJournalRepository, type AdmissionRow } from './queue-journal.repository.js';

/** What one admission step changed, to be kept in MySQL. */
export interface RoomStep {
  head: number;
  /** The room's clock at the step. */
  roomMs: number;
  /** With the draw: the pre-queue's size the seed orders. */
  preSize?: number;
  admissions: AdmissionRow[];
}

/** The room's clock is written at least this often while nothing else changes. */
const CLOCK_EVERY_MS = 1_000;

/**
 * The admission job's side of the journal: the shuffle's seed drawn in MySQL first (so that
 * Redis only ever takes the one MySQL keeps, and a restore never draws another), then after each
 * step what it did (how far admission went, the room's clock, each admission). A write that fails
 * is kept and sent with the next step's, so that nothing the job did is left out for long.
 */
@Injectable()
export class RoomJournalService {
  private readonly seeds = new Map<number, string>();
  private readonly pending = new Map<number, RoomStep & { wroteAt: number; dirty: boolean }>();

  constructor(private readonly repository: QueueJournalRepository) {}

  /** The goods' seed, drawn here (16 random bytes) if MySQL has none yet; read once. */
  async seed(goodsId: number): Promise<string> {
    const known = this.seeds.get(goodsId);
    if (known) return known;
    // 128 bits, so that a round of the shuffle (lua/lib/queue-order.lua) hashes one SHA1 block.
    const seed = await this.repository.drawSeed(goodsId, randomBytes(16).toString('hex'));
    this.seeds.set(goodsId, seed);
    return seed;
  }

  /** Keeps the step; writes when it changed anything but the clock, or the clock is due. */
  async record(goodsId: number, step: RoomStep): Promise<void> {
    const held = this.pending.get(goodsId);
    const merged = {
      head: Math.max(step.head, held?.head ?? 0),
      roomMs: Math.max(step.roomMs, held?.roomMs ?? 0),
      preSize: held?.preSize ?? step.preSize,
      admissions: [...(held?.dirty ? held.admissions : []), ...step.admissions],
      wroteAt: held?.wroteAt ?? 0,
      dirty:
        (held?.dirty ?? false) ||
        step.admissions.length > 0 ||
        step.preSize !== undefined ||
        step.head !== held?.head,
    };
    this.pending.set(goodsId, merged);
    if (!merged.dirty && Date.now() - merged.wroteAt < CLOCK_EVERY_MS) return;
    await this.repository.recordAdmissions(goodsId, merged.admissions);
    await this.repository.recordStep(goodsId, merged);
    this.pending.set(goodsId, { ...merged, admissions: [], wroteAt: Date.now(), dirty: false });
  }

  /** The sale is over or gone: nothing more to keep for it. */
  forget(goodsId: number): void {
    this.seeds.delete(goodsId);
    this.pending.delete(goodsId);
  }
}
