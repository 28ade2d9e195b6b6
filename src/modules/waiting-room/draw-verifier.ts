import { drawSeed, seedCommitment } from '../queue-journal/fairness.js';
import { PreQueueDigest } from './pre-queue-digest.js';
import { queueOrder } from './queue-order.js';

/** The public fairness answer, as the verifier reads it (GET /api/v1/goods/:goodsId/fairness). */
export interface PublishedDraw {
  goodsId: number;
  /** Hex SHA-256 of the secret's bytes, from queueOpensAt. */
  seedCommitment: string;
  /** The order is drawn: the values below are revealed. */
  drawn: boolean;
  /** Hex of the secret's bytes. */
  secret?: string;
  /** The pre-queue's digest the seed was drawn from (null: a draw from before digests). */
  digest?: string | null;
  /** The join indices the draw orders: 0 .. preSize - 1. */
  preSize?: number;
  seed?: string;
}

/** The operator's export (GET /api/v1/admin/goods/:goodsId/entries). */
export interface DrawExport extends PublishedDraw {
  preQueue: { joinIndex: number; pseudonym: string; place: number | null }[];
  after: { arrival: number; pseudonym: string; place: number | null }[];
}

export type DrawVerdict =
  | { ok: true; summary: string }
  /** `place`: the first place (0-based) where the export and the draw disagree, if that is it. */
  | { ok: false; place: number | null; problem: string };

const PSEUDONYM = /^[0-9a-f]{32}$/;

/**
 * Checks a queue sale's draw from nothing but the public answer and the export: the secret is the
 * one committed to, the export's pre-queue hashes to the digest the seed was drawn from, the seed
 * is the one the secret and the digest give, and every admission in the export was given at the
 * place the draw gives its join. Says OK, or the first thing that differs (the lowest place
 * where the export's admissions and the draw disagree).
 */
export function verifyDraw(published: PublishedDraw, exported: DrawExport): DrawVerdict {
  const fail = (problem: string, place: number | null = null): DrawVerdict => ({
    ok: false,
    place,
    problem,
  });
  if (!published.drawn || !published.secret || !published.seed || published.preSize === undefined) {
    return fail(`goods ${published.goodsId}: the order is not drawn yet (nothing revealed)`);
  }
  if (exported.goodsId !== published.goodsId) {
    return fail(`the export is of goods ${exported.goodsId}, not ${published.goodsId}`);
  }
  for (const field of ['seedCommitment', 'secret', 'digest', 'preSize', 'seed'] as const) {
    if (exported[field] !== published[field]) {
      return fail(
        `the export's ${field} (${exported[field]}) is not the published ${published[field]}`,
      );
    }
  }
  const secret = Buffer.from(published.secret, 'hex');
  if (seedCommitment(secret) !== published.seedCommitment) {
    return fail('the revealed secret does not hash to the commitment published before the joins');
  }
  const preSize = published.preSize;
  const digest = new PreQueueDigest();
  for (const [i, entry] of exported.preQueue.entries()) {
    if (
      !Number.isSafeInteger(entry.joinIndex) ||
      entry.joinIndex < 0 ||
      entry.joinIndex >= preSize
    ) {
      return fail(
        `pre-queue entry ${i}: join index ${entry.joinIndex} is not in 0..${preSize - 1}`,
      );
    }
    if (!PSEUDONYM.test(entry.pseudonym)) {
      return fail(`pre-queue entry ${i}: pseudonym ${entry.pseudonym} is not 32 hex digits`);
    }
    if (entry.joinIndex <= digest.lastIndex()) {
      return fail(`pre-queue entry ${i}: join index ${entry.joinIndex} is not after the last one`);
    }
    digest.add(entry.joinIndex, entry.pseudonym);
  }
  if (published.digest !== null && digest.digest() !== published.digest) {
    return fail(
      `the export's pre-queue (${exported.preQueue.length} joins) does not hash to the published digest ${published.digest}: a join was left out, added or changed`,
    );
  }
  if (published.digest !== null && drawSeed(secret, published.digest) !== published.seed) {
    return fail('the published seed is not the one the secret and the digest give');
  }
  // Where the draw puts each admitted join, against where the export says it was admitted.
  const order = preSize > 0 ? queueOrder(published.seed, preSize) : null;
  const claimed = new Map<number, string>();
  const drawn = new Map<number, string>();
  let admitted = 0;
  for (const entry of exported.preQueue) {
    if (entry.place === null) continue;
    admitted++;
    const named = `join index ${entry.joinIndex} (${entry.pseudonym.slice(0, 12)}…)`;
    claimed.set(entry.place, named);
    drawn.set(order!.placeOf(entry.joinIndex), named);
  }
  const differing = [...new Set([...claimed.keys(), ...drawn.keys()])]
    .filter((place) => claimed.get(place) !== drawn.get(place))
    .sort((a, b) => a - b);
  if (differing.length > 0) {
    const place = differing[0];
    return fail(
      `place ${place}: the draw puts ${drawn.get(place) ?? 'none of the admitted joins'} there, the export admitted ${claimed.get(place) ?? 'nobody'} there`,
      place,
    );
  }
  // The later joiners follow the pre-queue in arrival order (their places are not drawn).
  let last = preSize - 1;
  let lastArrival = 0;
  for (const entry of exported.after) {
    if (!Number.isSafeInteger(entry.arrival) || entry.arrival <= lastArrival) {
      return fail(`later join ${entry.arrival}: the arrivals are not 1, 2, … in order`);
    }
    lastArrival = entry.arrival;
    if (entry.place === null) continue;
    admitted++;
    if (entry.place <= last) {
      return fail(
        `place ${entry.place}: the export admitted arrival ${entry.arrival} (${entry.pseudonym.slice(0, 12)}…) there, ahead of ${entry.place < preSize ? 'the pre-queue' : 'an earlier arrival'}`,
        entry.place,
      );
    }
    last = entry.place;
  }
  return {
    ok: true,
    summary: `goods ${published.goodsId}: the secret matches its commitment, ${exported.preQueue.length} pre-queue joins hash to the digest, the seed follows from both, and ${admitted} admissions were given at the places the draw gives`,
  };
}
