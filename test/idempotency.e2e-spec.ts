import { describe, expect, it } from 'vitest';
import { bearer, createSale, waitFor, useApp } from './support/harness.js';

describe('Idempotency-Key on purchases', () => {
  const t = useApp();
  const stores = t.stores;

  const buy = (goodsId: number, userId: number, key?: string, body?: object) => {
    let call = t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    if (key !== undefined) call = call.set('Idempotency-Key', key);
    return body ? call.send(body) : call;
  };

  it('should answer a retry with the same key with the original 202 and requestId, and write one order', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });

    const first = await buy(goodsId, 801, 'retry-1').expect(202);
    const retry = await buy(goodsId, 801, 'retry-1').expect(202);

    expect(retry.body).toEqual(first.body);
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
    const orders = await stores.orders(goodsId);
    expect(orders).toHaveLength(1);
    expect(orders[0].request_id).toBe(first.body.requestId);
    expect(await stores.redisStock(goodsId)).toBe(4);
  });

  it('should let only one of concurrent retries with the same key attempt the purchase', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });

    const responses = await Promise.all(
      Array.from({ length: 4 }, () => buy(goodsId, 802, 'burst-key')),
    );

    const accepted = responses.filter((response) => response.status === 202);
    expect(accepted).toHaveLength(1);
    for (const response of responses.filter((r) => r.status !== 202)) {
      expect(response.status).toBe(409);
      expect(response.body.code).toBe('DUPLICATE_REQUEST');
    }
    const retry = await buy(goodsId, 802, 'burst-key').expect(202);
    expect(retry.body.requestId).toBe(accepted[0].body.requestId);
    expect(await stores.redisStock(goodsId)).toBe(4);
  });

  it('should refuse the same key for another goods with 400 and take nothing', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const other = await createSale(t.http, { stock: 5 });
    await buy(goodsId, 803, 'one-key').expect(202);

    const response = await buy(other, 803, 'one-key').expect(400);

    expect(response.body).toEqual({
      statusCode: 400,
      code: 'VALIDATION_FAILED',
      message: expect.stringMatching(/Idempotency-Key/),
    });
    expect(await stores.redisStock(other)).toBe(5);
  });

  it('should scope keys to the user', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });

    const mine = await buy(goodsId, 804, 'shared-key').expect(202);
    const theirs = await buy(goodsId, 805, 'shared-key').expect(202);

    expect(theirs.body.requestId).not.toBe(mine.body.requestId);
  });

  it('should replay a SOLD_OUT refusal, but try again after a refusal that may change', async () => {
    const goodsId = await createSale(t.http, { stock: 1 });
    await buy(goodsId, 806).expect(202);
    const soldOut = await buy(goodsId, 807, 'late').expect(409);
    expect(soldOut.body.code).toBe('SOLD_OUT');
    // Stock comes back (as after a cancel): the stored answer still stands for this key.
    await stores.redis.incr(`seckill:{${goodsId}}:stock`);
    expect((await buy(goodsId, 807, 'late').expect(409)).body).toEqual(soldOut.body);
    // A new key is a new purchase.
    await buy(goodsId, 807, 'later').expect(202);

    const upcoming = await createSale(t.http, { startsInMs: 1_500, stock: 1 });
    expect((await buy(upcoming, 808, 'early').expect(409)).body.code).toBe('SALE_NOT_STARTED');
    await waitFor(
      async () => (await t.http.get(`/api/v1/goods/${upcoming}`)).body.status === 'ACTIVE',
      { what: 'the sale to open', intervalMs: 100 },
    );
    await buy(upcoming, 808, 'early').expect(202);
  });

  it('should keep a stored answer until after the sale ends', async () => {
    const goodsId = await createSale(t.http, { stock: 5, lastsMs: 3_600_000 });
    await buy(goodsId, 809, 'ttl-key').expect(202);

    const ttlMs = await stores.redis.pttl('seckill:idem:{user:809}:ttl-key');

    // Sale ends in ~1 h, plus the 1 h default retention.
    expect(ttlMs).toBeGreaterThan(2 * 3_600_000 - 60_000);
    expect(ttlMs).toBeLessThanOrEqual(2 * 3_600_000);
  });

  it.each([['x'.repeat(65)], ['has space'], ['']])(
    'should refuse the malformed key %j with 400 and take nothing',
    async (key) => {
      const goodsId = await createSale(t.http, { stock: 5 });

      const response = await buy(goodsId, 810, key).expect(400);

      expect(response.body.code).toBe('VALIDATION_FAILED');
      expect(await stores.redisStock(goodsId)).toBe(5);
    },
  );
});
