import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import type { PoolConnection } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { barrierKeys } from '../src/infra/redis/seckill-keys.js';
import {
  RedisBarrierStore,
  type OpenBarrier,
} from '../src/modules/messaging/redis-barrier.store.js';
import { MetricsService } from '../src/modules/metrics/metrics.service.js';
import { OrderIngestService } from '../src/modules/order-ingest/order-ingest.service.js';
import { bearer, createSale, useApp, waitFor, type Stores } from './support/harness.js';

const ordersQueue = `${process.env.RABBITMQ_PREFIX!}.orders`;

/** Every order message the app's consumer settled so far, whatever its outcome. */
async function settledMessages(app: NestFastifyApplication): Promise<number> {
  const metric = await app.get(MetricsService).orderMessages.get();
  return metric.values.reduce((sum, value) => sum + value.value, 0);
}

/** The order barrier's registry as Redis holds it: the sessions alive, by heartbeat expiry. */
async function liveSessions(stores: Stores): Promise<Map<string, number>> {
  const entries = await stores.redis.zrange(barrierKeys.consumers, 0, -1, 'WITHSCORES');
  const now = Number((await stores.redis.time())[0]) * 1000;
  const alive = new Map<string, number>();
  for (let i = 0; i < entries.length; i += 2) {
    if (Number(entries[i + 1]) > now) alive.set(entries[i], Number(entries[i + 1]));
  }
  return alive;
}

/** Resolves after `n` more heartbeats of this session: each is one tick of its consumer. */
async function beats(stores: Stores, session: string, n: number): Promise<void> {
  for (let beat = 0; beat < n; beat++) {
    const last = (await liveSessions(stores)).get(session);
    await waitFor(async () => (await liveSessions(stores)).get(session) !== last, {
      what: `a heartbeat of ${session}`,
    });
  }
}

/** The only consumer session alive, once any other has gone from the registry. */
async function onlySession(stores: Stores): Promise<string> {
  return waitFor(
    async () => {
      const sessions = [...(await liveSessions(stores)).keys()];
      return sessions.length === 1 ? sessions[0] : null;
    },
    { what: 'a single consumer session in the registry' },
  );
}

/** The orders queue as the broker counts it, read on a connection of the test's own. */
function brokerView() {
  let connection: ChannelModel;
  let channel: Channel;
  return {
    open: async () => {
      connection = await amqp.connect(process.env.RABBITMQ_URL!);
      channel = await connection.createChannel();
    },
    queue: () => channel.checkQueue(ordersQueue),
    close: () => connection.close(),
  };
}

/** Holds a goods row (SELECT … FOR UPDATE): a batch's stock UPDATE on it waits until release. */
async function lockGoods(stores: Stores, goodsId: number) {
  const connection: PoolConnection = await stores.mysql.getConnection();
  await connection.query('START TRANSACTION');
  await connection.query('SELECT id FROM seckill_goods WHERE id = ? FOR UPDATE', [goodsId]);
  return {
    release: async () => {
      await connection.query('ROLLBACK');
      connection.release();
    },
  };
}

/** Waits until a batch's stock UPDATE is under way (held by lockGoods). */
async function batchWaitingOnLock(stores: Stores): Promise<void> {
  await waitFor(
    async () => {
      const [rows] = await stores.mysql.query(
        `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST
          WHERE DB = DATABASE() AND INFO LIKE 'UPDATE seckill_goods SET stock = stock -%'`,
      );
      return Number((rows as { n: number }[])[0].n) > 0;
    },
    { what: "the batch's stock UPDATE to wait on the goods row" },
  );
}

async function buy(http: ReturnType<typeof useApp>['http'], goodsId: number, users: number[]) {
  await Promise.all(
    users.map((userId) =>
      http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId)).expect(202),
    ),
  );
}

describe('consumer sessions: a channel re-opened while a batch is in flight', () => {
  const t = useApp({}, { behindProxy: 'RABBITMQ_URL' });
  const stores = t.stores;
  const broker = brokerView();
  beforeAll(() => broker.open());
  afterAll(() => broker.close());

  it("should mark a barrier drained only once the new session's own deliveries are written, whatever the old session settles late", async () => {
    const held = await createSale(t.http, { stock: 10 });
    const newer = await createSale(t.http, { stock: 10 });
    const barriers = t.app.get(RedisBarrierStore);

    // Session 1 settles three deliveries, then holds a batch of three more (numbers 4-6): their
    // goods row is locked, so the batch's stock UPDATE waits.
    await buy(t.http, held, [1001, 1002, 1003]);
    await waitFor(
      async () => (await stores.orders(held)).length === 3 && (await stores.inflight(held)) === 0,
      {
        what: 'the first three orders',
      },
    );
    const heldRow = await lockGoods(stores, held);
    const newerRow = await lockGoods(stores, newer);
    try {
      await buy(t.http, held, [1004, 1005, 1006]);
      await batchWaitingOnLock(stores);
      await waitFor(async () => (await broker.queue()).messageCount === 0, {
        what: 'session 1 to hold the three messages',
      });

      // The consumer's connection drops: the broker takes the three back and redelivers them to
      // session 2 (numbers 1-3), then three newer purchases (4-6), also held on a locked row.
      t.proxy.down();
      await waitFor(async () => (await broker.queue()).consumerCount === 0, {
        what: 'the broker to drop the consumer',
      });
      t.proxy.up();
      await waitFor(
        async () => {
          const queue = await broker.queue();
          return queue.consumerCount === 1 && queue.messageCount === 0;
        },
        { timeoutMs: 30_000, what: 'session 2 to take the three messages back' },
      );
      await waitFor(async () => (await t.http.get('/health/ready')).status === 200, {
        timeoutMs: 30_000,
        what: 'the app to reconnect',
      });
      await buy(t.http, newer, [1007, 1008, 1009]);
      await waitFor(async () => (await broker.queue()).messageCount === 0, {
        what: 'session 2 to hold the newer messages',
      });

      // Session 1 gone from the registry, a barrier opens and reaches session 2.
      const session = await onlySession(stores);
      const barrier: OpenBarrier = await barriers.open();
      await waitFor(() => barriers.isDelivered(barrier.id), { what: 'the barrier delivered' });
      await beats(stores, session, 2);

      // Session 1's batch is written and settles its deliveries 4-6 late, on its closed channel;
      // session 2's copies of them are settled as duplicates right after.
      const before = await settledMessages(t.app);
      await heldRow.release();
      await waitFor(async () => (await settledMessages(t.app)) >= before + 6, {
        what: "session 1's batch and session 2's copies of it settled",
      });
      await beats(stores, session, 3);

      // Session 2's own deliveries 4-6 are still unwritten: the barrier must wait for them.
      expect(await stores.orders(newer)).toHaveLength(0);
      expect(await barriers.check(barrier)).toBe('waiting');

      await newerRow.release();
      await waitFor(async () => (await barriers.check(barrier)) === 'passed', {
        what: 'the barrier to pass',
      });
      expect(await stores.orders(newer)).toHaveLength(3);
    } finally {
      await heldRow.release().catch(() => undefined);
      await newerRow.release().catch(() => undefined);
    }
    expect(await stores.orders(held)).toHaveLength(6);
  });
});

describe('consumer sessions: a batch abandoned by the consumer', () => {
  const t = useApp();
  const stores = t.stores;

  afterAll(() => vi.restoreAllMocks());

  it('should give an abandoned batch back to the queue and pass a barrier only once its order is written', async () => {
    const goodsId = await createSale(t.http, { stock: 10 });
    const barriers = t.app.get(RedisBarrierStore);
    const ingest = t.app.get(OrderIngestService);
    const real = ingest.ingest.bind(ingest);
    // Ingest's calls for this goods: the first fails unexpectedly (a bug) once let go, the
    // second (the message given back) is held until let go.
    const gates: (() => void)[] = [];
    let calls = 0;
    vi.spyOn(ingest, 'ingest').mockImplementation(async (id, purchases, stop) => {
      if (id !== goodsId) return real(id, purchases, stop);
      const call = ++calls;
      if (call <= 2) await new Promise<void>((resolve) => gates.push(resolve));
      if (call === 1) throw new Error('a bug in the batch');
      return real(id, purchases, stop);
    });

    await buy(t.http, goodsId, [2001]);
    await waitFor(() => calls === 1, { what: 'the batch to start' });
    const session = await onlySession(stores);
    let barrier = await barriers.open();
    await waitFor(() => barriers.isDelivered(barrier.id), { what: 'the barrier delivered' });
    // The session has fenced its channel: the held delivery is counted before the barrier.
    await beats(stores, session, 2);

    gates.shift()!();
    await waitFor(() => calls === 2, {
      what: 'the abandoned message to be delivered again',
    });
    // Given back after the barrier was delivered, it is now behind it: no session may count it
    // settled while it is unwritten.
    const sessions = [...(await liveSessions(stores)).keys()];
    await beats(stores, sessions.find((s) => s !== session) ?? session, 4);
    expect(await barriers.check(barrier)).not.toBe('passed');
    expect(await stores.orders(goodsId)).toHaveLength(0);

    gates.shift()!();
    // As its opener does: a barrier the old session left undrained is opened again.
    await waitFor(
      async () => {
        const state = await barriers.check(barrier);
        if (state === 'restart') barrier = await barriers.open();
        return state === 'passed';
      },
      { what: 'a barrier to pass' },
    );
    expect(await stores.orders(goodsId)).toHaveLength(1);
    expect(await stores.mysqlStock(goodsId)).toBe(9);
  });
});
