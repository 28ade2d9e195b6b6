import { Injectable } from '@nestjs/common';
import { Readable } from 'node:stream';
import { orUnavailable } from '../../common/errors/domain-error.js';
import { DrawJournalService } from '../queue-journal/draw-journal.service.js';
import { pseudonymsOf, seedCommitment } from '../queue-journal/fairness.js';
import type { PublishedDraw } from './draw-verifier.js';
import type { DrawSale, QueueSale } from './room-sale.js';
import { notOpenYet, WaitingRoomService } from './waiting-room.service.js';

/** How the order follows from the revealed values, in words (the verifier does it in code). */
export const DRAW_RULE = {
  commitment:
    'seedCommitment = hex SHA-256 of the secret’s bytes, published from queueOpensAt (a draw sale: entriesOpenAt)',
  digest:
    'digest = hex SHA-256 of one line "joinIndex:pseudonym\\n" per pre-queue join (a draw sale: per entry), in join-index order, as it stood at the draw (startAt; a draw sale: entriesCloseAt) (pseudonym: 32 hex digits, the user id encrypted under a key of the sale that is never revealed)',
  seed: 'seed = the first 32 hex digits of SHA-256(secret bytes ‖ digest bytes)',
  order:
    'the join index at place p (0-based) is indexAt(p) of an 8-round Feistel permutation of 0..preSize-1 keyed by the seed (lua/lib/queue-order.lua, src/modules/waiting-room/queue-order.ts); a place whose index nobody holds is passed over; later joiners follow in arrival order (a draw sale has none); admissions (a draw sale: purchase rights) are given in place order',
  verify: 'npm run verify-draw -- --goods ID --base-url URL --export FILE',
} as const;

/** GET /api/v1/goods/:goodsId/fairness: what the verifier reads, and the rule in words. */
export type FairnessView = PublishedDraw & { rule: typeof DRAW_RULE };

/** Joins read from MySQL per page of the export. */
const EXPORT_PAGE = 5_000;

/**
 * A queue or draw sale's commit-and-reveal as anybody outside sees it: the commitment from the queue's
 * opening, the secret and what the seed was drawn from once the order is drawn (never before: the
 * reveal follows the draw, which follows the pre-queue's close), and the operator's export of the
 * joins (pseudonyms, never user ids) that an auditor recomputes the order from.
 */
@Injectable()
export class FairnessService {
  constructor(
    private readonly room: WaitingRoomService,
    private readonly draws: DrawJournalService,
  ) {}

  async view(goodsId: number): Promise<FairnessView> {
    const sale = await this.openSale(goodsId);
    return orUnavailable('MySQL', async () => {
      const { secret } = await this.draws.secretsOf(sale.id);
      const draw = await this.draws.drawn(sale.id);
      const view: FairnessView = {
        goodsId: sale.id,
        seedCommitment: seedCommitment(secret),
        drawn: draw !== null,
        rule: DRAW_RULE,
      };
      if (!draw) return view;
      return {
        ...view,
        secret: secret.toString('hex'),
        digest: draw.digest,
        preSize: draw.preSize,
        seed: draw.seed,
      };
    });
  }

  /**
   * The export, as JSON streamed page by page: the fairness view (with the secret once drawn),
   * then every pre-queue join (join index, pseudonym, the place its admission was given at) and
   * every later join (arrival number, pseudonym, place).
   */
  async export(goodsId: number): Promise<Readable> {
    const sale = await this.openSale(goodsId);
    const head = await this.view(sale.id);
    const { pseudonymKey } = await orUnavailable('MySQL', () => this.draws.secretsOf(sale.id));
    const draws = this.draws;
    async function* body(): AsyncGenerator<string> {
      yield `${JSON.stringify(head).slice(0, -1)},"preQueue":[`;
      for (const line of [0, 1] as const) {
        if (line === 1) yield '],"after":[';
        let first = true;
        for (let after = -1; ;) {
          const rows = await draws.exportPage(sale.id, line, after, EXPORT_PAGE);
          if (rows.length === 0) break;
          const pseudonyms = pseudonymsOf(
            pseudonymKey,
            rows.map((row) => row.userId),
          );
          const entries = rows.map((row, i) =>
            JSON.stringify({
              [line === 0 ? 'joinIndex' : 'arrival']: row.position,
              pseudonym: pseudonyms[i],
              place: row.place,
            }),
          );
          yield (first ? '' : ',') + entries.join(',');
          first = false;
          after = rows[rows.length - 1].position;
          if (rows.length < EXPORT_PAGE) break;
        }
      }
      yield ']}';
    }
    return Readable.from(body());
  }

  private async openSale(goodsId: number): Promise<QueueSale | DrawSale> {
    const sale = await this.room.roomSale(goodsId);
    if (Date.now() < sale.queueOpensAt.getTime()) throw notOpenYet(sale);
    return sale;
  }
}
