import { describe, expect, it } from 'vitest';
import { createSale, doubleClickCrowd, waitFor, useApp } from './support/harness.js';

describe('a crowd buying at once', () => {
  // Default rate limits; the test client is the trusted proxy of a crowd of distinct addresses.
  const t = useApp({ TRUSTED_PROXIES: '127.0.0.1' });
  const stores = t.stores;

  it('should sell exactly 100 items to 100 distinct users when 1,000 users from distinct addresses each click twice, rate limits on', async () => {
    const stock = 100;
    const goodsId = await createSale(t.http, { stock });
    const users = Array.from({ length: 1_000 }, (_, i) => 50_000 + i);
    const responses = await doubleClickCrowd([t.http], goodsId, users);

    const accepted = responses.filter((response) => response.status === 202);
    expect(accepted).toHaveLength(stock);
    expect(new Set(accepted.map((response) => response.userId)).size).toBe(stock);
    const refusals = new Set(responses.filter((r) => r.status !== 202).map((r) => r.code));
    for (const code of refusals) {
      expect(['SOLD_OUT', 'ALREADY_PURCHASED', 'DUPLICATE_REQUEST']).toContain(code);
    }

    const orders = await waitFor(
      async () => {
        const rows = await stores.orders(goodsId);
        return rows.length >= stock ? rows : null;
      },
      { timeoutMs: 30_000, what: `${stock} orders` },
    );
    expect(orders).toHaveLength(stock);
    expect(new Set(orders.map((order) => order.user_id)).size).toBe(stock);
    expect(new Set(orders.map((order) => Number(order.user_id)))).toEqual(
      new Set(accepted.map((response) => response.userId)),
    );
    expect(await stores.mysqlStock(goodsId)).toBe(0);
    expect(await stores.redisStock(goodsId)).toBe(0);
    expect(Object.keys(await stores.redisBuyers(goodsId))).toHaveLength(stock);
    await waitFor(async () => (await stores.inflight(goodsId)) === 0, {
      what: 'in-flight drained',
    });
  });
});
