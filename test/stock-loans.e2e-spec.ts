import { describe, expect, it } from 'vitest';
import { bucketKeys } from '../src/infra/redis/seckill-keys.js';
import { DeductCode, LedgerScripts, RetakeCode } from '../src/modules/sale-store/ledger.scripts.js';
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
import { buyPending, PAYMENT_SECRET, paymentEvent, sendEvent } from './support/payment-provider.js';
import { bucketStocks, usersHomed } from './support/stock-buckets.js';

describe('a loan between stock buckets, on one Redis', () => {
  // The sweeps are run by the test, each at the time it stands for; loans older than a minute
  // are the sweeper's.
  const t = useApp({
    OUTBOX_SWEEP_ENABLED: 'false',
    PURCHASE_LOCK_TTL_MS: '60000',
    PAYMENT_WEBHOOK_SECRET: PAYMENT_SECRET,
  });
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

  it("should settle the loan a late payment's dead attempt left open: given back and borrowed again when never recorded at home, only dropped when it was", async () => {
    const [ledger, loans] = [t.app.get(LedgerScripts), t.app.get(LoanScripts)];
    const sweeper = t.app.get(OutboxSweeperService);
    // One unit per bucket; the late payer's cancelled unit, back at home, sold to a neighbour.
    const cancelledThenSold = async (firstUser: number) => {
      const goodsId = await createSale(t.http, { stock: 2, stockShards: 2 });
      const [late, neighbour] = usersHomed(firstUser, 2, 2, (home) => home === 0);
      const orderNo = await buyPending(t.http, stores, goodsId, late);
      await t.http
        .post(`/api/v1/orders/${orderNo}/cancel`)
        .set('Authorization', bearer(late))
        .expect(200);
      await waitFor(async () => (await bucketStocks(stores.redis, goodsId, 2))[0] === 1, {
        what: 'the cancelled unit back at home',
      });
      await buyPending(t.http, stores, goodsId, neighbour);
      expect(await bucketStocks(stores.redis, goodsId, 2)).toEqual([0, 1]);
      const row = (await stores.orders(goodsId)).find((o) => o.order_no === orderNo)!;
      const order = { orderNo, requestId: String(row.request_id), userId: late, quantity: 1 };
      const keys = { home: bucketKeys(goodsId, 2, 0), lender: bucketKeys(goodsId, 2, 1) };
      return { goodsId, order, keys };
    };

    // An attempt borrowed bucket 1's unit and died before its record at home.
    const unrecorded = await cancelledThenSold(84_000);
    const deadLoan = `retake:${unrecorded.order.orderNo}:dead`;
    const { keys } = unrecorded;
    expect((await loans.loan(keys.lender, deadLoan, 1, unrecorded.order.userId, 0)).code).toBe(
      LoanCode.Lent,
    );
    const retry = await sendEvent(
      t.http,
      paymentEvent('payment.succeeded', unrecorded.order.orderNo),
    ).expect(200);
    expect(retry.body.status).toBe('PAID');
    expect(await bucketStocks(stores.redis, unrecorded.goodsId, 2)).toEqual([0, 0]);
    expect(await stores.redis.hlen(keys.lender.loans)).toBe(0);
    expect(await stores.mysqlStock(unrecorded.goodsId)).toBe(0);
    await consistentReconcile(t.http, unrecorded.goodsId);

    // An attempt borrowed and recorded at home, and died before MySQL's commit.
    const recorded = await cancelledThenSold(85_000);
    const loanId = `retake:${recorded.order.orderNo}:dead`;
    expect((await loans.loan(recorded.keys.lender, loanId, 1, recorded.order.userId, 0)).code).toBe(
      LoanCode.Lent,
    );
    expect(
      await ledger.retake(recorded.keys.home, 'take', recorded.order, { id: loanId, bucket: 1 }),
    ).toBe(RetakeCode.Retaken);
    const paid = await sendEvent(
      t.http,
      paymentEvent('payment.succeeded', recorded.order.orderNo),
    ).expect(200);
    expect(paid.body.status).toBe('PAID');
    const sweptBefore = await counter(t.app, 'seckill_stock_loans_total', 'swept');
    await sweeper.sweep(Date.now() + 120_000);
    expect(await stores.redis.hlen(recorded.keys.lender.loans)).toBe(0);
    expect(await counter(t.app, 'seckill_stock_loans_total', 'swept')).toBe(sweptBefore);
    expect(await bucketStocks(stores.redis, recorded.goodsId, 2)).toEqual([0, 0]);
    expect(await stores.mysqlStock(recorded.goodsId)).toBe(0);
    await consistentReconcile(t.http, recorded.goodsId);
  });
});
