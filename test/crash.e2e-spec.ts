import { afterAll, describe, expect, it } from 'vitest';
import { recordChaos, secondsSince } from './support/chaos-report.js';
import {
  adminAuth,
  bearer,
  createSale,
  expectOneOrderPerPurchaseTaken,
  startApp,
  Stores,
  waitFor,
  waitForSettled,
} from './support/harness.js';
import { ChildApp } from './support/child-app.js';

/**
 * The process is killed outright (SIGKILL) in the middle of a burst: between Lua steps and
 * publishes, with confirms outstanding and a consumer batch half done. The next instance must
 * finish the job: every accepted purchase becomes exactly one order, none twice.
 */
describe('crash recovery', () => {
  const stores = new Stores();
  afterAll(async () => {
    await stores.close();
  });

  it('should lose and duplicate nothing when the app is killed mid-burst', async () => {
    const stock = 1_000;
    // One test machine plays a crowd of 400 here: its address must not hit the per-IP limit.
    const victim = await ChildApp.start({
      CONSUMER_BATCH_WAIT_MS: '50',
      THROTTLE_PURCHASE_IP_LIMIT: '0',
    });
    const goodsId = await victim.createSale(stock);

    let accepted = 0;
    let killAfter!: () => void;
    const enoughAccepted = new Promise<void>((resolve) => (killAfter = resolve));
    const burst = Promise.all(
      Array.from({ length: 2_000 }, (_, i) =>
        victim
          .post(`/api/v1/seckill/${goodsId}`, bearer(90_000 + i))
          .then((response) => {
            if (response.status === 202 && ++accepted >= 40) killAfter();
            return response.status;
          })
          .catch(() => 0),
      ),
    );
    await enoughAccepted;
    expect(await victim.stop('SIGKILL')).toBeNull();
    const statuses = await burst;
    const acceptedBeforeKill = statuses.filter((status) => status === 202).length;
    expect(acceptedBeforeKill).toBeGreaterThanOrEqual(40);

    // A new instance, with the outbox sweeper on, takes over.
    const healedAt = Date.now();
    const survivor = await startApp({
      OUTBOX_SWEEP_ENABLED: 'true',
      OUTBOX_SWEEP_INTERVAL_MS: '200',
      OUTBOX_STALE_MS: '1000',
    });
    // Closed before the next test: its consumer must not drain that test's backlog.
    try {
      await waitForSettled(stores, goodsId);
      // Accepted: every purchase Redis took, answered or not (the kill cuts answers off).
      await recordChaos(stores, {
        scenario: 'app SIGKILL mid-burst',
        fault: `the server SIGKILLed mid-burst; ${acceptedBeforeKill} answers of 202 reached clients`,
        goodsId,
        requests: statuses.length,
        accepted: stock - (await stores.redisStock(goodsId))!,
        recoveredSeconds: secondsSince(healedAt),
      });

      const orders = await expectOneOrderPerPurchaseTaken(stores, goodsId, stock);
      expect(orders.length).toBeGreaterThanOrEqual(acceptedBeforeKill);
      const buyers = await stores.redisBuyers(goodsId);
      expect(Object.keys(buyers)).toHaveLength(orders.length);

      const report = await survivor.http
        .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
        .set('Authorization', adminAuth())
        .expect(200);
      expect(report.body).toMatchObject({ consistent: true, inFlight: 0 });
    } finally {
      await survivor.close();
    }
  });

  it('should republish a purchase whose process died right after the Lua step', async () => {
    const victim = await ChildApp.start({
      FAULT_CRASH_POINT: 'after-deduct',
      FAULT_CRASH_AFTER: '3',
    });
    const goodsId = await victim.createSale(10);

    const answers: number[] = [];
    for (const userId of [95_001, 95_002, 95_003]) {
      answers.push(
        await victim.post(`/api/v1/seckill/${goodsId}`, bearer(userId)).then(
          (r) => r.status,
          () => 0,
        ),
      );
    }
    expect(answers).toEqual([202, 202, 0]); // the third never got an answer: the process died
    await waitFor(() => victim.exited, {
      what: 'the victim to die',
    });
    expect(await stores.redis.zcard(`seckill:{${goodsId}}:outbox`)).toBeGreaterThanOrEqual(1);

    const healedAt = Date.now();
    const next = await startApp({
      OUTBOX_SWEEP_ENABLED: 'true',
      OUTBOX_SWEEP_INTERVAL_MS: '200',
      OUTBOX_STALE_MS: '500',
    });
    try {
      const orders = await waitFor(
        async () => {
          const rows = await stores.orders(goodsId);
          return rows.length === 3 ? rows : null;
        },
        { timeoutMs: 20_000, what: 'the orphaned purchase to become an order' },
      );
      await recordChaos(stores, {
        scenario: 'app SIGKILL after the Lua step',
        fault: 'the server SIGKILLed between taking the stock and publishing (the outbox only)',
        goodsId,
        requests: 3,
        // The third purchase got no answer, but Redis had taken it: it must not be lost.
        accepted: 3,
        recoveredSeconds: secondsSince(healedAt),
      });
      expect(orders.map((order) => Number(order.user_id)).sort()).toEqual([95_001, 95_002, 95_003]);
      const result = await waitFor(async () => {
        const response = await next.http
          .get(`/api/v1/seckill/${goodsId}/result`)
          .set('Authorization', bearer(95_003))
          .expect(200);
        return response.body.status === 'SUCCESS' ? response.body : null;
      });
      expect(result.orderNo).toBe(
        orders.find((order) => Number(order.user_id) === 95_003)!.order_no,
      );
      expect(await stores.mysqlStock(goodsId)).toBe(7);
      expect(await stores.redisStock(goodsId)).toBe(7);
    } finally {
      await next.close();
    }
  });

  it('should write no order twice when a consumer dies between the MySQL commit and the ack', async () => {
    // Purchases pile up in RabbitMQ while no consumer runs.
    const front = await startApp({ CONSUMER_ENABLED: 'false', THROTTLE_PURCHASE_IP_LIMIT: '0' });
    let goodsId: number;
    try {
      goodsId = await createSale(front.http, { stock: 100 });
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          front.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(96_000 + i)),
        ),
      );
      expect(answers.filter((answer) => answer.status === 202)).toHaveLength(100);
    } finally {
      await front.close();
    }

    // A consumer commits its second batch and dies before acking it.
    const victim = await ChildApp.start(
      {
        FAULT_CRASH_POINT: 'after-commit',
        FAULT_CRASH_AFTER: '2',
        CONSUMER_BATCH_SIZE: '20',
        CONSUMER_PREFETCH: '20',
      },
      { waitReady: false },
    );
    await waitFor(() => victim.exited, {
      timeoutMs: 20_000,
      what: 'the consumer to die mid-drain',
    });
    expect(victim.process.signalCode).toBe('SIGKILL');
    const written = (await stores.orders(goodsId)).length;
    expect(written).toBeGreaterThanOrEqual(40);
    expect(written).toBeLessThan(100);

    const healedAt = Date.now();
    const next = await startApp();
    try {
      const orders = await waitFor(
        async () => {
          const rows = await stores.orders(goodsId);
          return rows.length >= 100 && (await stores.inflight(goodsId)) === 0 ? rows : null;
        },
        { timeoutMs: 30_000, what: 'the rest of the orders' },
      );
      await recordChaos(stores, {
        scenario: 'consumer SIGKILL mid-drain',
        fault: 'the consumer SIGKILLed between a batch commit and its ack',
        goodsId,
        requests: 100,
        accepted: 100,
        recoveredSeconds: secondsSince(healedAt),
      });
      expect(orders).toHaveLength(100);
      expect(new Set(orders.map((order) => order.request_id)).size).toBe(100);
      expect(await stores.mysqlStock(goodsId)).toBe(0);
      const report = await next.http
        .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
        .set('Authorization', adminAuth())
        .expect(200);
      expect(report.body).toMatchObject({ consistent: true, inFlight: 0, redisStock: 0 });
    } finally {
      await next.close();
    }
  });

  it('should give the stock back exactly once when the timeout consumer dies between the cancel and its ack', async () => {
    const victim = await ChildApp.start({
      ORDER_PAYMENT_TIMEOUT_MS: '2000',
      FAULT_CRASH_POINT: 'after-cancel-commit',
    });
    const goodsId = await victim.createSale(3);
    expect((await victim.post(`/api/v1/seckill/${goodsId}`, bearer(97_001))).status).toBe(202);

    // The order is written, expires, is cancelled in MySQL, and the process dies right there.
    await waitFor(() => victim.exited, { timeoutMs: 20_000, what: 'the victim to die' });
    const [order] = await stores.orders(goodsId);
    expect(order.status).toBe('CANCELLED');
    expect(await stores.mysqlStock(goodsId)).toBe(3);
    expect(await stores.redisStock(goodsId)).toBe(2);

    const healedAt = Date.now();
    const next = await startApp({ ORDER_PAYMENT_TIMEOUT_MS: '2000' });
    try {
      // The unacked timeout message comes back and finishes the stock return, once.
      await waitFor(async () => (await stores.redisStock(goodsId)) === 3, {
        timeoutMs: 20_000,
        what: 'redis to get the stock back',
      });
      await recordChaos(stores, {
        scenario: 'timeout consumer SIGKILL before ack',
        fault: "killed between an expired order's cancel commit and its Redis restock",
        goodsId,
        requests: 1,
        accepted: 1,
        recoveredSeconds: secondsSince(healedAt),
      });
      expect(await stores.redisBuyers(goodsId)).toEqual({});
      const report = await next.http
        .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
        .set('Authorization', adminAuth())
        .expect(200);
      expect(report.body).toMatchObject({ consistent: true, redisStock: 3, dbStock: 3 });
      await next.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(97_001))
        .expect(202);
    } finally {
      await next.close();
    }
  });
});
