import { describe, expect, it } from 'vitest';
import { bucketKeys } from '../src/infra/redis/seckill-keys.js';
import { DeductCode, LedgerScripts } from '../src/modules/sale-store/ledger.scripts.js';
import { LoanCode, LoanScripts } from '../src/modules/sale-store/loan.scripts.js';
import { bucketOrder, homeBucket } from '../src/common/stock-buckets.js';
import { encodeOrderMessage } from '../src/modules/messaging/order-message.js';
import { OutboxSweeperService } from '../src/modules/messaging/outbox-sweeper.service.js';
import {
  bearer,
  consistentReconcile,
  counter,
  createSale,
  newPurchase,
  purchaseResult,
  useApp,
  waitFor,
} from './support/harness.js';
import { bucketStocks, usersHomed } from './support/stock-buckets.js';

describe('a loan between stock buckets, on one Redis', () => {
  // The sweeps are run by the test, each at the time it stands for; loans older than a minute
  // are the sweeper's.
  const t = useApp({ OUTBOX_SWEEP_ENABLED: 'false', PURCHASE_LOCK_TTL_MS: '60000' });
  const stores = t.stores;

  it('should not give a loan back when its purchase was recorded, even long after its order completed, was cancelled and the buyer bought again', async () => {
    const goodsId = await createSale(t.http, { stock: 2, stockShards: 2 });
    const [neighbour, userId] = usersHomed(83_000, 2, 2, (home) => home === 0);
    const home = homeBucket(userId, 2);
    const lenderBucket = bucketOrder(userId, 2)[0];
    expect(lenderBucket).not.toBe(home);
    const homeKeys = bucketKeys(goodsId, 2, home);
    const lender = bucketKeys(goodsId, 2, lenderBucket);
    // The home bucket's only unit goes to a neighbour: the buyer's purchase borrows.
    await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(neighbour))
      .expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 1);

    // The borrow and the record ran, then the instance died: the loan's drop and the publish
    // never happened.
    const [ledger, loans] = [t.app.get(LedgerScripts), t.app.get(LoanScripts)];
    const order = newPurchase(goodsId, userId);
    expect((await loans.loan(lender, order.requestId, 1, userId, home)).code).toBe(LoanCode.Lent);
    const recorded = await ledger.deduct(
      homeKeys,
      userId,
      1,
      order.requestId,
      encodeOrderMessage(order),
      lenderBucket,
    );
    expect(recorded.code).toBe(DeductCode.Accepted);

    // The outbox sweeper publishes it (the loan is younger than the purchase lock: kept).
    const sweeper = t.app.get(OutboxSweeperService);
    // At least this one: earlier test files may have left stale entries in the shared Redis db.
    expect(await sweeper.sweep(Date.now() + 10_000)).toBeGreaterThanOrEqual(1);
    await waitFor(
      async () => (await purchaseResult(t.http, goodsId, userId)).status === 'SUCCESS',
      {
        what: 'the borrowed purchase to become an order',
      },
    );
    expect(await stores.redis.hexists(lender.loans, order.requestId)).toBe(1);

    // The loan sweep is held up for more than ten minutes: the completed log is trimmed by then.
    await stores.redis.del(homeKeys.completed);
    // The buyer cancels (the unit comes back to the home bucket) and buys it again.
    await t.http
      .post(`/api/v1/orders/${order.orderNo}/cancel`)
      .set('Authorization', bearer(userId))
      .expect(200);
    await waitFor(async () => (await bucketStocks(stores.redis, goodsId, 2))[home] === 1, {
      what: 'the cancelled unit back at home',
    });
    const rebuy = await waitFor(async () => {
      const response = await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(userId));
      return response.status === 202 ? (response.body as { requestId: string }) : null;
    });
    await waitFor(
      async () => {
        const result = await purchaseResult(t.http, goodsId, userId);
        return result.status === 'SUCCESS' && result.requestId === rebuy.requestId;
      },
      { what: "the rebuy's order, its result over the first one's" },
    );

    const sweptBefore = await counter(t.app, 'seckill_stock_loans_total', 'swept');
    await sweeper.sweep(Date.now() + 120_000);

    expect(await stores.redis.hlen(lender.loans)).toBe(0);
    expect(await counter(t.app, 'seckill_stock_loans_total', 'swept')).toBe(sweptBefore);
    expect(await bucketStocks(stores.redis, goodsId, 2)).toEqual([0, 0]);
    expect(await stores.mysqlStock(goodsId)).toBe(0);
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisStock: 0,
      dbStock: 0,
    });
  });
});
