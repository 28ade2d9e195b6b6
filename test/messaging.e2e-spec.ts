import amqp from 'amqplib';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordChaos, secondsSince } from './support/chaos-report.js';
import { encodeOrderMessage } from '../src/modules/messaging/order-message.js';
import { OutboxSweeperService } from '../src/modules/messaging/outbox-sweeper.service.js';
import { MetricsService } from '../src/modules/metrics/metrics.service.js';
import type { NewOrder } from '../src/modules/messaging/order-message.js';
import {
  ReleaseCode,
  PurchaseLedgerStore,
} from '../src/modules/sale-store/purchase-ledger.store.js';
import { AmqpFrameWatcher } from './support/amqp-frames.js';
import { coalesceFrames } from '../src/infra/rabbitmq/rabbitmq.connection.js';
import {
  adminAuth,
  counter,
  bearer,
  createSale,
  startApp,
  Stores,
  waitFor,
  type TestApp,
  useApp,
  acceptWithoutPublishing,
} from './support/harness.js';

const prefix = process.env.RABBITMQ_PREFIX!;

describe('messaging: confirms, redelivery, outbox', () => {
  const t = useApp();
  const stores = t.stores;

  it('should write no second order when an order message is delivered again', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const accepted = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(201))
      .expect(202);
    const [order] = await waitFor(async () => {
      const rows = await stores.orders(goodsId);
      return rows.length === 1 ? rows : null;
    });
    expect(order.request_id).toBe(accepted.body.requestId);

    const duplicatesBefore = await counter(t.app, 'seckill_order_messages_total', 'duplicate');
    const connection = await amqp.connect(process.env.RABBITMQ_URL!);
    const channel = await connection.createConfirmChannel();
    const message = encodeOrderMessage({
      requestId: order.request_id,
      orderNo: order.order_no,
      userId: 201,
      goodsId,
      quantity: 1,
      acceptedAt: Date.now(),
    });
    // One at a time, so that each redelivery is consumed on its own (a batch would fold them).
    for (let i = 1; i <= 2; i++) {
      channel.publish(`${prefix}.orders`, 'order.created', Buffer.from(message), {
        persistent: true,
      });
      await channel.waitForConfirms();
      await waitFor(
        async () =>
          (await counter(t.app, 'seckill_order_messages_total', 'duplicate')) >=
          duplicatesBefore + i,
        { what: `redelivery ${i} consumed` },
      );
    }
    await connection.close();
    expect(await stores.orders(goodsId)).toHaveLength(1);
    expect(await stores.mysqlStock(goodsId)).toBe(4);
    expect(await stores.redisStock(goodsId)).toBe(4);
  });

  it("should coalesce a real amqplib connection's frames and still publish, confirm and deliver on it", async () => {
    const connection = await amqp.connect(process.env.RABBITMQ_URL!, { noDelay: true });
    try {
      // The shape coalesceFrames relies on (amqplib's muxer and socket) is the library's today.
      expect(coalesceFrames(connection)).toBe(true);
      const channel = await connection.createConfirmChannel();
      const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
      for (const n of [1, 2, 3]) channel.sendToQueue(queue, Buffer.from(`m${n}`));
      await channel.waitForConfirms();
      const got: string[] = [];
      for (let n = 0; n < 3; n++) {
        const message = await waitFor(() => channel.get(queue, { noAck: true }));
        got.push(message.content.toString());
      }
      expect(got).toEqual(['m1', 'm2', 'm3']);
    } finally {
      await connection.close();
    }
  });

  it('should dead-letter a malformed message instead of looping on it, and keep the queue moving', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const before = await counter(t.app, 'seckill_order_messages_total', 'dead_lettered');
    const connection = await amqp.connect(process.env.RABBITMQ_URL!);
    const channel = await connection.createConfirmChannel();
    const poisonedAt = Date.now();
    channel.publish(`${prefix}.orders`, 'order.created', Buffer.from('{"not":"an order"'), {
      persistent: true,
      messageId: 'poison-1',
    });
    await channel.waitForConfirms();
    // A real purchase right behind the poison one still becomes an order.
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(203)).expect(202);
    await waitFor(
      async () => (await counter(t.app, 'seckill_order_messages_total', 'dead_lettered')) > before,
      { what: 'dead-lettering' },
    );
    const dead = await waitFor(async () => {
      const message = await channel.get(`${prefix}.orders.dead`, { noAck: true });
      return message || null;
    });
    expect(dead.content.toString()).toBe('{"not":"an order"');
    expect(dead.properties.messageId).toBe('poison-1');
    expect(dead.properties.headers?.['x-death']?.[0]).toMatchObject({ reason: 'rejected' });
    await connection.close();
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
    await recordChaos(stores, {
      scenario: 'poison message',
      fault: 'a malformed message ahead of a real purchase in the orders queue',
      goodsId,
      requests: 1,
      accepted: 1,
      recoveredSeconds: secondsSince(poisonedAt),
    });
  });

  it('should turn an order that exhausted its deliveries into FAILED with its stock back, not lose it', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const userId = 204;
    const order = await acceptWithoutPublishing(t.app, goodsId, userId);
    expect(await stores.redisStock(goodsId)).toBe(4);

    // Its instances kept dying: the broker says it was delivered many times already.
    const before = await counter(t.app, 'seckill_order_messages_total', 'dead_lettered');
    const connection = await amqp.connect(process.env.RABBITMQ_URL!);
    const channel = await connection.createConfirmChannel();
    channel.publish(`${prefix}.orders`, 'order.created', Buffer.from(encodeOrderMessage(order)), {
      persistent: true,
      headers: { 'x-delivery-count': 99 },
    });
    await channel.waitForConfirms();
    await connection.close();
    await waitFor(
      async () => (await counter(t.app, 'seckill_order_messages_total', 'dead_lettered')) > before,
      { what: 'the exhausted order to be settled' },
    );
    expect(await stores.orders(goodsId)).toHaveLength(0);
    expect(await stores.redisStock(goodsId)).toBe(5);
    expect(await stores.inflight(goodsId)).toBe(0);
    const result = await t.http
      .get(`/api/v1/seckill/${goodsId}/result`)
      .set('Authorization', bearer(userId))
      .expect(200);
    expect(result.body).toMatchObject({ status: 'FAILED', reason: 'UNDELIVERABLE' });
  });

  it('should republish from the outbox after a crash between the Lua step and the publish', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    const userId = 202;
    // The Lua step ran and the process died before publishing: only Redis knows the purchase.
    const order = await acceptWithoutPublishing(t.app, goodsId, userId);
    expect(await stores.redisStock(goodsId)).toBe(4);
    expect(await stores.orders(goodsId)).toHaveLength(0);

    // The sweep goes over every sale's outbox (earlier tests' too): this one's is read apart.
    const outbox = () => stores.redis.zcard(`seckill:{${goodsId}}:outbox`);
    const sweeper = t.app.get(OutboxSweeperService);
    await sweeper.sweep(Date.now()); // not stale yet: its publish may be under way
    expect(await outbox()).toBe(1);
    expect(await stores.orders(goodsId)).toHaveLength(0);
    expect(await sweeper.sweep(Date.now() + 60_000)).toBeGreaterThanOrEqual(1);

    const [row] = await waitFor(async () => {
      const rows = await stores.orders(goodsId);
      return rows.length === 1 ? rows : null;
    });
    expect(row).toMatchObject({ request_id: order.requestId, order_no: order.orderNo });
    const result = await waitFor(async () => {
      const response = await t.http
        .get(`/api/v1/seckill/${goodsId}/result`)
        .set('Authorization', bearer(userId))
        .expect(200);
      return response.body.status === 'SUCCESS' ? response.body : null;
    });
    expect(result.orderNo).toBe(order.orderNo);
    await waitFor(async () => (await stores.inflight(goodsId)) === 0, {
      what: 'in-flight drained',
    });
    await sweeper.sweep(Date.now() + 60_000);
    expect(await outbox()).toBe(0);
    expect(await stores.orders(goodsId)).toHaveLength(1);
    expect(await stores.mysqlStock(goodsId)).toBe(4);
  });
});

describe('messaging: a broker that does not confirm', () => {
  const t = useApp({ PUBLISH_CONFIRM_TIMEOUT_MS: '300' }, { behindProxy: 'RABBITMQ_URL' });
  const stores = t.stores;

  it('should give the stock back and answer 503 when the publish is not confirmed, and drop the late message', async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    const userId = 301;
    const voidedBefore = await counter(t.app, 'seckill_order_messages_total', 'voided');

    // The broker gets the message but its confirm (and every delivery) is held back.
    t.proxy.stall('to-client');
    const refused = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(userId))
      .expect(503);
    expect(refused.body).toEqual({
      statusCode: 503,
      code: 'UNAVAILABLE',
      message: expect.any(String),
    });
    expect(await stores.redisStock(goodsId)).toBe(3);
    expect(await stores.redisBuyers(goodsId)).toEqual({});
    const result = await t.http
      .get(`/api/v1/seckill/${goodsId}/result`)
      .set('Authorization', bearer(userId))
      .expect(200);
    expect(result.body).toMatchObject({ status: 'FAILED', reason: 'UNAVAILABLE' });

    // Connected but not confirming: not ready.
    expect((await t.http.get('/health/ready')).status).toBe(503);

    // The held deliveries now reach the consumer: the late message must be dropped, not written.
    t.proxy.resume();
    const healedAt = Date.now();
    await waitFor(
      async () => (await counter(t.app, 'seckill_order_messages_total', 'voided')) > voidedBefore,
      { what: 'the late message to be dropped' },
    ).catch(async (error: Error) => {
      // Rare in the full suite; say what the consumer saw, to tell where the message went.
      const metrics = await t.app.get(MetricsService).registry.metrics();
      const lines = metrics.split('\n').filter((line) => line.startsWith('seckill_'));
      throw new Error(`${error.message}\n${lines.join('\n')}`);
    });
    expect(await stores.orders(goodsId)).toHaveLength(0);
    expect(await stores.mysqlStock(goodsId)).toBe(3);
    await waitFor(async () => (await t.http.get('/health/ready')).status === 200, {
      what: 'readiness once the broker confirms again',
    });
    await recordChaos(stores, {
      scenario: 'broker stalled past the confirm timeout',
      fault: 'confirms and deliveries held back longer than PUBLISH_CONFIRM_TIMEOUT_MS',
      goodsId,
      requests: 1,
      accepted: 0,
      recoveredSeconds: secondsSince(healedAt),
    });

    // The user was not blocked: buying again works and becomes one order.
    await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(userId))
      .expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
    expect(await stores.mysqlStock(goodsId)).toBe(2);
    expect(await stores.redisStock(goodsId)).toBe(2);
  });
});

describe('messaging: a full or unbound orders queue', () => {
  const smallPrefix = `${prefix}_small`;
  // No consumer: the queue only fills.
  const t = useApp({
    RABBITMQ_PREFIX: smallPrefix,
    RABBITMQ_QUEUE_MAX_LENGTH: '3',
    CONSUMER_ENABLED: 'false',
  });
  const stores = t.stores;

  it('should refuse purchases with 503 and give their stock back once the orders queue is full', async () => {
    const goodsId = await createSale(t.http, { stock: 10 });
    const statuses: number[] = [];
    for (let userId = 351; userId <= 358; userId++) {
      const response = await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(userId));
      statuses.push(response.status);
      if (response.status === 503) expect(response.body.code).toBe('UNAVAILABLE');
    }
    // Quorum queues enforce the limit approximately: one message may go over.
    const accepted = statuses.filter((status) => status === 202).length;
    expect(accepted).toBeGreaterThanOrEqual(3);
    expect(accepted).toBeLessThanOrEqual(4);
    expect(statuses.slice(accepted).every((status) => status === 503)).toBe(true);
    expect(await stores.redisStock(goodsId)).toBe(10 - accepted);
    expect(Object.keys(await stores.redisBuyers(goodsId))).toHaveLength(accepted);

    // Nothing consumes: the metrics show the accepted purchases unwritten, the oldest ageing
    // (the consumer's lag in time), and none left unconfirmed in the outbox.
    const scrape = async () => (await t.http.get('/metrics').expect(200)).text;
    const goods = `{goods="${goodsId}"}`;
    const first = await scrape();
    expect(first).toContain(`seckill_orders_unwritten${goods} ${accepted}`);
    expect(first).toContain(`seckill_outbox_entries${goods} 0`);
    expect(first).toContain(`seckill_outbox_oldest_age_seconds${goods} 0`);
    const ageIn = (text: string) =>
      Number(
        new RegExp(
          `seckill_order_oldest_unwritten_age_seconds\\{goods="${goodsId}"\\} (\\S+)`,
        ).exec(text)?.[1],
      );
    const age = ageIn(first);
    expect(age).toBeGreaterThan(0);
    await waitFor(async () => ageIn(await scrape()) >= age + 1, {
      what: 'the oldest unwritten purchase to age by a second',
    });
  });

  it('should refuse a purchase whose message no queue would take, instead of losing it', async () => {
    const goodsId = await createSale(t.http, { stock: 10 });
    const connection = await amqp.connect(process.env.RABBITMQ_URL!);
    const channel = await connection.createChannel();
    await channel.purgeQueue(`${smallPrefix}.orders`);
    await channel.unbindQueue(`${smallPrefix}.orders`, `${smallPrefix}.orders`, 'order.created');
    try {
      const refused = await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(355))
        .expect(503);
      expect(refused.body.code).toBe('UNAVAILABLE');
      expect(await stores.redisStock(goodsId)).toBe(10);
      expect(await counter(t.app, 'seckill_publishes_total', 'unroutable')).toBeGreaterThanOrEqual(
        1,
      );
    } finally {
      await channel.bindQueue(`${smallPrefix}.orders`, `${smallPrefix}.orders`, 'order.created');
      await connection.close();
    }
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(355)).expect(202);
  });
});

describe('messaging: classic queues (RABBITMQ_QUEUE_TYPE=classic)', () => {
  const t = useApp({
    RABBITMQ_PREFIX: `${prefix}_classic`,
    RABBITMQ_QUEUE_TYPE: 'classic',
    ORDER_PAYMENT_TIMEOUT_MS: '2000',
  });
  const stores = t.stores;

  it('should write orders and expire unpaid ones on classic queues too', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(361)).expect(202);
    const [order] = await waitFor(async () => {
      const rows = await stores.orders(goodsId);
      return rows.length === 1 ? rows : null;
    });
    expect(order.status).toBe('PENDING_PAYMENT');
    await waitFor(async () => (await stores.orders(goodsId))[0].status === 'CANCELLED', {
      timeoutMs: 20_000,
      what: 'the order to expire through the classic delay queue',
    });
    await waitFor(async () => (await stores.redisStock(goodsId)) === 2, { what: 'the restock' });
    expect(await stores.mysqlStock(goodsId)).toBe(2);
  });
});

describe('messaging: an order MySQL refuses', () => {
  let t: TestApp;
  const stores = new Stores();
  const refusedUser = 999_999;

  beforeAll(async () => {
    t = await startApp({ CONSUMER_BATCH_WAIT_MS: '200' });
    // Stands in for any row MySQL refuses on every try (out of range, a constraint).
    await stores.mysql.query(
      `ALTER TABLE seckill_order ADD CONSTRAINT chk_test_refused CHECK (user_id <> ${refusedUser})`,
    );
  });

  afterAll(async () => {
    await stores.mysql.query('ALTER TABLE seckill_order DROP CONSTRAINT chk_test_refused');
    await t.close();
    await stores.close();
  });

  it('should fail only the refused order, give its stock back, and write the rest of its batch', async () => {
    const goodsId = await createSale(t.http, { stock: 10 });
    const before = await counter(t.app, 'seckill_order_messages_total', 'dead_lettered');
    const users = [371, 372, refusedUser, 373];
    await Promise.all(
      users.map((userId) =>
        t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId)).expect(202),
      ),
    );
    const orders = await waitFor(
      async () => {
        const rows = await stores.orders(goodsId);
        const settled =
          rows.length === 3 &&
          (await counter(t.app, 'seckill_order_messages_total', 'dead_lettered')) > before;
        return settled ? rows : null;
      },
      { what: 'three orders and one refusal' },
    );
    expect(orders.map((order) => Number(order.user_id)).sort()).toEqual([371, 372, 373]);
    const result = await t.http
      .get(`/api/v1/seckill/${goodsId}/result`)
      .set('Authorization', bearer(refusedUser))
      .expect(200);
    expect(result.body).toMatchObject({ status: 'FAILED', reason: 'REJECTED' });
    expect(await stores.redisStock(goodsId)).toBe(7);
    expect(await stores.mysqlStock(goodsId)).toBe(7);
    await waitFor(async () => (await stores.inflight(goodsId)) === 0, { what: 'settled' });
  });
});

describe('messaging: a batch whose timeout publish is not confirmed, with a voided purchase in it', () => {
  const broker = new AmqpFrameWatcher();
  // A long batch wait leaves time to stall the broker once the batch is in the consumer's hands.
  const t = useApp(
    { PUBLISH_CONFIRM_TIMEOUT_MS: '300', CONSUMER_BATCH_WAIT_MS: '1000' },
    {
      behindProxy: 'RABBITMQ_URL',
      onProxy: (proxy) => proxy.tapServer((chunk, upstream) => broker.feed(chunk, upstream)),
    },
  );
  const stores = t.stores;

  it('should write every valid purchase once and settle each delivery once, the broker never closing the channel', async () => {
    const goodsId = await createSale(t.http, { stock: 10 });
    const voidedBefore = await counter(t.app, 'seckill_order_messages_total', 'voided');
    const unconfirmedBefore = await counter(t.app, 'seckill_publishes_total', 'unconfirmed');
    // A purchase whose publish went unconfirmed and was voided, though its message got through.
    const voided = await acceptWithoutPublishing(t.app, goodsId, 401);
    expect(
      await t.app
        .get(PurchaseLedgerStore)
        .release(goodsId, voided.requestId, 'UNAVAILABLE', false, 401),
    ).toBe(ReleaseCode.Released);
    const valid: NewOrder[] = [];
    for (const userId of [402, 403, 404]) {
      valid.push(await acceptWithoutPublishing(t.app, goodsId, userId));
    }

    // Straight to the broker (not through the proxy), all in one batch of the consumer's.
    const connection = await amqp.connect(process.env.RABBITMQ_URL!);
    const channel = await connection.createConfirmChannel();
    for (const order of [voided, ...valid]) {
      channel.publish(`${prefix}.orders`, 'order.created', Buffer.from(encodeOrderMessage(order)), {
        persistent: true,
        messageId: order.requestId,
      });
    }
    await channel.waitForConfirms();
    await waitFor(async () => (await channel.checkQueue(`${prefix}.orders`)).messageCount === 0, {
      intervalMs: 5,
      what: 'the consumer to hold the batch',
    });
    await connection.close();
    await sleep(50);

    // The broker takes everything in but answers nothing: the timeout publishes go unconfirmed
    // after the voided purchase was dropped and the valid ones were written.
    t.proxy.stall('to-client');
    await waitFor(async () => (await stores.orders(goodsId)).length === 3, {
      what: 'the batch to be written',
    });
    await sleep(1_500);
    t.proxy.resume();
    expect(await counter(t.app, 'seckill_publishes_total', 'unconfirmed')).toBeGreaterThan(
      unconfirmedBefore,
    );

    await waitFor(async () => (await stores.inflight(goodsId)) === 0, {
      what: 'in flight drained',
    });
    for (const order of valid) {
      const result = await waitFor(async () => {
        const response = await t.http
          .get(`/api/v1/seckill/${goodsId}/result`)
          .set('Authorization', bearer(order.userId))
          .expect(200);
        return response.body.status === 'QUEUED' ? null : response.body;
      });
      expect(result).toMatchObject({ status: 'SUCCESS', orderNo: order.orderNo });
    }
    await waitFor(async () => (await t.http.get('/health/ready')).status === 200, {
      what: 'readiness once the broker answers again',
    });
    // The consumer still takes messages: a purchase made now becomes an order.
    await t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(405)).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 4, {
      what: 'the next purchase to be written',
    });

    // A delivery tag acked twice makes the broker close the channel (406) and requeue the
    // window, valid messages included.
    expect(broker.channelCloses).toEqual([]);
    const ours = new Set([voided, ...valid].map((order) => order.requestId));
    const redelivered = broker.deliveries.filter(
      (delivery) =>
        delivery.redelivered &&
        ours.has((JSON.parse(delivery.body) as { requestId: string }).requestId),
    );
    expect(redelivered).toEqual([]);
    expect(await counter(t.app, 'seckill_order_messages_total', 'voided')).toBe(voidedBefore + 1);

    const orders = await stores.orders(goodsId);
    expect(
      orders
        .map((order) => order.request_id)
        .slice(0, 3)
        .sort(),
    ).toEqual(valid.map((order) => order.requestId).sort());
    expect(new Set(orders.map((order) => order.request_id)).size).toBe(4);
    const report = await t.http
      .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
      .set('Authorization', adminAuth())
      .expect(200);
    expect(report.body).toMatchObject({ consistent: true, inFlight: 0, dbStock: 6, redisStock: 6 });
  });
});
