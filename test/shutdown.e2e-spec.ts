import { afterAll, describe, expect, it } from 'vitest';
import { recordChaos, secondsSince } from './support/chaos-report.js';
import { bearer, startApp, Stores, waitFor, type TestApp } from './support/harness.js';
import { ChildApp } from './support/child-app.js';

describe('graceful shutdown', () => {
  const stores = new Stores();
  let drainer: TestApp | undefined;

  afterAll(async () => {
    await drainer?.close();
    await stores.close();
  });

  it('should exit 0 on SIGTERM mid-burst and lose none of the purchases it accepted', async () => {
    // One test machine plays a crowd of 300 here: its address must not hit the per-IP limit.
    const server = await ChildApp.start({ THROTTLE_PURCHASE_IP_LIMIT: '0' });
    const goodsId = await server.createSale(150);

    let firstAccepted!: () => void;
    const someAccepted = new Promise<void>((resolve) => (firstAccepted = resolve));
    const burst = Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        server
          .post(`/api/v1/seckill/${goodsId}`, bearer(70_000 + i))
          .then((response) => {
            if (response.status === 202) firstAccepted();
            return response.status;
          })
          .catch(() => 0),
      ),
    );
    await someAccepted;
    const stopAt = Date.now();
    const exitCode = await server.stop('SIGTERM');
    const drainSeconds = secondsSince(stopAt);
    const statuses = await burst;

    expect(exitCode, server.log).toBe(0);
    expect(server.log).toContain('drained');
    const accepted = statuses.filter((status) => status === 202).length;
    expect(accepted).toBeGreaterThan(0);
    // Every answer was a clean one: accepted, refused, unavailable, or never connected.
    for (const status of statuses) expect([0, 202, 409, 503]).toContain(status);

    // Whatever the stopped instance left in the queue, the next instance writes.
    drainer = await startApp();
    const orders = await waitFor(
      async () => {
        const rows = await stores.orders(goodsId);
        return rows.length >= accepted ? rows : null;
      },
      { timeoutMs: 30_000, what: `${accepted} orders` },
    );
    await recordChaos(stores, {
      scenario: 'SIGTERM mid-burst',
      fault: `graceful stop; the drain took ${drainSeconds} s`,
      goodsId,
      requests: statuses.length,
      accepted,
      recoveredSeconds: drainSeconds,
    });
    expect(orders).toHaveLength(accepted);
    expect(await stores.mysqlStock(goodsId)).toBe(150 - accepted);
    expect(await stores.redisStock(goodsId)).toBe(150 - accepted);
  });
});
