import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { seedCommitment } from './fairness.js';
import {
  QueueJournalRepository,
  type DrawRow,
  type ExportRow,
  type RoomSecrets,
} from './queue-journal.repository.js';

/**
 * A queue sale's commit-and-reveal in MySQL (fairness.ts says the arithmetic): the secret and
 * the pseudonym key, drawn once when first asked for (the goods answer, the fairness route or the
 * first join, whichever comes first from queueOpensAt: before any join is answered), and the draw
 * (seed, digest, pre-queue size), kept once, before Redis takes the seed. What is kept never
 * changes, so each instance reads it once (the draw once it exists).
 */
@Injectable()
export class DrawJournalService {
  private readonly secrets = new Map<number, Promise<RoomSecrets>>();
  private readonly draws = new Map<number, DrawRow>();

  constructor(private readonly repository: QueueJournalRepository) {}

  /** The sale's secrets, drawn now if MySQL has none yet. */
  secretsOf(goodsId: number): Promise<RoomSecrets> {
    let known = this.secrets.get(goodsId);
    if (!known) {
      known = this.repository.drawSecrets(goodsId, {
        secret: randomBytes(32),
        pseudonymKey: randomBytes(32),
      });
      // A failed read is asked again by the next caller.
      known.catch(() => this.secrets.delete(goodsId));
      this.secrets.set(goodsId, known);
    }
    return known;
  }

  /** The hex SHA-256 of the sale's secret (drawn now if MySQL has none yet). */
  async commitment(goodsId: number): Promise<string> {
    return seedCommitment((await this.secretsOf(goodsId)).secret);
  }

  /** The draw MySQL keeps, or null before it. */
  async drawn(goodsId: number): Promise<DrawRow | null> {
    const known = this.draws.get(goodsId);
    if (known) return known;
    const kept = await this.repository.draw(goodsId);
    if (kept) this.draws.set(goodsId, kept);
    return kept;
  }

  /** Keeps the draw unless one is kept already; either way, the one kept. */
  async draw(goodsId: number, draw: DrawRow): Promise<DrawRow> {
    const kept = await this.repository.drawSeed(goodsId, draw);
    this.draws.set(goodsId, kept);
    return kept;
  }

  /** The pre-queue's joins MySQL holds at these join indices: index -> user id. */
  preQueueAt(goodsId: number, indices: number[]): Promise<Map<number, number>> {
    return this.repository.preQueueAt(goodsId, indices);
  }

  /** One page of the export (QueueJournalRepository.exportPage). */
  exportPage(goodsId: number, line: 0 | 1, after: number, limit: number): Promise<ExportRow[]> {
    return this.repository.exportPage(goodsId, line, after, limit);
  }
}
