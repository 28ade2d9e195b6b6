import { Redis } from 'ioredis';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPool, type Pool, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReplicaReadsService } from '../src/infra/database/replica-reads.service.js';
import {
  byRole,
  killServer,
  promoteReplica,
  serverUrl,
  sql,
  startPair,
  stopPair,
  type MariaPair,
} from '../scripts/lib/mariadb-pair.js';
import {
  bearer,
  consistentReconcile,
  createSale,
  ordersOnceSettled,
  startApp,
  Stores,
  waitFor,
  type TestApp,
} from './support/harness.js';
import { PrivateRedis } from './support/private-redis.js';

const DATABASE = 'seckill_test_failover';
const PREFIX = `${process.env.RABBITMQ_PREFIX}_failover`;
const MAX_LAG_MS = 3_000;

/** A purchase as its buyer saw it (ms since the crowd began). */
interface Click {
  userId: number;
  answeredMs: number;
  status: number;
  requestId?: string;
}

/** The service on a pair of its own, an api and a worker (see usePair). */
interface OnPair {
  pair: MariaPair;
  api: TestApp;
  worker: TestApp;
  stores: Stores;
  redisUrl: string;
  envFor(role: 'api' | 'worker', current: MariaPair): Record<string, string>;
  start(env: Record<string, string>): Promise<TestApp>;
  stop(app: TestApp): Promise<void>;
}

/**
 * The service on a MariaDB primary and a replica of its own (scripts/lib/mariadb-pair.ts: GTID,
 * semi-synchronous), DATABASE_REPLICA_URL naming the replica; a Redis of its own (the private
 * database numbers its goods from 1) and queues of their own.
 */
function usePair(redisDownMode: 'closed' | 'database'): OnPair {
  const apps = new Set<TestApp>();
  let redis: PrivateRedis;
  const context = {
    redisUrl: '',
    envFor: (role: 'api' | 'worker', current: MariaPair): Record<string, string> => ({
      APP_ROLE: role,
      DATABASE_URL: serverUrl(byRole(current, 'primary'), DATABASE),
      ...(role === 'api'
        ? { DATABASE_REPLICA_URL: serverUrl(byRole(current, 'replica'), DATABASE) }
        : {}),
      DATABASE_REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
      REDIS_DOWN_MODE: redisDownMode,
      REDIS_URL: redis.url,
      RABBITMQ_PREFIX: PREFIX,
      TRUSTED_PROXIES: '127.0.0.1',
    }),
    async start(env: Record<string, string>) {
      const app = await startApp(env);
      apps.add(app);
      return app;
    },
    async stop(app: TestApp) {
      apps.delete(app);
      await app.close();
    },
  } as Partial<OnPair> as OnPair;

  beforeAll(async () => {
    context.pair = await startPair(mkdtempSync(join(tmpdir(), 'seckill-mariadb-')));
    redis = await PrivateRedis.start();
    context.redisUrl = redis.url;
    context.api = await context.start(context.envFor('api', context.pair));
    context.worker = await context.start(context.envFor('worker', context.pair));
    context.stores = new Stores(
      new Redis(redis.url),
      serverUrl(byRole(context.pair, 'primary'), DATABASE),
    );
    // The api reads on the replica once it measured it caught up.
    await waitFor(() => context.api.app.get(ReplicaReadsService).lagMs !== null, {
      what: 'a first measure of the replica',
    });
  }, 120_000);

  afterAll(async () => {
    for (const app of [...apps].reverse()) await app.close().catch(() => undefined);
    await context.stores?.close();
    await redis?.kill();
    if (context.pair) await stopPair(context.pair);
  }, 60_000);

  return context;
}

describe('on a MariaDB primary and a read replica, REDIS_DOWN_MODE=closed', () => {
  const t = usePair('closed');

  it('should read an order on the replica only when asked and while it lags within the bound, and a row it lacks on the primary', async () => {
    const { api, stores } = t;
    const goodsId = await createSale(api.http, { stock: 5 });
    const userId = 71_001;
    await api.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(userId))
      .expect(202);
    const [order] = await ordersOnceSettled(stores, goodsId, 1);
    const look = (mayLag?: string) =>
      api.http
        .get(`/api/v1/orders/${order.order_no}${mayLag === undefined ? '' : `?mayLag=${mayLag}`}`)
        .set('Authorization', bearer(userId));
    const replica = byRole(t.pair, 'replica');

    const lagging = await waitFor(async () => {
      const response = await look('true');
      return response.headers['seckill-read-from'] === 'replica' ? response : null;
    });
    expect(lagging.body).toMatchObject({ orderNo: order.order_no, status: 'PENDING_PAYMENT' });
    expect((await look()).headers['seckill-read-from']).toBe('primary');
    expect((await look('false')).headers['seckill-read-from']).toBe('primary');
    const refused = await look('sometimes').expect(400);
    expect(refused.body).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });

    // The replica stops applying: the payment lands on the primary only.
    await sql(replica, 'STOP SLAVE SQL_THREAD');
    try {
      await api.http
        .post(`/api/v1/orders/${order.order_no}/pay`)
        .set('Authorization', bearer(userId))
        .expect(200);
      // Read on the primary unless asked otherwise: the payment is there.
      expect((await look()).body.status).toBe('PAID');
      // A sale created meanwhile is not on the replica: its page is read on the primary.
      const later = await createSale(api.http, { stock: 3 });
      await api.http.get(`/api/v1/goods/${later}`).expect(200);
      // Past the bound the replica is not read any more, even when asked.
      const fresh = await waitFor(
        async () => {
          const response = await look('true');
          return response.headers['seckill-read-from'] === 'primary' ? response : null;
        },
        { timeoutMs: MAX_LAG_MS + 5_000, what: 'the lagging replica to be left alone' },
      );
      expect(fresh.body.status).toBe('PAID');
      expect(api.app.get(ReplicaReadsService).lagMs).toBeGreaterThan(MAX_LAG_MS);
    } finally {
      await sql(replica, 'START SLAVE SQL_THREAD');
    }
    const caughtUp = await waitFor(async () => {
      const response = await look('true');
      return response.headers['seckill-read-from'] === 'replica' ? response : null;
    });
    expect(caughtUp.body.status).toBe('PAID');
  });

  it("should keep every 202 one order through the primary's death: purchases go on, their orders wait in RabbitMQ, and after the replica's promotion and a restart on it every one is written", async () => {
    const outcome = await failoverDrill(t);

    // Redis held the sale: the outage did not stop purchases.
    expect(outcome.duringOutage.filter((click) => click.status === 202).length).toBeGreaterThan(
      outcome.duringOutage.length / 2,
    );
  }, 180_000);
});

describe('on a MariaDB primary and a read replica, REDIS_DOWN_MODE=database', () => {
  const t = usePair('database');

  it('should answer 503 with nothing taken once its MySQL marks run out while the primary is dead, keep every 202 one order, and sell again after the promotion', async () => {
    const outcome = await failoverDrill(t);

    // Past the marks' lease (2 s) an instance that cannot read MySQL stops selling through Redis:
    // it cannot learn whether another opened the sale to the fallback.
    const late = outcome.duringOutage.filter(
      (click) => click.answeredMs > outcome.killedMs + 4_000,
    );
    expect(late.length).toBeGreaterThan(0);
    for (const click of late) expect(click.status).toBe(503);
    expect(outcome.afterRestart.some((click) => click.status === 202)).toBe(true);
  }, 180_000);
});

/**
 * The drill (docs/scaling.md): a crowd buys while the primary is SIGKILLed; 5 s later the
 * replica is promoted and the worker and the api restart on it, the crowd moving to the new api.
 * Then every 202 is one order on the new primary, none twice, reconcile consistent. Prints the
 * figures.
 */
async function failoverDrill(t: OnPair) {
  const BUYERS = 600;
  const CROWD_MS = 18_000;
  const STOCK = 500;
  const goodsId = await createSale(t.api.http, { stock: STOCK });
  const startedAt = Date.now();
  const now = () => Date.now() - startedAt;
  const clicks: Click[] = [];
  let front = t.api;
  const crowd = Promise.all(
    Array.from({ length: BUYERS }, async (_, i) => {
      await sleep((i * CROWD_MS) / BUYERS);
      const userId = 72_000 + i;
      const response = await front.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(userId))
        .set('X-Forwarded-For', `10.3.${(userId >> 8) & 255}.${userId & 255}`);
      clicks.push({
        userId,
        answeredMs: now(),
        status: response.status,
        requestId: response.body.requestId as string | undefined,
      });
    }),
  );

  // The replica's lag under the crowd: a row written on the primary, timed until the replica
  // shows it; and the api's own measure (an upper bound, to its 250 ms probe).
  const lags = await replicaLags(t.pair, () => now() < 2_500);
  const appLag = t.api.app.get(ReplicaReadsService).lagMs;
  // Then it falls behind in applying (as a busy replica's one SQL thread does): it still
  // receives every commit (semi-sync), but holds the last 1.5 s of them unapplied when the
  // primary dies. The promotion must apply them before it takes writes.
  await sql(byRole(t.pair, 'replica'), 'STOP SLAVE SQL_THREAD');
  await sleep(1_500);

  // The primary dies mid-sale: the orders wait in RabbitMQ (the worker holds them unacked until
  // their commit, and gives them back when it stops), and the goods page is served by the replica.
  await killServer(byRole(t.pair, 'primary'));
  const killedMs = now();
  await sleep(2_500);
  await t.api.http.get(`/api/v1/goods/${goodsId}`).expect(200);
  await sleep(2_500);

  // The failover: the replica applies what it received and takes writes; the worker and the api
  // restart on it (the api's reads on it too: no replica is left).
  t.pair = await promoteReplica(t.pair);
  const promotedMs = now();
  const databaseUrl = serverUrl(byRole(t.pair, 'primary'), DATABASE);
  const oldWorker = t.worker;
  t.worker = await t.start(t.envFor('worker', t.pair));
  await t.stop(oldWorker);
  const oldApi = t.api;
  t.api = await t.start({ ...t.envFor('api', t.pair), DATABASE_REPLICA_URL: '' });
  front = t.api;
  const restartedMs = now();
  await crowd;
  await t.stop(oldApi);

  for (const click of clicks) expect([202, 409, 503]).toContain(click.status);
  const accepted = clicks.filter((click) => click.status === 202);
  const duringOutage = clicks.filter(
    (click) => click.answeredMs >= killedMs && click.answeredMs <= promotedMs,
  );
  const promotedStores = new Stores(new Redis(t.redisUrl), databaseUrl);
  try {
    const orders = await ordersOnceSettled(promotedStores, goodsId, accepted.length, 60_000);
    const byRequest = new Set(orders.map((order) => String(order.request_id)));
    for (const click of accepted) expect(byRequest.has(click.requestId!)).toBe(true);
    expect(new Set(orders.map((order) => Number(order.user_id))).size).toBe(orders.length);
    expect(orders.length).toBeLessThanOrEqual(STOCK);
    expect(await consistentReconcile(t.api.http, goodsId)).toMatchObject({ inFlight: 0 });

    const acceptedInOutage = duringOutage.filter((click) => click.status === 202);
    const waited = await orderWaits(databaseUrl, goodsId, acceptedInOutage, startedAt);
    const answers = (from: number, to: number) => {
      const inside = clicks.filter((c) => c.answeredMs >= from && c.answeredMs < to);
      const ok = inside.filter((c) => c.status === 202).length;
      return `${ok} of ${inside.length} accepted`;
    };
    console.log(
      [
        `mariadb failover (REDIS_DOWN_MODE=${t.envFor('api', t.pair).REDIS_DOWN_MODE}): ${clicks.length} purchases, ${accepted.length} accepted, ${orders.length} orders`,
        `replica lag under the crowd (a row written on the primary until the replica shows it, ${lags.length} rows): p50 ${percentile(lags, 0.5)} ms, max ${Math.max(...lags)} ms; the api's measure ${appLag} ms`,
        `primary killed at ${killedMs} ms, replica promoted at ${promotedMs} ms, worker and api restarted on it by ${restartedMs} ms`,
        `answers: before the kill ${answers(0, killedMs)}; first 2 s of the outage ${answers(killedMs, killedMs + 2_000)}; rest of it ${answers(killedMs + 2_000, promotedMs)}; after the restart ${answers(restartedMs, Infinity)}`,
        waited.length === 0
          ? 'no order accepted during the outage'
          : `orders accepted during the outage waited for their row: p50 ${percentile(waited, 0.5)} ms, max ${Math.max(...waited)} ms`,
      ].join('\n'),
    );
  } finally {
    await promotedStores.close();
  }
  return {
    killedMs,
    duringOutage,
    afterRestart: clicks.filter((click) => click.answeredMs > restartedMs),
  };
}

/** Times rows written on the primary until the replica has them, while `going` says so (ms). */
async function replicaLags(pair: MariaPair, going: () => boolean): Promise<number[]> {
  const primary = createPool({ uri: serverUrl(byRole(pair, 'primary'), ''), connectionLimit: 1 });
  const replica = createPool({ uri: serverUrl(byRole(pair, 'replica'), ''), connectionLimit: 1 });
  const lags: number[] = [];
  try {
    await primary.query('CREATE DATABASE IF NOT EXISTS seckill_test_lag');
    await primary.query(
      'CREATE TABLE IF NOT EXISTS seckill_test_lag.beat (id INT AUTO_INCREMENT PRIMARY KEY)',
    );
    while (going()) {
      const [written] = await primary.query<ResultSetHeader>(
        'INSERT INTO seckill_test_lag.beat () VALUES ()',
      );
      const at = performance.now();
      for (;;) {
        const [rows] = await replica.query<RowDataPacket[]>(
          'SELECT id FROM seckill_test_lag.beat WHERE id = ?',
          [written.insertId],
        );
        if (rows.length > 0) break;
        await sleep(1);
      }
      lags.push(Math.round((performance.now() - at) * 10) / 10);
      await sleep(50);
    }
  } finally {
    await primary.end();
    await replica.end();
  }
  return lags;
}

/** How long each purchase accepted during the outage waited for its order row (ms). */
async function orderWaits(
  databaseUrl: string,
  goodsId: number,
  clicks: Click[],
  startedAt: number,
): Promise<number[]> {
  const mysql: Pool = createPool({ uri: databaseUrl, timezone: 'Z', connectionLimit: 1 });
  try {
    const [rows] = await mysql.query<RowDataPacket[]>(
      'SELECT request_id, created_at FROM seckill_order WHERE goods_id = ?',
      [goodsId],
    );
    const createdAt = new Map(rows.map((row) => [String(row.request_id), row.created_at as Date]));
    return clicks.map(
      (click) => createdAt.get(click.requestId!)!.getTime() - startedAt - click.answeredMs,
    );
  } finally {
    await mysql.end();
  }
}

function percentile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
