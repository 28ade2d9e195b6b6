import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';

import { drawSeed, pseudonymOf, seedCommitment } from '../queue-journal/fairness.js';
import { verifyDraw, type DrawExport, type PublishedDraw } from './draw-verifier.js';
import { PreQueueDigest } from './pre-queue-digest.js';
import { queueOrder } from './queue-order.js';

/**
 * A drawn sale as the service would publish and export it: 40 pre-queue joins (index 7 nobody's:
 * a join whose write failed), the first 25 places admitted, and three later joiners, two admitted.
 */
function drawnSale(): { published: PublishedDraw; exported: DrawExport } {
  const secret = randomBytes(32);
  const key = randomBytes(32);
  const preSize = 40;
  const digest = new PreQueueDigest();
  const indices = Array.from({ length: preSize }, (_, i) => i).filter((i) => i !== 7);
  for (const index of indices) digest.add(index, pseudonymOf(key, 1_000 + index));
  const seed = drawSeed(secret, digest.digest());
  const order = queueOrder(seed, preSize);
  const published: PublishedDraw = {
    goodsId: 9,
    seedCommitment: seedCommitment(secret),
    drawn: true,
    secret: secret.toString('hex'),
    digest: digest.digest(),
    preSize,
    seed,
  };
  const exported: DrawExport = {
    ...published,
    preQueue: indices.map((joinIndex) => {
      const place = order.placeOf(joinIndex);
      return {
        joinIndex,
        pseudonym: pseudonymOf(key, 1_000 + joinIndex),
        place: place < 25 ? place : null,
      };
    }),
    after: [1, 2, 3].map((arrival) => ({
      arrival,
      pseudonym: pseudonymOf(key, 5_000 + arrival),
      place: arrival < 3 ? preSize + arrival - 1 : null,
    })),
  };
  return { published, exported };
}

/** The export's admitted pre-queue joins in place order (a place may be index 7's: nobody's). */
const admittedOf = (exported: DrawExport) =>
  exported.preQueue
    .filter((entry) => entry.place !== null)
    .sort((a, b) => (a.place ?? 0) - (b.place ?? 0));

describe('verifyDraw', () => {
  it('should find a draw the service made exactly as its rule says', () => {
    const { published, exported } = drawnSale();
    expect(verifyDraw(published, exported)).toMatchObject({ ok: true });
  });

  it('should name the lowest place that differs when one admission in the export is moved', () => {
    const { published, exported } = drawnSale();
    const moved = admittedOf(exported)[11];
    const from = moved.place!;
    moved.place = 24;
    // Its place now holds nobody the export admitted, and 24 holds two: it is the first to differ.
    expect(verifyDraw(published, exported)).toMatchObject({ ok: false, place: from });
    expect(verifyDraw(published, exported)).toHaveProperty(
      'problem',
      expect.stringContaining(`join index ${moved.joinIndex}`),
    );
  });

  it('should name the place when two admissions in the export are swapped', () => {
    const { published, exported } = drawnSale();
    const [a, b] = [admittedOf(exported)[3], admittedOf(exported)[8]];
    const first = a.place!;
    [a.place, b.place] = [b.place, a.place];
    expect(verifyDraw(published, exported)).toMatchObject({ ok: false, place: first });
  });

  it('should refuse an export whose pre-queue lost, gained or changed a join', () => {
    for (const change of [
      (e: DrawExport) => e.preQueue.splice(5, 1),
      (e: DrawExport) =>
        e.preQueue.splice(7, 0, { joinIndex: 7, pseudonym: 'a'.repeat(32), place: null }),
      (e: DrawExport) => (e.preQueue[3].pseudonym = 'b'.repeat(32)),
    ]) {
      const { published, exported } = drawnSale();
      change(exported);
      expect(verifyDraw(published, exported)).toMatchObject({
        ok: false,
        problem: expect.stringContaining('does not hash to the published digest'),
      });
    }
  });

  it('should refuse a secret that is not the one committed to, and a seed the secret does not give', () => {
    const other = drawnSale();
    const { published, exported } = drawnSale();
    const secret = { ...published, secret: other.published.secret };
    expect(verifyDraw(secret, { ...exported, secret: secret.secret })).toMatchObject({
      ok: false,
      problem: expect.stringContaining('commitment'),
    });
    const seed = { ...published, seed: other.published.seed };
    expect(verifyDraw(seed, { ...exported, seed: seed.seed })).toMatchObject({
      ok: false,
      problem: expect.stringContaining('seed'),
    });
  });

  it('should refuse a later joiner admitted ahead of an earlier one, and a sale not drawn yet', () => {
    const { published, exported } = drawnSale();
    [exported.after[0].place, exported.after[1].place] = [41, 40];
    expect(verifyDraw(published, exported)).toMatchObject({ ok: false, place: 40 });
    const undrawn = { goodsId: 9, seedCommitment: published.seedCommitment, drawn: false };
    expect(verifyDraw(undrawn, { ...undrawn, preQueue: [], after: [] })).toMatchObject({
      ok: false,
      problem: expect.stringContaining('not drawn'),
    });
  });
});
