import { describe, expect, it } from 'vitest';
import { evaluateDrawChecks, runDrawSale } from '../scripts/demo/draw-sale.js';
import type { DemoOptions } from '../scripts/demo/options.js';
import { signToken } from '../scripts/lib/jwt.js';
import { useApp, waitFor } from './support/harness.js';
import { baseUrlOf } from './support/sse.js';

/** `npm run demo -- --draw`'s crowd, smaller: the demo's own phases and checks, on the test app. */
const OPTIONS = {
  stock: 20,
  buyers: 200,
  scripts: 10,
  admissionTtlSeconds: 2,
  walkAway: 0.4,
  concurrency: 50,
} as DemoOptions;

describe('the demo of a draw sale (npm run demo -- --draw)', () => {
  // As the demo's server: rate limits and the autoban on, the buyers' addresses believed; the
  // scripts' unpaid orders expire soon, so that every waitlisted entrant is told NOT_SELECTED.
  const t = useApp({ TRUSTED_PROXIES: '127.0.0.1,::1', ORDER_PAYMENT_TIMEOUT_MS: '5000' });

  it('should sell every unit to holders of a right, pass each lapsed right and returned unit down the waitlist, and verify the draw', async () => {
    const run = await runDrawSale(baseUrlOf(t.app), signToken({ userId: 1, admin: true }), OPTIONS);
    const orders = await waitFor(
      async () => {
        const rows = await t.stores.orders(run.goodsId);
        return rows.length === run.accepted.size ? rows : null;
      },
      { what: "the draw sale's orders" },
    );
    const unitsBack = orders
      .filter((order) => order.status === 'CANCELLED')
      .reduce((sum, order) => sum + Number(order.quantity), 0);
    expect(evaluateDrawChecks(run, unitsBack).filter((check) => !check.ok)).toEqual([]);
    expect(orders.filter((order) => order.status !== 'CANCELLED')).toHaveLength(OPTIONS.stock);
    // Four in ten walk away (none of the twenty drawn doing so is a 1-in-27,000 chance): their
    // rights passed on, and the draw held them all.
    expect(run.people.some((person) => person.seen.has('EXPIRED'))).toBe(true);
    expect(run.rightPlaces.length).toBeGreaterThan(OPTIONS.stock);
    expect(run.verified.status).toBe(0);
  });
});
