import { describe, expect, it } from 'vitest';
import { DatabasePurchaseService } from '../src/modules/seckill/database-purchase.service.js';
import { PurchaseAvailabilityService } from '../src/modules/availability/purchase-availability.service.js';
import { bearer, createSale, useApp, waitFor } from './support/harness.js';

// A memo far longer than the test: only the stock-back announcement can reopen a sale in time.
const env = { SOLD_OUT_MEMO_MS: '60000' };

describe('sold-out memo across two instances', () => {
  const a = useApp(env);
  const b = useApp(env);

  const buy = (http: typeof a.http, goodsId: number, userId: number) =>
    http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));

  it('should answer a sold-out crowd from memory without spending rate-limit budget, and reopen on every instance when a cancel returns stock', async () => {
    const goodsId = await createSale(a.http, { stock: 2 });
    await buy(a.http, goodsId, 1101).expect(202);
    const kept = await buy(b.http, goodsId, 1104).set('Idempotency-Key', 'k-1104').expect(202);
    expect((await buy(b.http, goodsId, 1102).expect(409)).body.code).toBe('SOLD_OUT');

    // Twelve clicks in well under a second, over the per-user limit of 5 a second: no 429.
    for (let click = 0; click < 12; click++) {
      expect((await buy(b.http, goodsId, 1102).expect(409)).body.code).toBe('SOLD_OUT');
    }
    // Answered before Nest, and still the contract's answer: headers, 401 for no token.
    const fromMemory = await buy(b.http, goodsId, 1102).expect(409);
    expect(fromMemory.body).toEqual({ statusCode: 409, code: 'SOLD_OUT', message: 'Sold out' });
    expect(fromMemory.headers['x-content-type-options']).toBe('nosniff');
    await b.http.post(`/api/v1/seckill/${goodsId}`).expect(401);
    // A retry carrying its Idempotency-Key still gets its own stored 202.
    const replayed = await buy(b.http, goodsId, 1104).set('Idempotency-Key', 'k-1104').expect(202);
    expect(replayed.body).toEqual(kept.body);

    const [order] = await waitFor(async () => {
      const rows = (await a.stores.orders(goodsId)).filter((row) => Number(row.user_id) === 1101);
      return rows.length === 1 ? rows : null;
    });
    await a.http
      .post(`/api/v1/orders/${order.order_no}/cancel`)
      .set('Authorization', bearer(1101))
      .expect(200);

    await waitFor(async () => (await buy(b.http, goodsId, 1102)).status === 202, {
      timeoutMs: 5_000,
      what: 'the other instance to sell the returned unit',
    });
    expect((await buy(a.http, goodsId, 1103).expect(409)).body.code).toBe('SOLD_OUT');
    const active = await waitFor(async () => {
      const rows = (await a.stores.orders(goodsId)).filter((row) => row.status !== 'CANCELLED');
      return rows.length === 2 ? rows : null;
    });
    expect(active.map((row) => Number(row.user_id)).sort()).toEqual([1102, 1104]);
    expect(await a.stores.redisStock(goodsId)).toBe(0);
  });

  it('should sell exactly the stock to a crowd spread over both instances', async () => {
    const goodsId = await createSale(a.http, { stock: 10 });
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => buy(i % 2 ? a.http : b.http, goodsId, 1_200 + i)),
    );
    expect(answers.filter((answer) => answer.status === 202)).toHaveLength(10);
    for (const answer of answers.filter((response) => response.status !== 202)) {
      expect(answer.body.code).toBe('SOLD_OUT');
    }
    const orders = await waitFor(async () => {
      const rows = await a.stores.orders(goodsId);
      return rows.length === 10 ? rows : null;
    });
    expect(new Set(orders.map((row) => row.user_id)).size).toBe(10);
    expect(await a.stores.mysqlStock(goodsId)).toBe(0);
  });
});

describe('the database fallback with SOLD_OUT_MEMO_MS=0 (the memo off)', () => {
  const t = useApp({ SOLD_OUT_MEMO_MS: '0' });

  it('should sell a unit a cancel gave back at once, not answer SOLD_OUT from memory', async () => {
    const goodsId = await createSale(t.http, { stock: 1, preheat: false });
    // Opened to the fallback, as after a barrier had passed.
    await t.stores.mysql.query('UPDATE seckill_goods SET fallback_open = 1 WHERE id = ?', [
      goodsId,
    ]);
    const fallback = t.app.get(DatabasePurchaseService);
    const ticket = t.app.get(PurchaseAvailabilityService).ticket(goodsId);
    await fallback.purchase(ticket, 1301, 1);
    await expect(fallback.purchase(ticket, 1302, 1)).rejects.toMatchObject({ code: 'SOLD_OUT' });
    const [order] = await t.stores.orders(goodsId);
    await t.http
      .post(`/api/v1/orders/${order.order_no}/cancel`)
      .set('Authorization', bearer(1301))
      .expect(200);

    await expect(fallback.purchase(ticket, 1302, 1)).resolves.toMatchObject({ status: 'QUEUED' });
    expect(await t.stores.mysqlStock(goodsId)).toBe(0);
  });
});
