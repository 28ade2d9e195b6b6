import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createHmac, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createPool, type Pool, type RowDataPacket } from 'mysql2/promise';
import request from 'supertest';
import { afterAll, beforeAll, expect } from 'vitest';
import type TestAgent from 'supertest/lib/agent.js';
import { createApp } from '../../src/bootstrap.js';
import { encodeOrderMessage } from '../../src/modules/messaging/order-message.js';
import { MetricsService } from '../../src/modules/metrics/metrics.service.js';
import type { NewOrder } from '../../src/modules/messaging/order-message.js';
import { newOrderNo } from '../../src/modules/orders/order-no.js';
import {
  DeductCode,
  PurchaseLedgerStore,
} from '../../src/modules/sale-store/purchase-ledger.store.js';
import type { RedisClient } from '../../src/infra/redis/redis-client.js';
import { proxyInFront, type TcpProxy } from './tcp-proxy.js';
import { waitFor } from './wait-for.js';

export { waitFor };

export interface TestApp {
  app: NestFastifyApplication;
  http: TestAgent;
  close(): Promise<void>;
}

/** Starts the real app (real MySQL, Redis, RabbitMQ) on a port the OS picks. */
export async function startApp(env: Record<string, string> = {}): Promise<TestApp> {
  const { app } = await createApp({ ...process.env, ...env, PORT: '0' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const http = request(app.getHttpServer());
  // Ready as a load balancer would see it: MySQL, Redis and the broker all reachable.
  await waitFor(async () => (await http.get('/health/ready')).status === 200, {
    what: 'the app to be ready',
  });
  return { app, http, close: () => app.close() };
}

const PROXIED_SERVICES = { RABBITMQ_URL: 5672, DATABASE_URL: 3306, REDIS_URL: 6379 } as const;

/**
 * The usual e2e setup: the app started before a describe block's tests and closed after them,
 * with direct access to the stores. `behindProxy`: the app reaches that service through a
 * TcpProxy the test stalls or cuts; `onProxy` runs before the app connects (a tap then sees the
 * connection from its first byte).
 */
export function useApp(
  env: Record<string, string> = {},
  options: {
    behindProxy?: keyof typeof PROXIED_SERVICES;
    onProxy?: (proxy: TcpProxy) => void;
  } = {},
): {
  readonly http: TestAgent;
  readonly app: NestFastifyApplication;
  readonly stores: Stores;
  readonly proxy: TcpProxy;
} {
  let started: TestApp | undefined;
  let proxy: TcpProxy | undefined;
  const stores = new Stores();
  beforeAll(async () => {
    const service = options.behindProxy;
    if (service === undefined) {
      started = await startApp(env);
      return;
    }
    const through = await proxyInFront(process.env[service]!, PROXIED_SERVICES[service]);
    proxy = through.proxy;
    options.onProxy?.(proxy);
    started = await startApp({ ...env, [service]: through.url });
  });
  afterAll(async () => {
    // Restored first, so that the app can close its connections cleanly.
    proxy?.resume();
    proxy?.up();
    await started?.close();
    await proxy?.close();
    await stores.close();
  });
  return {
    get http() {
      return started!.http;
    },
    get app() {
      return started!.app;
    },
    stores,
    get proxy() {
      if (!proxy) throw new Error('useApp() without behindProxy has no proxy');
      return proxy;
    },
  };
}

function base64url(value: object | string): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString(
    'base64url',
  );
}

/** HS256 token signed the way a real identity provider would; claims are overridable. */
export function token(
  userId: number | string,
  options: {
    admin?: boolean;
    claims?: Record<string, unknown>;
    secret?: string;
    alg?: string;
  } = {},
): string {
  const header = base64url({ alg: options.alg ?? 'HS256', typ: 'JWT' });
  const now = Math.floor(Date.now() / 1000);
  const payload = base64url({
    sub: String(userId),
    iat: now,
    exp: now + 3600,
    ...(options.admin ? { role: 'admin' } : {}),
    ...options.claims,
  });
  const signature = createHmac('sha256', options.secret ?? process.env.JWT_SECRET!)
    .update(`${header}.${payload}`)
    .digest('base64url');
  return `${header}.${payload}.${signature}`;
}

export const bearer = (userId: number, admin = false) => `Bearer ${token(userId, { admin })}`;
export const adminAuth = () => bearer(1, true);

export interface SaleOptions {
  stock?: number;
  startsInMs?: number;
  lastsMs?: number;
  perUserLimit?: number;
  preheat?: boolean;
  /** Stock buckets; the app's STOCK_SHARDS when left out. */
  stockShards?: number;
  /** A queue sale (admission `queue`): its pace, and when its waiting room opens (ms from now). */
  queue?: { admitPerSecond: number; admissionTtlSeconds: number; opensInMs?: number };
  /**
   * A draw sale (admission `draw`): entries from `opensInMs` from now (default: open already)
   * until `closesInMs` from now, each right lasting claimSeconds.
   */
  draw?: { closesInMs: number; claimSeconds: number; winnersFactor?: number; opensInMs?: number };
}

/** Creates a sale through the admin API (and preheats it unless told not to); returns its id. */
export async function createSale(http: TestAgent, options: SaleOptions = {}): Promise<number> {
  const start = Date.now() + (options.startsInMs ?? -1_000);
  const created = await http
    .post('/api/v1/admin/goods')
    .set('Authorization', adminAuth())
    .send({
      name: 'Test phone',
      price: 999.99,
      stock: options.stock ?? 10,
      startAt: new Date(start).toISOString(),
      endAt: new Date(start + (options.lastsMs ?? 3_600_000)).toISOString(),
      perUserLimit: options.perUserLimit ?? 1,
      ...(options.stockShards === undefined ? {} : { stockShards: options.stockShards }),
      ...(options.queue === undefined
        ? {}
        : {
            admission: 'queue',
            admitPerSecond: options.queue.admitPerSecond,
            admissionTtlSeconds: options.queue.admissionTtlSeconds,
            ...(options.queue.opensInMs === undefined
              ? {}
              : { queueOpensAt: new Date(Date.now() + options.queue.opensInMs).toISOString() }),
          }),
      ...(options.draw === undefined
        ? {}
        : {
            admission: 'draw',
            entriesOpenAt: new Date(Date.now() + (options.draw.opensInMs ?? -1_000)).toISOString(),
            entriesCloseAt: new Date(Date.now() + options.draw.closesInMs).toISOString(),
            claimSeconds: options.draw.claimSeconds,
            ...(options.draw.winnersFactor === undefined
              ? {}
              : { winnersFactor: options.draw.winnersFactor }),
          }),
    })
    .expect(201);
  const goodsId = (created.body as { id: number }).id;
  if (options.preheat ?? true) {
    // A 503 says come back, nothing changed (e.g. a queue sale's room being restored by the
    // admission job at that moment): as an operator would, the preheat is asked again.
    await waitFor(
      async () => {
        const response = await http
          .post(`/api/v1/admin/goods/${goodsId}/preheat`)
          .set('Authorization', adminAuth());
        if (response.status === 503) return null;
        expect(response.status).toBe(200);
        return response;
      },
      { timeoutMs: 15_000, what: `goods ${goodsId} preheated` },
    );
  }
  return goodsId;
}

/** Direct read access to the stores, for asserting invariants from outside the app. */
export class Stores {
  readonly mysql: Pool;

  /**
   * The test's own Redis client (REDIS_URL's server unless given another: a cluster, a private
   * server) and MySQL (DATABASE_URL's unless given another).
   */
  constructor(
    readonly redis: RedisClient = new Redis(process.env.REDIS_URL!),
    databaseUrl = process.env.DATABASE_URL!,
  ) {
    this.mysql = createPool({ uri: databaseUrl, connectionLimit: 4 });
  }

  async orders(goodsId: number) {
    const [rows] = await this.mysql.query<RowDataPacket[]>(
      'SELECT order_no, request_id, user_id, quantity, status FROM seckill_order WHERE goods_id = ? ORDER BY id',
      [goodsId],
    );
    return rows as {
      order_no: string;
      request_id: string;
      user_id: number;
      quantity: number;
      status: string;
    }[];
  }

  async mysqlStock(goodsId: number): Promise<number> {
    const [rows] = await this.mysql.query<RowDataPacket[]>(
      'SELECT stock FROM seckill_goods WHERE id = ?',
      [goodsId],
    );
    return Number(rows[0].stock);
  }

  async redisStock(goodsId: number): Promise<number | null> {
    const value = await this.redis.get(`seckill:{${goodsId}}:stock`);
    return value === null ? null : Number(value);
  }

  async redisBuyers(goodsId: number): Promise<Record<string, string>> {
    return this.redis.hgetall(`seckill:{${goodsId}}:buyers`);
  }

  /**
   * Ends every open sale of the shared test database but this one (earlier files' last an hour):
   * a Redis restart's rebuild goes through every open sale before it reopens this one.
   */
  async endOtherSales(goodsId: number): Promise<void> {
    await this.mysql.query(
      'UPDATE seckill_goods SET start_at = LEAST(start_at, NOW(3) - INTERVAL 1 SECOND), end_at = NOW(3) WHERE id <> ? AND end_at > NOW(3)',
      [goodsId],
    );
  }

  async inflight(goodsId: number): Promise<number> {
    return this.redis.hlen(`seckill:{${goodsId}}:inflight`);
  }

  async close(): Promise<void> {
    this.redis.disconnect();
    await this.mysql.end();
  }
}

/**
 * A crowd at a sale: every user clicks twice at once, from an address of its own (the test client
 * is the trusted proxy), the clicks spread over `instances` in turn, so that with several a
 * user's two clicks land on two of them. Returns every answer.
 */
export function doubleClickCrowd(
  instances: TestAgent[],
  goodsId: number,
  users: number[],
): Promise<CrowdAnswer[]> {
  return Promise.all(
    users.flatMap((userId) =>
      [0, 1].map((click) =>
        instances[(userId + click) % instances.length]
          .post(`/api/v1/seckill/${goodsId}`)
          .set('Authorization', bearer(userId))
          .set('X-Forwarded-For', `10.1.${(userId >> 8) & 255}.${userId & 255}`)
          .then((response) => ({
            userId,
            status: response.status,
            code: response.body.code as string | undefined,
          })),
      ),
    ),
  );
}

/** A crowd's answer, as doubleClickCrowd gives it. */
export interface CrowdAnswer {
  userId: number;
  status: number;
  code?: string;
}

/**
 * What a crowd at a sale of `stock` must end with: exactly `stock` purchases accepted, one per
 * user, every refusal the sale's own (sold out, already bought, a concurrent click), and once they
 * land, one order per accepted buyer with nothing left in flight. Returns the orders.
 */
export async function expectCrowdSold(
  stores: Stores,
  goodsId: number,
  stock: number,
  responses: CrowdAnswer[],
) {
  const accepted = responses.filter((response) => response.status === 202);
  expect(accepted).toHaveLength(stock);
  expect(new Set(accepted.map((response) => response.userId)).size).toBe(stock);
  for (const refused of responses.filter((response) => response.status !== 202)) {
    expect(['SOLD_OUT', 'ALREADY_PURCHASED', 'DUPLICATE_REQUEST']).toContain(refused.code);
  }
  const orders = await ordersOnceSettled(stores, goodsId, stock);
  expect(orders).toHaveLength(stock);
  expect(new Set(orders.map((order) => Number(order.user_id)))).toEqual(
    new Set(accepted.map((response) => response.userId)),
  );
  return orders;
}

/**
 * Waits until the goods has at least `count` orders and nothing in flight in Redis (the queues
 * drained after a fault); returns its orders.
 */
export function ordersOnceSettled(
  stores: Stores,
  goodsId: number,
  count: number,
  timeoutMs = 30_000,
) {
  return waitFor(
    async () => {
      const rows = await stores.orders(goodsId);
      return rows.length >= count && (await stores.inflight(goodsId)) === 0 ? rows : null;
    },
    { timeoutMs, what: `${count} orders and nothing in flight` },
  );
}

/** Waits until the sale's reconcile (the admin route) says the stores agree; returns the report. */
export async function consistentReconcile(http: TestAgent, goodsId: number) {
  return waitFor(async () => {
    const response = await http
      .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
      .set('Authorization', adminAuth())
      .expect(200);
    return response.body.consistent ? (response.body as Record<string, unknown>) : null;
  });
}

/** Waits until every purchase Redis took is settled: nothing in flight, nothing in the outbox. */
export async function waitForSettled(stores: Stores, goodsId: number): Promise<void> {
  await waitFor(
    async () =>
      (await stores.inflight(goodsId)) === 0 &&
      (await stores.redis.zcard(`seckill:{${goodsId}}:outbox`)) === 0,
    { timeoutMs: 30_000, what: 'every accepted purchase to settle' },
  );
}

/**
 * Each purchase Redis took (answered 202 or cut off before its answer) is exactly one order: one
 * per request and per user, never more than the stock, and MySQL's stock agrees. Returns them.
 */
export async function expectOneOrderPerPurchaseTaken(
  stores: Stores,
  goodsId: number,
  stock: number,
) {
  const orders = await stores.orders(goodsId);
  expect(orders.length).toBe(stock - (await stores.redisStock(goodsId))!);
  expect(orders.length).toBeLessThanOrEqual(stock);
  expect(new Set(orders.map((order) => order.request_id)).size).toBe(orders.length);
  expect(new Set(orders.map((order) => order.user_id)).size).toBe(orders.length);
  expect(await stores.mysqlStock(goodsId)).toBe(stock - orders.length);
  return orders;
}

/** The value of one labelled series of a counter in the app's own metrics registry. */
export async function counter(
  app: NestFastifyApplication,
  name: string,
  label: string,
): Promise<number> {
  const metric = await app.get(MetricsService).registry.getSingleMetric(name)?.get();
  return metric?.values.find((value) => Object.values(value.labels).includes(label))?.value ?? 0;
}

/**
 * Runs only the purchase's Lua step, as if the process died before publishing: the purchase is
 * known to Redis (stock taken, outbox entry) and nowhere else. Returns the order it stands for.
 */
export async function acceptWithoutPublishing(
  app: NestFastifyApplication,
  goodsId: number,
  userId: number,
): Promise<NewOrder> {
  const order = newPurchase(goodsId, userId);
  const { code } = await app
    .get(PurchaseLedgerStore)
    .deduct(goodsId, userId, 1, order.requestId, encodeOrderMessage(order));
  if (code !== DeductCode.Accepted) throw new Error(`the Lua step refused: code ${code}`);
  return order;
}

/** A purchase of one unit as the API would make it (new request id and order number). */
export function newPurchase(goodsId: number, userId: number): NewOrder {
  return {
    requestId: randomUUID(),
    orderNo: newOrderNo(),
    userId,
    goodsId,
    quantity: 1,
    acceptedAt: Date.now(),
  };
}

/** The buyer's purchase result, as `GET /api/v1/seckill/:id/result` answers it. */
export async function purchaseResult(http: TestAgent, goodsId: number, userId: number) {
  const response = await http
    .get(`/api/v1/seckill/${goodsId}/result`)
    .set('Authorization', bearer(userId))
    .expect(200);
  return response.body as { status: string; requestId: string; orderNo?: string; reason?: string };
}
