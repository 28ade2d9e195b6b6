import { describe, expect, it } from 'vitest';
import { createSale, doubleClickCrowd, expectCrowdSold, useApp } from './support/harness.js';

describe('a crowd buying at once', () => {
  // Default rate limits; the test client is the trusted proxy of a crowd of distinct addresses.
  const t = useApp({ TRUSTED_PROXIES: '127.0.0.1' });
  const stores = t.stores;

  it('should sell exactly 100 items to 100 distinct users when 1,000 users from distinct addresses each click twice, rate limits on', async () => {
    const stock = 100;
    const goodsId = await createSale(t.http, { stock });
    const users = Array.from({ length: 1_000 }, (_, i) => 50_000 + i);
    const responses = await doubleClickCrowd([t.http], goodsId, users);

    await expectCrowdSold(stores, goodsId, stock, responses);
    expect(await stores.mysqlStock(goodsId)).toBe(0);
    expect(await stores.redisStock(goodsId)).toBe(0);
    expect(Object.keys(await stores.redisBuyers(goodsId))).toHaveLength(stock);
  });
});
