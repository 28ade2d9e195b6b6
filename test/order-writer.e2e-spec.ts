import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { NewOrder } from '../src/modules/orders/order.types.js';
import { newOrderNo } from '../src/modules/orders/order-no.js';
import { OrderWriter } from '../src/modules/orders/order-writer.service.js';
import { bearer, createSale, useApp, waitFor } from './support/harness.js';

describe('order writer: a batch MySQL would refuse whole', () => {
  const t = useApp({}, { behindProxy: 'DATABASE_URL' });
  const stores = t.stores;

  it('should version-check a batch whose every order finds no stock: a cancel committed after its stock read makes it retry and write the order, not fail it SOLD_OUT', async () => {
    const goodsId = await createSale(t.http, { stock: 1 });
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(3001)).expect(202);
    const [sold] = await waitFor(
      async () => {
        const rows = await stores.orders(goodsId);
        return rows.length === 1 && (await stores.inflight(goodsId)) === 0 ? rows : null;
      },
      { what: 'the first order' },
    );
    expect(await stores.mysqlStock(goodsId)).toBe(0);

    // The writer's transaction has read its snapshot (the request ids); its stock read is held.
    let reached!: () => void;
    const atStockRead = new Promise<void>((resolve) => (reached = resolve));
    let armed = true;
    t.proxy.tapClient((chunk) => {
      if (!armed || !chunk.includes('SELECT stock, version FROM seckill_goods')) return;
      armed = false;
      t.proxy.stall();
      reached();
    });
    const next: NewOrder = {
      requestId: randomUUID(),
      orderNo: newOrderNo(),
      userId: 3002,
      goodsId,
      quantity: 1,
      acceptedAt: Date.now(),
    };
    const writing = t.app.get(OrderWriter).writeBatch(goodsId, [next]);
    await atStockRead;

    // Meanwhile the first order is cancelled: the cancel's transaction (OrderLifecycle's
    // transition) commits, straight to MySQL rather than through the held proxy.
    const connection = await stores.mysql.getConnection();
    try {
      await connection.query('START TRANSACTION');
      await connection.query(
        "UPDATE seckill_order SET status = 'CANCELLED', version = version + 1 WHERE order_no = ? AND status = 'PENDING_PAYMENT'",
        [sold.order_no],
      );
      await connection.query(
        'UPDATE seckill_goods SET stock = stock + 1, version = version + 1 WHERE id = ?',
        [goodsId],
      );
      await connection.query('COMMIT');
    } finally {
      connection.release();
    }
    t.proxy.resume();

    // The snapshot still says 0 left; the version it read is gone, so the batch reads again.
    expect(await writing).toEqual([{ kind: 'written', order: next }]);
    expect(await stores.mysqlStock(goodsId)).toBe(0);
    const orders = await stores.orders(goodsId);
    expect(orders.map((order) => [order.request_id, order.status])).toEqual([
      [sold.request_id, 'CANCELLED'],
      [next.requestId, 'PENDING_PAYMENT'],
    ]);
  });
});
