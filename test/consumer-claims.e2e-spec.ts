import type { RowDataPacket } from 'mysql2/promise';
import { describe, expect, it, vi } from 'vitest';
import { FaultInjectorService } from '../src/config/fault-injector.service.js';
import type { NewOrder } from '../src/modules/messaging/order-message.js';
import { OrdersService } from '../src/modules/orders/orders.service.js';
import { OrderIngestService } from '../src/modules/order-ingest/order-ingest.service.js';
import { PurchaseLedgerStore } from '../src/modules/sale-store/purchase-ledger.store.js';
import { saleKeys } from '../src/infra/redis/seckill-keys.js';
import {
  acceptWithoutPublishing,
  bearer,
  consistentReconcile,
  createSale,
  purchaseResult,
  type Stores,
  useApp,
  waitFor,
} from './support/harness.js';

/** The request's rows in MySQL's voided requests (0 or 1). */
async function voidsOf(stores: Stores, requestId: string): Promise<number> {
  const [rows] = await stores.mysql.query<RowDataPacket[]>(
    'SELECT COUNT(*) AS n FROM seckill_voided_request WHERE request_id = ?',
    [requestId],
  );
  return Number(rows[0].n);
}

describe('two consumers holding copies of one purchase', () => {
  // The copies are handed to the ingest here, as two consumers' batches would be.
  const t = useApp({ OUTBOX_SWEEP_ENABLED: 'false' });
  const stores = t.stores;

  /** Consumer B's link to Redis is cut once it has claimed `order`: its renewals fail, silently. */
  function renewalsFailOnceClaimed(order: NewOrder) {
    const ledger = t.app.get(PurchaseLedgerStore);
    const claim = ledger.claim.bind(ledger);
    const claims = saleKeys(order.goodsId).claims;
    return vi.spyOn(ledger, 'claim').mockImplementation(async (goodsId, purchases, holder) => {
      const renewal =
        purchases.some((purchase) => purchase.requestId === order.requestId) &&
        (await stores.redis.hexists(claims, order.requestId)) === 1;
      if (renewal) throw new Error('Connection is closed.');
      return claim(goodsId, purchases, holder);
    });
  }

  /** The claim on `order` lapses, as CLAIM_LEASE_MS of the cut would: every lease end is past. */
  async function lapseClaim(order: NewOrder): Promise<void> {
    const claims = saleKeys(order.goodsId).claims;
    const held = JSON.parse((await stores.redis.hget(claims, order.requestId))!) as object;
    await stores.redis.hset(
      claims,
      order.requestId,
      JSON.stringify(Object.fromEntries(Object.keys(held).map((holder) => [holder, 1]))),
    );
  }

  it('should not let an exhausted copy give back a purchase another consumer is writing: one order, its stock taken once, SUCCESS', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const userId = 601;
    const order = await acceptWithoutPublishing(t.app, goodsId, userId);
    const ingest = t.app.get(OrderIngestService);
    const stock = t.app.get(PurchaseLedgerStore);
    const hold = t.app.get(FaultInjectorService).holdAt('before-order-write');
    const asks = vi.spyOn(stock, 'claimedElsewhere');
    const releases = vi.spyOn(stock, 'release');
    try {
      // Consumer B: the sweeper's republished copy, claimed, its transaction not committed yet.
      const writing = ingest.ingest(goodsId, [{ order, exhausted: false }]);
      await hold.reached;

      // Consumer A: the original, delivered CONSUMER_MAX_DELIVERIES times; no order by its id yet.
      const givingUp = ingest.ingest(goodsId, [{ order, exhausted: true }]);
      await waitFor(() => asks.mock.results.length > 0, {
        what: 'the exhausted copy to ask whether it may give the purchase up',
      });
      expect(await asks.mock.results[0].value).toBe(true);
      // Neither voided in MySQL (the writer's commit would be refused) nor given back in Redis.
      expect(await voidsOf(stores, order.requestId)).toBe(0);
      expect(releases).not.toHaveBeenCalled();
      expect(await stores.redisStock(goodsId)).toBe(4);
      expect(await stores.redisBuyers(goodsId)).toEqual({ [String(userId)]: '1' });
      expect(await purchaseResult(t.http, goodsId, userId)).toMatchObject({
        status: 'QUEUED',
        requestId: order.requestId,
      });

      hold.release();
      expect(await writing).toEqual([{ kind: 'written', order }]);
      expect(await givingUp).toEqual([{ kind: 'completed', order }]);
    } finally {
      hold.release();
      asks.mockRestore();
      releases.mockRestore();
    }

    expect(await stores.orders(goodsId)).toHaveLength(1);
    expect(await voidsOf(stores, order.requestId)).toBe(0);
    expect(await stores.redisStock(goodsId)).toBe(4);
    expect(await stores.mysqlStock(goodsId)).toBe(4);
    expect(await stores.redisBuyers(goodsId)).toEqual({ [String(userId)]: '1' });
    expect(await purchaseResult(t.http, goodsId, userId)).toMatchObject({
      status: 'SUCCESS',
      orderNo: order.orderNo,
    });
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisStock: 4,
      dbStock: 4,
      inFlight: 0,
    });
    // The buyer's slot is held: a second purchase is refused in Redis, not accepted then FAILED.
    const again = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(userId))
      .expect(409);
    expect(again.body.code).toBe('ALREADY_PURCHASED');
  });

  it("should let a write whose claim lapsed and a forced release of the same purchase end as one of them, never both: the release's void in MySQL refuses the late write, the unit sold again is written", async () => {
    const goodsId = await createSale(t.http, { stock: 1 });
    const [userId, nextBuyer] = [611, 612];
    const order = await acceptWithoutPublishing(t.app, goodsId, userId);
    const ingest = t.app.get(OrderIngestService);
    const renewals = renewalsFailOnceClaimed(order);
    const hold = t.app.get(FaultInjectorService).holdAt('before-order-write');
    let writing: Promise<unknown> | undefined;
    try {
      // Consumer B: a copy of the purchase, claimed, its MySQL write held.
      writing = ingest.ingest(goodsId, [{ order, exhausted: false }]);
      await hold.reached;
      await lapseClaim(order);

      // Consumer A: the exhausted copy finds no order, and no claim in force.
      expect(await ingest.ingest(goodsId, [{ order, exhausted: true }])).toEqual([
        { kind: 'exhausted', order },
      ]);
      expect(await stores.redisStock(goodsId)).toBe(1);
      expect(await purchaseResult(t.http, goodsId, userId)).toMatchObject({
        status: 'FAILED',
        reason: 'UNDELIVERABLE',
      });

      // The unit given back is sold again, its message written by the app's own consumer.
      const again = await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(nextBuyer))
        .expect(202);
      expect(again.body.status).toBe('QUEUED');

      expect(await voidsOf(stores, order.requestId)).toBe(1);

      // B's write goes on at last: refused by the void, it gives nothing back twice.
      hold.release();
      expect(await writing).toEqual([{ kind: 'voided', order }]);
    } finally {
      hold.release();
      renewals.mockRestore();
      await writing?.catch(() => undefined);
    }

    await waitFor(
      async () => (await purchaseResult(t.http, goodsId, nextBuyer)).status !== 'QUEUED',
      { what: "the next buyer's purchase to be settled" },
    );
    expect(await purchaseResult(t.http, goodsId, nextBuyer)).toMatchObject({ status: 'SUCCESS' });
    expect((await stores.orders(goodsId)).map((row) => row.user_id)).toEqual([nextBuyer]);
    expect(await purchaseResult(t.http, goodsId, userId)).toMatchObject({
      status: 'FAILED',
      requestId: order.requestId,
    });
    expect(await stores.mysqlStock(goodsId)).toBe(0);
    expect(await stores.redisStock(goodsId)).toBe(0);
    expect(await stores.redisBuyers(goodsId)).toEqual({ [String(nextBuyer)]: '1' });
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisStock: 0,
      dbStock: 0,
      inFlight: 0,
    });
  });

  it('should let a late write that commits before the forced release records its void stand alone: nothing given back, never FAILED, its stock taken once', async () => {
    const goodsId = await createSale(t.http, { stock: 1 });
    const userId = 621;
    const order = await acceptWithoutPublishing(t.app, goodsId, userId);
    const ingest = t.app.get(OrderIngestService);
    const ledger = t.app.get(PurchaseLedgerStore);
    const renewals = renewalsFailOnceClaimed(order);
    // B's completion waits for its link to come back (its SUCCESS result is not written yet).
    let linkBack!: () => void;
    const back = new Promise<void>((resolve) => (linkBack = resolve));
    const complete = ledger.complete.bind(ledger);
    const completions = vi.spyOn(ledger, 'complete').mockImplementation(async (id, done) => {
      await back;
      return complete(id, done);
    });
    const releases = vi.spyOn(ledger, 'release');
    // A's look for the order comes just before B's commit, which lands before A's next step.
    const lookups = vi.spyOn(t.app.get(OrdersService), 'findByRequestId');
    const hold = t.app.get(FaultInjectorService).holdAt('before-order-write');
    lookups.mockImplementationOnce(async () => {
      hold.release();
      await waitFor(async () => (await stores.orders(goodsId)).length === 1, {
        what: "B's order to be committed",
      });
      return null;
    });
    let writing: Promise<unknown> | undefined;
    let givingUp: Promise<unknown> | undefined;
    try {
      writing = ingest.ingest(goodsId, [{ order, exhausted: false }]);
      await hold.reached;
      await lapseClaim(order);

      let settled = false;
      givingUp = ingest
        .ingest(goodsId, [{ order, exhausted: true }])
        .finally(() => (settled = true));
      // A either gave the purchase up or found the order and is completing it, as B is.
      await waitFor(() => settled || completions.mock.calls.length === 2, {
        what: 'the exhausted copy to settle',
      });
      expect(releases).not.toHaveBeenCalled();
      expect(await voidsOf(stores, order.requestId)).toBe(0);
      expect(await stores.redisStock(goodsId)).toBe(0);
      // The order is in MySQL: the result says so, not FAILED.
      expect(await purchaseResult(t.http, goodsId, userId)).toMatchObject({ status: 'SUCCESS' });

      linkBack();
      expect(await writing).toEqual([{ kind: 'written', order }]);
      expect(await givingUp).toEqual([{ kind: 'completed', order }]);
    } finally {
      hold.release();
      linkBack();
      renewals.mockRestore();
      completions.mockRestore();
      releases.mockRestore();
      lookups.mockRestore();
      await Promise.allSettled([writing, givingUp]);
    }

    expect((await stores.orders(goodsId)).map((row) => row.request_id)).toEqual([order.requestId]);
    expect(await stores.mysqlStock(goodsId)).toBe(0);
    expect(await stores.redisStock(goodsId)).toBe(0);
    expect(await stores.redisBuyers(goodsId)).toEqual({ [String(userId)]: '1' });
    expect(await purchaseResult(t.http, goodsId, userId)).toMatchObject({
      status: 'SUCCESS',
      orderNo: order.orderNo,
    });
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({
      redisStock: 0,
      dbStock: 0,
      inFlight: 0,
    });
  });
});
