import { describe, expect, it, vi } from 'vitest';
import { FaultInjector } from '../src/config/fault-injector.js';
import { OrderIngest } from '../src/modules/orders/order-ingest.service.js';
import { ReleaseCode, PurchaseLedger } from '../src/modules/sale-store/purchase-ledger.service.js';
import {
  acceptWithoutPublishing,
  bearer,
  consistentReconcile,
  createSale,
  purchaseResult,
  useApp,
  waitFor,
} from './support/harness.js';

describe('two consumers holding copies of one purchase', () => {
  // The copies are handed to the ingest here, as two consumers' batches would be.
  const t = useApp({ OUTBOX_SWEEP_ENABLED: 'false' });
  const stores = t.stores;

  it('should not let an exhausted copy give back a purchase another consumer is writing: one order, its stock taken once, SUCCESS', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const userId = 601;
    const order = await acceptWithoutPublishing(t.app, goodsId, userId);
    const ingest = t.app.get(OrderIngest);
    const stock = t.app.get(PurchaseLedger);
    const hold = t.app.get(FaultInjector).holdAt('before-order-write');
    const releases = vi.spyOn(stock, 'release');
    try {
      // Consumer B: the sweeper's republished copy, claimed, its transaction not committed yet.
      const writing = ingest.ingest(goodsId, [{ order, exhausted: false }]);
      await hold.reached;

      // Consumer A: the original, delivered CONSUMER_MAX_DELIVERIES times; no order by its id yet.
      const givingUp = ingest.ingest(goodsId, [{ order, exhausted: true }]);
      await waitFor(() => releases.mock.results.length > 0, {
        what: 'the exhausted copy to try to give the purchase up',
      });
      expect(await releases.mock.results[0].value).toBe(ReleaseCode.Claimed);
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
      releases.mockRestore();
    }

    expect(await stores.orders(goodsId)).toHaveLength(1);
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
});
