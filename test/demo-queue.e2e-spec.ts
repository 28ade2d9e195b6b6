import { describe, expect, it } from 'vitest';
import { evaluateQueueChecks, queueFigures } from '../scripts/demo/queue-report.js';
import {
  findBoughtWithoutAdmission,
  runOpenComparison,
  runQueueSale,
} from '../scripts/demo/queue-sale.js';
import type { DemoOptions } from '../scripts/demo/options.js';
import { signToken } from '../scripts/lib/jwt.js';
import { useApp, waitFor } from './support/harness.js';
import { baseUrlOf } from './support/sse.js';

/** `npm run demo -- --queue`'s crowd, smaller: the demo's own phases and checks, on the test app. */
const OPTIONS = {
  stock: 20,
  buyers: 200,
  scripts: 10,
  admitPerSecond: 20,
  admissionTtlSeconds: 2,
  walkAway: 0.5,
  concurrency: 50,
} as DemoOptions;

describe('the demo of a queue sale (npm run demo -- --queue)', () => {
  // As the demo's server: rate limits and the autoban on, the buyers' addresses believed.
  const t = useApp({ TRUSTED_PROXIES: '127.0.0.1,::1' });

  it('should sell every unit through the waiting room, pass its checks, and show the open sale giving the scripts more', async () => {
    const baseUrl = baseUrlOf(t.app);
    const admin = signToken({ userId: 1, admin: true });

    const run = await runQueueSale(baseUrl, admin, OPTIONS);
    const orders = await waitFor(
      async () => {
        const rows = await t.stores.orders(run.goodsId);
        return rows.length === run.accepted.size ? rows : null;
      },
      { what: "the queue sale's orders" },
    );
    run.boughtWithoutAdmission = await findBoughtWithoutAdmission(
      baseUrl,
      run.goodsId,
      orders.map((order) => Number(order.user_id)),
    );
    run.open = await runOpenComparison(baseUrl, admin, run);

    const figures = queueFigures(run);
    const checks = evaluateQueueChecks(run, figures);
    expect(checks.filter((check) => !check.ok)).toEqual([]);
    expect(new Set(orders.map((order) => Number(order.user_id))).size).toBe(OPTIONS.stock);
    // Half the people walk away (none of the first twenty admitted doing so is a 1-in-500,000
    // chance): their places go on, one admission for each.
    expect(figures.lapsed).toBeGreaterThan(0);
    expect(figures.admitted).toBe(OPTIONS.stock + figures.lapsed);
    // Every script fires at the start of the open sale, before any person has thought it over.
    expect(run.open.scriptsSold).toBe(OPTIONS.scripts);
  });
});
