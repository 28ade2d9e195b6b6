import { randomUUID } from 'node:crypto';
import type { RowDataPacket } from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrderEntity } from '../src/infra/database/entities/order.entity.js';
import { VoidedRequestEntity } from '../src/infra/database/entities/voided-request.entity.js';
import { TransactionsService } from '../src/infra/database/transactions.service.js';
import type { NewOrder } from '../src/modules/messaging/order-message.js';
import { newOrderNo } from '../src/modules/orders/order-no.js';
import { OrderRepository } from '../src/modules/orders/order.repository.js';
import { OrderWriterService } from '../src/modules/orders/order-writer.service.js';
import { VoidedRequestRepository } from '../src/modules/orders/voided-request.repository.js';
import { VoidedRequestsService } from '../src/modules/orders/voided-requests.service.js';
import type { ReplicaReadsService } from '../src/infra/database/replica-reads.service.js';
import { bearer, createSale, newPurchase, useApp, waitFor } from './support/harness.js';

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
    const writing = t.app.get(OrderWriterService).writeBatch(goodsId, [next]);
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

describe('order writer and a void recorded for the same purchase (both in MySQL)', () => {
  const t = useApp({}, { behindProxy: 'DATABASE_URL' });
  const stores = t.stores;
  // The void's own connections, straight to MySQL: the test holds the writer's at the proxy.
  const direct = new DataSource({
    type: 'mysql',
    url: process.env.DATABASE_URL,
    timezone: 'Z',
    entities: [OrderEntity, VoidedRequestEntity],
  });
  let voids: VoidedRequestsService;

  beforeAll(async () => {
    await direct.initialize();
    voids = new VoidedRequestsService(
      new TransactionsService(direct),
      new VoidedRequestRepository(direct.getRepository(VoidedRequestEntity)),
      new OrderRepository(direct.getRepository(OrderEntity), {} as ReplicaReadsService),
    );
  });
  afterAll(async () => {
    await direct.destroy();
  });

  it('should leave out of the batch a purchase voided before it, and write the rest', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const [voided, kept] = [newPurchase(goodsId, 3101), newPurchase(goodsId, 3102)];
    expect(await voids.record(voided.requestId, goodsId)).toBe('voided');

    const outcomes = await t.app.get(OrderWriterService).writeBatch(goodsId, [voided, kept]);

    expect(outcomes).toEqual([
      { kind: 'voided', order: voided },
      { kind: 'written', order: kept },
    ]);
    expect((await stores.orders(goodsId)).map((order) => order.request_id)).toEqual([
      kept.requestId,
    ]);
    expect(await stores.mysqlStock(goodsId)).toBe(4);
  });

  it('should say ordered, recording nothing, for a purchase whose order is written', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const order = newPurchase(goodsId, 3201);
    await t.app.get(OrderWriterService).writeBatch(goodsId, [order]);

    expect(await voids.record(order.requestId, goodsId)).toBe('ordered');
    const [rows] = await stores.mysql.query<RowDataPacket[]>(
      'SELECT 1 FROM seckill_voided_request WHERE request_id = ?',
      [order.requestId],
    );
    expect(rows).toHaveLength(0);
  });

  it('should let exactly one of the order and the void commit when both are written before either reads the other', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const order = newPurchase(goodsId, 3301);
    // The writer's INSERT reached MySQL (uncommitted); its read of the voids is held.
    let armed = true;
    t.proxy.tapClient((chunk) => {
      if (!armed || !chunk.includes('FROM seckill_voided_request')) return;
      armed = false;
      t.proxy.stall();
    });
    const writing = t.app.get(OrderWriterService).writeBatch(goodsId, [order]);
    await waitFor(() => !armed, { what: "the writer's read of the voids" });

    // The void's INSERT goes in, its locking read of the order waits for the writer's row.
    const recording = voids.record(order.requestId, goodsId);

    await waitFor(
      async () => {
        const [waiting] = await stores.mysql.query<RowDataPacket[]>(
          "SELECT 1 FROM information_schema.processlist WHERE command = 'Query' AND info LIKE ?",
          [`SELECT 1 FROM seckill_order WHERE request_id = '${order.requestId}'%`],
        );
        return waiting.length > 0;
      },
      { what: 'the void waiting for the order row' },
    );
    // The writer now reads the void's row: each waits for the other, InnoDB rolls one back.
    t.proxy.resume();
    const [outcomes, recorded] = await Promise.all([writing, recording]);

    const orders = (await stores.orders(goodsId)).filter((o) => o.request_id === order.requestId);
    const [voidRows] = await stores.mysql.query<RowDataPacket[]>(
      'SELECT 1 FROM seckill_voided_request WHERE request_id = ?',
      [order.requestId],
    );
    expect(orders.length + voidRows.length).toBe(1);
    if (recorded === 'voided') {
      expect(outcomes).toEqual([{ kind: 'voided', order }]);
      expect(await stores.mysqlStock(goodsId)).toBe(5);
    } else {
      expect(outcomes).toEqual([{ kind: 'written', order }]);
      expect(await stores.mysqlStock(goodsId)).toBe(4);
    }
  });
});
