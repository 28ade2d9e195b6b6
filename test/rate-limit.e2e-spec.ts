import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createSale, startApp, Stores, waitFor, type TestApp } from './support/harness.js';
import { addressSpellings } from './support/address-spellings.js';

/** Rate limits, spent in Redis: one budget per user, per client address, and (if on) for all. */
describe('rate limits', () => {
  const stores = new Stores();
  const apps: TestApp[] = [];

  const start = async (env: Record<string, string>) => {
    const app = await startApp(env);
    apps.push(app);
    return app;
  };

  /** Long windows make the counts exact; the keys are dropped after each test. */
  const MINUTE_WINDOW = { THROTTLE_WINDOW_MS: '60000' };

  afterEach(async () => {
    while (apps.length > 0) await apps.pop()!.close();
    const keys = await stores.redis.keys('seckill:throttle:*');
    if (keys.length > 0) await stores.redis.del(...keys);
  });

  afterAll(async () => {
    await stores.close();
  });

  const purchase = (t: TestApp, goodsId: number, userId: number, forwardedFor?: string) => {
    const call = t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    return forwardedFor !== undefined ? call.set('X-Forwarded-For', forwardedFor) : call;
  };

  async function purchasesCounted(t: TestApp): Promise<number> {
    const text = (await t.http.get('/metrics').expect(200)).text;
    return text
      .split('\n')
      .filter((line) => line.startsWith('seckill_purchases_total{'))
      .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
  }

  describe('with the default limits', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await startApp();
    });

    afterAll(async () => {
      await t.close();
    });

    it("should let a user's double click through to the purchase itself", async () => {
      const goodsId = await createSale(t.http, { stock: 5 });

      const statuses = (await Promise.all([purchase(t, goodsId, 301), purchase(t, goodsId, 301)]))
        .map((response) => response.status)
        .sort();

      expect(statuses).toEqual([202, 409]);
    });

    it('should answer a user hammering the purchase route with 429 and Retry-After, and sell them one item at most', async () => {
      const goodsId = await createSale(t.http, { stock: 5 });
      const before = await purchasesCounted(t);

      const responses = await Promise.all(
        Array.from({ length: 40 }, () => purchase(t, goodsId, 302)),
      );

      const throttled = responses.filter((response) => response.status === 429);
      // A fixed 1 s window of 5: at most two windows' worth reach the purchase.
      expect(throttled.length).toBeGreaterThanOrEqual(30);
      for (const response of throttled) {
        expect(response.body).toMatchObject({
          statusCode: 429,
          code: 'TOO_MANY_REQUESTS',
          message: expect.any(String),
        });
        expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      expect(responses.filter((response) => response.status === 202)).toHaveLength(1);
      // Throttled requests never reached the purchase service (no lock, no Lua).
      expect((await purchasesCounted(t)) - before).toBe(40 - throttled.length);
      await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
      expect(await stores.redisStock(goodsId)).toBe(4);
      expect(await stores.orders(goodsId)).toHaveLength(1);
    });
  });

  it('should share the per-user budget between two app instances', async () => {
    const env = { ...MINUTE_WINDOW, THROTTLE_PURCHASE_USER_LIMIT: '3' };
    const a = await start(env);
    const b = await start(env);
    const goodsId = await createSale(a.http, { stock: 5 });

    for (let i = 0; i < 3; i++) expect((await purchase(a, goodsId, 311)).status).not.toBe(429);
    const fourth = await purchase(b, goodsId, 311).expect(429);

    expect(fourth.body.code).toBe('TOO_MANY_REQUESTS');
    expect(Number(fourth.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(fourth.headers['retry-after'])).toBeLessThanOrEqual(60);
    // Another user still gets through on either instance.
    await purchase(b, goodsId, 312).expect(202);
  });

  it('should not let a spoofed X-Forwarded-For escape the per-IP limit when the peer is not a trusted proxy', async () => {
    const t = await start({ ...MINUTE_WINDOW, THROTTLE_PURCHASE_IP_LIMIT: '10' });
    const goodsId = await createSale(t.http, { stock: 100 });

    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) => purchase(t, goodsId, 320 + i, `198.51.100.${i + 1}`)),
    );

    expect(responses.filter((response) => response.status !== 429)).toHaveLength(10);
    expect(responses.filter((response) => response.status === 429)).toHaveLength(20);
    expect(await stores.redisStock(goodsId)).toBe(90);
  });

  it('should give each client behind a trusted proxy its own IP budget', async () => {
    const t = await start({
      ...MINUTE_WINDOW,
      THROTTLE_PURCHASE_IP_LIMIT: '10',
      TRUSTED_PROXIES: '127.0.0.1',
    });
    const goodsId = await createSale(t.http, { stock: 100 });

    const distinct = await Promise.all(
      Array.from({ length: 30 }, (_, i) => purchase(t, goodsId, 360 + i, `198.51.100.${i + 1}`)),
    );
    expect(distinct.map((response) => response.status)).toEqual(Array(30).fill(202));

    // A client that prepends made-up hops still counts as the address the proxy saw.
    const spoofed = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        purchase(t, goodsId, 400 + i, `203.0.113.${i + 1}, 192.0.2.77`),
      ),
    );
    expect(spoofed.filter((response) => response.status === 429)).toHaveLength(5);
  });

  it('should spend one per-address budget for every port and form of an address behind a trusted proxy', async () => {
    const t = await start({
      ...MINUTE_WINDOW,
      THROTTLE_PURCHASE_IP_LIMIT: '10',
      TRUSTED_PROXIES: '127.0.0.1',
    });
    const goodsId = await createSale(t.http, { stock: 100 });

    const byPort = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        purchase(t, goodsId, 460 + i, `198.51.100.77:${10_000 + i}`),
      ),
    );
    const forms = addressSpellings('198.51.100.76');
    const byForm = await Promise.all(
      Array.from({ length: 21 }, (_, i) => purchase(t, goodsId, 500 + i, forms[i % forms.length])),
    );

    expect(byPort.filter((response) => response.status === 202)).toHaveLength(10);
    expect(byPort.filter((response) => response.status === 429)).toHaveLength(20);
    expect(byForm.filter((response) => response.status === 202)).toHaveLength(10);
    expect(byForm.filter((response) => response.status === 429)).toHaveLength(11);
    expect(await stores.redisStock(goodsId)).toBe(80);
  });

  it("should limit a trusted proxy's own requests (no X-Forwarded-For, or none readable) per user only, not on one budget for every buyer behind it", async () => {
    const t = await start({
      ...MINUTE_WINDOW,
      THROTTLE_PURCHASE_IP_LIMIT: '10',
      THROTTLE_PURCHASE_USER_LIMIT: '2',
      TRUSTED_PROXIES: '127.0.0.1',
    });
    const goodsId = await createSale(t.http, { stock: 100 });

    // Thirty buyers whose proxy names none of them: three times the per-address limit.
    const unnamed = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        purchase(t, goodsId, 530 + i, i % 3 === 0 ? undefined : i % 3 === 1 ? 'garbage' : ''),
      ),
    );
    expect(unnamed.map((response) => response.status)).toEqual(Array(30).fill(202));

    // Each of them is still limited on its own budget.
    const hammering = [];
    for (let i = 0; i < 4; i++) hammering.push((await purchase(t, goodsId, 570)).status);
    expect(hammering).toEqual([202, 409, 429, 429]);
    // A client it names has a budget of its own, as before.
    const named = await Promise.all(
      Array.from({ length: 12 }, (_, i) => purchase(t, goodsId, 580 + i, '198.51.100.78')),
    );
    expect(named.filter((response) => response.status === 429)).toHaveLength(2);
    expect(await stores.redisStock(goodsId)).toBe(100 - 31 - 10);
  });

  it('should cap all purchases together when a global ceiling is set', async () => {
    const t = await start({
      ...MINUTE_WINDOW,
      THROTTLE_PURCHASE_GLOBAL_LIMIT: '5',
      TRUSTED_PROXIES: '127.0.0.1',
    });
    const goodsId = await createSale(t.http, { stock: 100 });

    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) => purchase(t, goodsId, 420 + i, `198.51.100.${i + 1}`)),
    );

    expect(responses.filter((response) => response.status === 202)).toHaveLength(5);
    expect(responses.filter((response) => response.status === 429)).toHaveLength(7);
  });

  it('should limit reads on their own budget, apart from purchases', async () => {
    const t = await start({ ...MINUTE_WINDOW, THROTTLE_READ_USER_LIMIT: '3' });
    const goodsId = await createSale(t.http, { stock: 5 });
    const poll = () =>
      t.http.get(`/api/v1/seckill/${goodsId}/result`).set('Authorization', bearer(440));

    for (let i = 0; i < 3; i++) await poll().expect(200);
    const over = await poll().expect(429);

    expect(over.body.code).toBe('TOO_MANY_REQUESTS');
    expect(over.headers['retry-after']).toBeDefined();
    await purchase(t, goodsId, 440).expect(202);
    // A public read (no user) is limited by address only, and stays open here.
    await t.http.get(`/api/v1/goods/${goodsId}`).expect(200);
  });

  it('should not limit admin and health routes', async () => {
    const t = await start({ ...MINUTE_WINDOW, THROTTLE_READ_IP_LIMIT: '1' });

    for (let i = 0; i < 5; i++) await t.http.get('/health/live').expect(200);
    await createSale(t.http);
    await createSale(t.http);
  });
});
