import { describe, expect, it } from 'vitest';
import {
  adminAuth,
  bearer,
  counter,
  createSale,
  expectOneOrderPerPurchaseTaken,
  ordersOnceSettled,
  purchaseResult,
  token,
  useApp,
  waitFor,
} from './support/harness.js';
import { openConnection, portOf } from './support/raw-http.js';

const request = (method: string, path: string, authorization: string) =>
  `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${authorization}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`;

/** Keeps the event loop busy for `ms`, as a burst of work the process cannot keep up with would. */
function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Busy on purpose: nothing else runs meanwhile.
  }
}

describe('overload: purchases shed at once when the instance is behind', () => {
  const t = useApp({
    OVERLOAD_MAX_IN_FLIGHT: '4',
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '200',
    OVERLOAD_MAX_CONFIRM_WAIT_MS: '0',
    OVERLOAD_RETRY_AFTER_SECONDS: '2',
    // The test's requests all come from 127.0.0.1: no per-address limit in the way.
    THROTTLE_ENABLED: 'false',
  });

  it('should shed purchases past the in-flight bound with 503 OVERLOADED and Retry-After, take nothing for them, shed them again when back before it, and take them once asked after it', async () => {
    const stock = 100;
    const goodsId = await createSale(t.http, { stock });
    const buyers = Array.from({ length: 40 }, (_, i) => 81_000 + i);
    const answers = await Promise.all(
      buyers.map(async (userId) => {
        const response = await t.http
          .post(`/api/v1/seckill/${goodsId}`)
          .set('Authorization', bearer(userId));
        return { userId, response, answeredAt: Date.now() };
      }),
    );
    const taken = answers.filter((a) => a.response.status === 202);
    const shed = answers.filter((a) => a.response.status === 503);
    expect(taken.length + shed.length).toBe(buyers.length);
    expect(shed.length).toBeGreaterThan(0);
    for (const { response } of shed) {
      expect(response.body).toEqual({
        statusCode: 503,
        code: 'OVERLOADED',
        message: expect.stringContaining('nothing was taken'),
      });
      expect(['2', '3', '4']).toContain(response.headers['retry-after']);
    }
    expect(
      await counter(t.app, 'seckill_purchases_shed_total', 'in_flight'),
    ).toBeGreaterThanOrEqual(shed.length);

    // Nothing was taken for a shed purchase: one order per 202, the stock down by as many.
    await ordersOnceSettled(t.stores, goodsId, taken.length);
    const orders = await expectOneOrderPerPurchaseTaken(t.stores, goodsId, stock);
    expect(new Set(orders.map((order) => Number(order.user_id)))).toEqual(
      new Set(taken.map((a) => a.userId)),
    );
    expect((await purchaseResult(t.http, goodsId, shed[0].userId)).status).toBe('NONE');

    // Asked again before the Retry-After given, a shed buyer is shed again with the time left,
    // places free or not; asked again after it, each is taken.
    const early = shed[0];
    const again = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(early.userId))
      .expect(503);
    expect(again.body).toEqual({
      statusCode: 503,
      code: 'OVERLOADED',
      message: expect.stringContaining('before the Retry-After you were given; nothing was taken'),
    });
    expect(Number(again.headers['retry-after'])).toBeLessThanOrEqual(
      Number(early.response.headers['retry-after']),
    );
    expect(await counter(t.app, 'seckill_purchases_shed_total', 'retry_early')).toBe(1);
    for (const { userId, response, answeredAt } of shed) {
      const due = answeredAt + Number(response.headers['retry-after']) * 1_000;
      await waitFor(
        async () => {
          const answer = await t.http
            .post(`/api/v1/seckill/${goodsId}`)
            .set('Authorization', bearer(userId));
          if (answer.status === 202) {
            expect(Date.now()).toBeGreaterThanOrEqual(due - 150);
            return true;
          }
          expect(answer.status).toBe(503);
          expect(Date.now()).toBeLessThan(due);
          return false;
        },
        { timeoutMs: 10_000, intervalMs: 250, what: `buyer ${userId} taken after Retry-After` },
      );
    }
    await ordersOnceSettled(t.stores, goodsId, buyers.length);
    expect(await expectOneOrderPerPurchaseTaken(t.stores, goodsId, stock)).toHaveLength(
      buyers.length,
    );
  });

  it('should shed purchases while the event loop is late, answer health and admin meanwhile, and take purchases again once it caught up', async () => {
    const goodsId = await createSale(t.http, { stock: 10 });
    const port = portOf(t.app);
    const purchases = await Promise.all([1, 2, 3].map(() => openConnection(port)));
    const health = await openConnection(port);
    const admin = await openConnection(port);
    // Every request is on its way before the loop is blocked: the server reads them after it.
    purchases.forEach(({ socket }, i) =>
      socket.write(request('POST', `/api/v1/seckill/${goodsId}`, `Bearer ${token(82_000 + i)}`)),
    );
    health.socket.write(request('GET', '/health/live', ''));
    admin.socket.write(request('GET', `/api/v1/admin/goods/${goodsId}/reconcile`, adminAuth()));
    blockEventLoop(400);

    for (const { answer } of purchases) {
      const { status, headers, body } = await answer;
      expect(status).toBe(503);
      expect(JSON.parse(body)).toMatchObject({ code: 'OVERLOADED' });
      expect(Number(headers['retry-after'])).toBeGreaterThanOrEqual(2);
    }
    expect((await health.answer).status).toBe(200);
    expect((await admin.answer).status).toBe(200);
    expect(
      await counter(t.app, 'seckill_purchases_shed_total', 'event_loop'),
    ).toBeGreaterThanOrEqual(3);
    expect(await t.stores.redisStock(goodsId)).toBe(10);

    // Caught up: the next purchase is taken.
    await waitFor(
      async () =>
        (await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(82_000)))
          .status === 202,
      { what: 'a purchase taken once the loop caught up' },
    );
    await ordersOnceSettled(t.stores, goodsId, 1);
    expect(await expectOneOrderPerPurchaseTaken(t.stores, goodsId, 10)).toHaveLength(1);
  });
});
