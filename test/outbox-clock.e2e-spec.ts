import { afterEach, describe, expect, it, vi } from 'vitest';
import { OutboxSweeperService } from '../src/modules/messaging/outbox-sweeper.service.js';
import { SaleReadsStore } from '../src/modules/sale-store/sale-reads.store.js';
import { acceptWithoutPublishing, createSale, useApp } from './support/harness.js';

describe('outbox sweeper and clock skew', () => {
  const t = useApp();

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("should not republish a live purchase when this host's clock runs an hour ahead of Redis's", async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const order = await acceptWithoutPublishing(t.app, goodsId, 301);
    const sweeper = t.app.get(OutboxSweeperService);
    // Other tests' purchases left in their outboxes are stale by any clock: settle them first.
    await sweeper.sweep();

    vi.spyOn(Date, 'now').mockReturnValue(Date.now() + 3_600_000);
    const republishedWhileSkewed = await sweeper.sweep();
    vi.restoreAllMocks();

    expect(republishedWhileSkewed).toBe(0);
    expect(await t.stores.redis.zscore(`seckill:{${goodsId}}:outbox`, order.requestId)).not.toBe(
      null,
    );
    // By Redis's own clock the entry does go stale, and is then republished.
    const redisNow = await t.app.get(SaleReadsStore).serverTimeMs(goodsId);
    expect(await sweeper.sweep(redisNow + 60_000)).toBe(1);
  });
});
