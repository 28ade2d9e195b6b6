import amqp from 'amqplib';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SaleRebuilderService } from '../src/modules/availability/sale-rebuilder.service.js';
import { SaleRecoveryService } from '../src/modules/availability/sale-recovery.service.js';
import { ChildApp } from './support/child-app.js';
import {
  adminAuth,
  bearer,
  createSale,
  startApp,
  Stores,
  useApp,
  waitFor,
  type TestApp,
} from './support/harness.js';
import { baseUrlOf, SseClient } from './support/sse.js';
import {
  buyUntilReopened,
  PrivateRedis,
  restartFromStaleSnapshot,
} from './support/private-redis.js';

const prefix = process.env.RABBITMQ_PREFIX!;

/** Consumers on each of the service's consumed queues, as the broker counts them. */
async function consumers(): Promise<{ orders: number; timeouts: number }> {
  const connection = await amqp.connect(process.env.RABBITMQ_URL!);
  try {
    const channel = await connection.createChannel();
    const orders = await channel.checkQueue(`${prefix}.orders`);
    const timeouts = await channel.checkQueue(`${prefix}.orders.timeout`);
    return { orders: orders.consumerCount, timeouts: timeouts.consumerCount };
  } finally {
    await connection.close();
  }
}

async function reconcile(api: TestApp, goodsId: number) {
  const response = await api.http
    .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
    .set('Authorization', adminAuth())
    .expect(200);
  return response.body as { consistent: boolean; inFlight: number; redisStock: number };
}

describe('roles: an api instance and a worker instance on one set of stores', () => {
  let api: TestApp;
  let worker: TestApp;
  const stores = new Stores();

  beforeAll(async () => {
    api = await startApp({ APP_ROLE: 'api' });
    worker = await startApp({ APP_ROLE: 'worker' });
  });

  afterAll(async () => {
    await api?.close();
    await worker?.close();
    await stores.close();
  });

  it('should write the purchases the api accepts as orders through the worker', async () => {
    const goodsId = await createSale(api.http, { stock: 10 });
    const users = [41_001, 41_002, 41_003, 41_004, 41_005];
    for (const userId of users) {
      await api.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(userId))
        .expect(202);
    }

    const orders = await waitFor(
      async () => {
        const rows = await stores.orders(goodsId);
        return rows.length === users.length ? rows : null;
      },
      { what: 'the worker to write the orders' },
    );
    expect(orders.map((order) => Number(order.user_id)).sort()).toEqual(users);
    const result = await waitFor(async () => {
      const response = await api.http
        .get(`/api/v1/seckill/${goodsId}/result`)
        .set('Authorization', bearer(users[0]))
        .expect(200);
      return response.body.status === 'SUCCESS' ? response.body : null;
    });
    expect(result.orderNo).toBe(
      orders.find((order) => Number(order.user_id) === users[0])!.order_no,
    );
    expect(await reconcile(api, goodsId)).toMatchObject({
      consistent: true,
      inFlight: 0,
      redisStock: 5,
    });
  });

  it("should push a buyer's SUCCESS from the worker's consumer to a result stream on the api", async () => {
    const goodsId = await createSale(api.http, { stock: 1 });
    const stream = await SseClient.open(
      `${baseUrlOf(api.app)}/api/v1/seckill/${goodsId}/result/stream`,
      bearer(41_007),
    );
    await stream.waitForStatus('NONE');
    await api.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(41_007))
      .expect(202);

    const success = await stream.waitForStatus('SUCCESS');
    await stream.waitForEnd();
    const [order] = await stores.orders(goodsId);
    expect(success.data.orderNo).toBe(order.order_no);
  });

  it('should have only the worker consume: one consumer on the orders queue and one on the timeout queue', async () => {
    expect(await consumers()).toEqual({ orders: 1, timeouts: 1 });
  });

  it('should guard purchases on the api and rebuild Redis on the worker, each only there', () => {
    expect(api.app.get(SaleRecoveryService)).toBeInstanceOf(SaleRecoveryService);
    expect(() => api.app.get(SaleRebuilderService)).toThrow();
    expect(worker.app.get(SaleRebuilderService)).toBeInstanceOf(SaleRebuilderService);
    expect(() => worker.app.get(SaleRecoveryService)).toThrow();
  });

  it('should serve /health/* and /metrics on the worker, with readiness over MySQL, Redis and RabbitMQ', async () => {
    await worker.http.get('/health/live').expect(200);
    const ready = await worker.http.get('/health/ready').expect(200);
    expect(Object.keys(ready.body.details).sort()).toEqual(['mysql', 'rabbitmq', 'redis']);
    const metrics = await worker.http.get('/metrics').expect(200);
    expect(metrics.text).toContain('seckill_order_messages_total');
  });

  it('should answer 404 NOT_FOUND in the contract shape for every API route on the worker, Swagger included', async () => {
    const notFound = { statusCode: 404, code: 'NOT_FOUND', message: expect.any(String) };
    const calls = [
      worker.http.post('/api/v1/seckill/1').set('Authorization', bearer(41_006)),
      worker.http.get('/api/v1/seckill/1/result').set('Authorization', bearer(41_006)),
      worker.http.get('/api/v1/seckill/1/result/stream').set('Authorization', bearer(41_006)),
      worker.http.get('/api/v1/goods/1'),
      worker.http.post('/api/v1/admin/goods').set('Authorization', adminAuth()).send({}),
      worker.http.get('/api/v1/admin/goods/1/reconcile').set('Authorization', adminAuth()),
      worker.http.get('/docs'),
    ];
    for (const call of calls) {
      const response = await call;
      expect(response.status).toBe(404);
      expect(response.body).toEqual(notFound);
    }
  });
});

describe('roles: an api instance alone', () => {
  const stores = new Stores();

  afterAll(async () => {
    await stores.close();
  });

  it('should accept purchases but consume nothing, leaving them queued until a worker starts', async () => {
    const api = await startApp({ APP_ROLE: 'api' });
    let worker: TestApp | undefined;
    try {
      const goodsId = await createSale(api.http, { stock: 5 });
      for (const userId of [42_001, 42_002, 42_003]) {
        await api.http
          .post(`/api/v1/seckill/${goodsId}`)
          .set('Authorization', bearer(userId))
          .expect(202);
      }
      expect(await consumers()).toEqual({ orders: 0, timeouts: 0 });
      expect(await stores.orders(goodsId)).toHaveLength(0);
      expect(await stores.inflight(goodsId)).toBe(3);

      worker = await startApp({ APP_ROLE: 'worker' });
      await waitFor(async () => (await stores.orders(goodsId)).length === 3, {
        what: 'the worker to write the queued orders',
      });
      expect(await reconcile(api, goodsId)).toMatchObject({ consistent: true, inFlight: 0 });
    } finally {
      await worker?.close();
      await api.close();
    }
  });
});

describe('roles: the worker readiness follows the broker', () => {
  const t = useApp({ APP_ROLE: 'worker' }, { behindProxy: 'RABBITMQ_URL' });

  it('should report not ready while the broker is unreachable and ready again once it is back', async () => {
    t.proxy.down();
    const down = await waitFor(
      async () => {
        const response = await t.http.get('/health/ready');
        return response.status === 503 ? response : null;
      },
      { what: 'readiness to drop' },
    );
    expect(down.body.code).toBe('UNAVAILABLE');

    t.proxy.up();
    await waitFor(async () => (await t.http.get('/health/ready')).status === 200, {
      timeoutMs: 30_000,
      what: 'the worker to reconnect',
    });
  });
});

describe('roles: Redis restarts under an api instance and a worker', () => {
  let redis: PrivateRedis;
  let api: TestApp;
  let worker: TestApp;
  const stores = new Stores();

  beforeAll(async () => {
    redis = await PrivateRedis.start({ dir: mkdtempSync(join(tmpdir(), 'seckill-redis-')) });
    const env = { REDIS_URL: redis.url, REDIS_WATCH_INTERVAL_MS: '200' };
    api = await startApp({ ...env, APP_ROLE: 'api' });
    worker = await startApp({ ...env, APP_ROLE: 'worker' });
  });

  afterAll(async () => {
    await api?.close();
    await worker?.close();
    await redis.kill();
    await stores.close();
  });

  it('should keep the api closed until the worker has rebuilt the sale from MySQL, never trusting a stale snapshot', async () => {
    const goodsId = await createSale(api.http, { stock: 10 });
    const buy = (userId: number) =>
      api.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    // Back with stock 7 and three buyers, where the truth is 5 and five.
    await restartFromStaleSnapshot(
      redis,
      stores,
      goodsId,
      buy,
      [43_001, 43_002, 43_003, 43_004, 43_005],
    );
    await buyUntilReopened(buy, 43_006);
    // A buyer the snapshot did not know is refused: the buyers are MySQL's, not the snapshot's.
    expect((await buy(43_004).expect(409)).body.code).toBe('ALREADY_PURCHASED');
    const report = await waitFor(async () => {
      const body = await reconcile(api, goodsId);
      return body.consistent && body.inFlight === 0 ? body : null;
    });
    expect(report).toMatchObject({ redisStock: 4, dbStock: 4, buyers: 6 });
  });
});

describe('roles: a bad APP_ROLE', () => {
  it('should stop the boot with an error naming APP_ROLE', async () => {
    const server = await ChildApp.start({ APP_ROLE: 'both' }, { waitReady: false });
    await waitFor(() => server.exited, { what: 'the server to exit' });
    expect(server.process.exitCode).toBe(1);
    expect(server.log).toContain('APP_ROLE must be one of all, api, worker, got "both"');
  });
});
