import { Injectable } from '@nestjs/common';
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
 * The admission job's side of the journal (the draw itself is DrawJournalService's): after each
 * step what it did (how far admission went, the room's clock, each admission and its place). A
 * write that fails is kept and sent with the next step's, so that nothing the job did is left
 * out for long.
 */
@Injectable()
export class RoomJournalService {
  private readonly pending = new Map<number, RoomStep & { wroteAt: number; dirty: boolean }>();

  constructor(private readonly repository: QueueJournalRepository) {}

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
    this.pending.delete(goodsId);
  }
}
