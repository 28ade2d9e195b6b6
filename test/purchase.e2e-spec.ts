import { describe, expect, it } from 'vitest';
import { bearer, createSale, waitFor, useApp } from './support/harness.js';

describe('purchase path (real MySQL, Redis, RabbitMQ)', () => {
  const t = useApp();
  const stores = t.stores;

  const buy = (goodsId: number, userId: number, body?: object) => {
    const call = t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    return body === undefined ? call : call.send(body);
  };

  it('should accept a purchase, write one order and report SUCCESS with its order number', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const accepted = await buy(goodsId, 101).expect(202);
    expect(accepted.body).toEqual({ status: 'QUEUED', requestId: expect.any(String) });

    const result = await waitFor(
      async () => {
        const response = await t.http
          .get(`/api/v1/seckill/${goodsId}/result`)
          .set('Authorization', bearer(101))
          .expect(200);
        return response.body.status === 'SUCCESS' ? response.body : null;
      },
      { what: 'SUCCESS result' },
    );
    expect(result).toMatchObject({ status: 'SUCCESS', orderNo: expect.any(String) });

    const order = await t.http
      .get(`/api/v1/orders/${result.orderNo}`)
      .set('Authorization', bearer(101))
      .expect(200);
    expect(order.body).toMatchObject({
      orderNo: result.orderNo,
      userId: 101,
      goodsId,
      quantity: 1,
      status: 'PENDING_PAYMENT',
    });
    expect(Date.parse(order.body.expireAt)).toBeGreaterThan(Date.parse(order.body.createdAt));

    const rows = await stores.orders(goodsId);
    expect(rows).toHaveLength(1);
    expect(rows[0].request_id).toBe(accepted.body.requestId);
    expect(await stores.mysqlStock(goodsId)).toBe(4);
    expect(await stores.redisStock(goodsId)).toBe(4);
    await waitFor(async () => (await stores.inflight(goodsId)) === 0, {
      what: 'in-flight drained',
    });
  });

  it("should leave neither the buyer's lock nor an outbox entry behind a confirmed purchase", async () => {
    const goodsId = await createSale(t.http, { stock: 5, perUserLimit: 1 });
    const accepted = await buy(goodsId, 103).expect(202);

    // Both go in the one round trip after the answer (lua/purchase-unlock.lua).
    await waitFor(
      async () =>
        (await stores.redis.exists(`seckill:{${goodsId}}:lock:user:103`)) === 0 &&
        (await stores.redis.zscore(`seckill:{${goodsId}}:outbox`, accepted.body.requestId)) ===
          null,
      { what: 'the lock dropped and the outbox entry gone' },
    );
  });

  it('should reject a second purchase by the same user', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    await buy(goodsId, 102).expect(202);
    const second = await buy(goodsId, 102).expect(409);
    expect(second.body).toEqual({
      statusCode: 409,
      code: 'ALREADY_PURCHASED',
      message: expect.any(String),
    });
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'one order' });
    expect(await stores.redisStock(goodsId)).toBe(4);
  });

  it('should answer SOLD_OUT once the stock is gone', async () => {
    const goodsId = await createSale(t.http, { stock: 1 });
    await buy(goodsId, 103).expect(202);
    const late = await buy(goodsId, 104).expect(409);
    expect(late.body.code).toBe('SOLD_OUT');
    const goods = await t.http.get(`/api/v1/goods/${goodsId}`).expect(200);
    expect(goods.body).toMatchObject({
      id: goodsId,
      totalStock: 1,
      remaining: 0,
      status: 'SOLD_OUT',
    });
  });

  it('should let a user buy several units up to the per-user limit in one order', async () => {
    const goodsId = await createSale(t.http, { stock: 10, perUserLimit: 3 });
    await buy(goodsId, 105, { quantity: 3 }).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
    expect((await stores.orders(goodsId))[0].quantity).toBe(3);
    expect(await stores.mysqlStock(goodsId)).toBe(7);
    expect((await buy(goodsId, 105, { quantity: 1 }).expect(409)).body.code).toBe(
      'ALREADY_PURCHASED',
    );
    expect((await buy(goodsId, 106, { quantity: 4 }).expect(400)).body.code).toBe(
      'VALIDATION_FAILED',
    );
    expect(await stores.redisStock(goodsId)).toBe(7);
  });

  it('should refuse a sale that has not started, has ended, or is not preheated', async () => {
    const upcoming = await createSale(t.http, { startsInMs: 60_000 });
    expect((await buy(upcoming, 107).expect(409)).body.code).toBe('SALE_NOT_STARTED');

    const ended = await createSale(t.http, { startsInMs: -10_000, lastsMs: 5_000 });
    expect((await buy(ended, 107).expect(409)).body.code).toBe('SALE_ENDED');

    const cold = await createSale(t.http, { preheat: false });
    expect((await buy(cold, 107).expect(409)).body.code).toBe('NOT_PREHEATED');
    const coldUpcoming = await createSale(t.http, { preheat: false, startsInMs: 60_000 });
    expect((await buy(coldUpcoming, 107).expect(409)).body.code).toBe('SALE_NOT_STARTED');

    for (const goodsId of [upcoming, ended, cold, coldUpcoming]) {
      expect(await stores.orders(goodsId)).toHaveLength(0);
    }
    expect(await stores.redisStock(upcoming)).toBe(10);
    expect(await stores.redisStock(cold)).toBeNull();
  });

  it('should not reset what was sold when a live sale is preheated again', async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    await buy(goodsId, 108).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
    const again = await t.http
      .post(`/api/v1/admin/goods/${goodsId}/preheat`)
      .set('Authorization', bearer(1, true))
      .expect(200);
    expect(again.body).toMatchObject({ goodsId, stock: 2 });
    expect(await stores.redisStock(goodsId)).toBe(2);
    expect((await buy(goodsId, 108).expect(409)).body.code).toBe('ALREADY_PURCHASED');
  });

  it('should report NONE for a user who has not bought', async () => {
    const goodsId = await createSale(t.http);
    const response = await t.http
      .get(`/api/v1/seckill/${goodsId}/result`)
      .set('Authorization', bearer(109))
      .expect(200);
    expect(response.body).toEqual({ status: 'NONE' });
  });
});
