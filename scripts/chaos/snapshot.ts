// Reading the stores once the run is quiet: MySQL and Redis straight (not through the proxies),
// the reconcile route as an operator would call it, the queues through amqplib.
import amqp from 'amqplib';
import type { Pool, RowDataPacket } from 'mysql2/promise';

import { setTimeout as sleep } from 'node:timers/promises';

import type { RedisClient } from '../../src/infra/redis/redis-client.js';
import { allBucketKeys, queueKeys } from '../../src/infra/redis/seckill-keys.js';
import { allBuyers, bucketStocks, unsettled } from '../../test/support/stock-buckets.js';
import { requestJson } from '../lib/http.js';
import type { OrderRow, SaleSnapshot } from './checker.js';
import type {
  AdmissionRecord,
  QueueDrawSnapshot,
  QueueJournalSnapshot,
  QueueRoomSnapshot,
  RoomSample,
} from './queue-checks.js';
import type { Endpoint, Sale } from './workload.js';

export interface Stores {
  mysql: Pool;
  redis: RedisClient;
  rabbitUrl: string;
  /** RABBITMQ_PREFIX of the instances. */
  prefix: string;
  paymentTimeoutMs: number;
}

export async function readSale(
  stores: Stores,
  sale: Sale,
  endpoint: Endpoint,
  adminToken: string,
): Promise<SaleSnapshot> {
  const [[goods]] = await stores.mysql.query<RowDataPacket[]>(
    'SELECT total_stock, stock FROM seckill_goods WHERE id = ?',
    [sale.goodsId],
  );
  const [rows] = await stores.mysql.query<RowDataPacket[]>(
    // created_at as ms since the epoch: the app writes DATETIMEs as UTC (utc-sessions.ts).
    `SELECT order_no, request_id, user_id, quantity, status,
            TIMESTAMPDIFF(MICROSECOND, '1970-01-01', created_at) DIV 1000 AS created_ms,
            TIMESTAMPDIFF(MICROSECOND, '1970-01-01', updated_at) DIV 1000 AS updated_ms
       FROM seckill_order WHERE goods_id = ? ORDER BY id`,
    [sale.goodsId],
  );
  const orders: OrderRow[] = rows.map((row) => ({
    orderNo: String(row.order_no),
    requestId: String(row.request_id),
    userId: Number(row.user_id),
    quantity: Number(row.quantity),
    status: row.status as OrderRow['status'],
    createdAtEpochMs: Number(row.created_ms),
    updatedAtEpochMs: Number(row.updated_ms),
  }));
  const stocks = await bucketStocks(stores.redis, sale.goodsId, sale.stockShards);
  const buyers = await allBuyers(stores.redis, sale.goodsId, sale.stockShards);
  const restocked: string[] = [];
  const retaken: string[] = [];
  for (const keys of allBucketKeys(sale.goodsId, sale.stockShards)) {
    restocked.push(...(await stores.redis.smembers(keys.restocked)));
    retaken.push(...(await stores.redis.hkeys(keys.retaken)));
  }
  const [paymentEvents] = await stores.mysql.query<RowDataPacket[]>(
    'SELECT order_no, type, outcome FROM seckill_payment_event WHERE goods_id = ? ORDER BY received_at',
    [sale.goodsId],
  );
  const [merchantEvents] = await stores.mysql.query<RowDataPacket[]>(
    `SELECT event_id, order_no, type, delivered_at IS NOT NULL AS delivered, parked_at IS NOT NULL AS parked,
            TIMESTAMPDIFF(MICROSECOND, '1970-01-01', created_at) DIV 1000 AS at_ms
       FROM seckill_merchant_event WHERE goods_id = ? ORDER BY id`,
    [sale.goodsId],
  );
  const reconcile = await requestJson(
    'GET',
    `${endpoint.baseUrl}/api/v1/admin/goods/${sale.goodsId}/reconcile`,
    { token: adminToken },
  ).catch(() => undefined);
  return {
    goodsId: sale.goodsId,
    name: sale.name,
    totalStock: Number(goods?.total_stock),
    mysqlStock: Number(goods?.stock),
    orders,
    redisStock: redisRemaining(stocks),
    redisBuyers: Object.fromEntries(Object.entries(buyers).map(([u, q]) => [u, Number(q)])),
    restocked,
    retaken,
    paymentEvents: paymentEvents.map((row) => ({
      orderNo: String(row.order_no),
      type: String(row.type),
      outcome: String(row.outcome),
    })),
    merchantEvents: merchantEvents.map((row) => ({
      eventId: String(row.event_id),
      orderNo: String(row.order_no),
      type: String(row.type),
      delivered: Number(row.delivered) === 1,
      parked: Number(row.parked) === 1,
      atEpochMs: Number(row.at_ms),
    })),
    reconcile: reconcile?.status === 200 ? (reconcile.body as { consistent: boolean }) : null,
    ended: Date.now() >= sale.endAtEpochMs,
  };
}

/** What each store says is left of a sale (Redis over every bucket; null when it lacks one). */
export async function unitsLeft(
  stores: Stores,
  sale: Sale,
): Promise<{ mysqlStock: number; redisStock: number | null }> {
  const [[goods]] = await stores.mysql.query<RowDataPacket[]>(
    'SELECT stock FROM seckill_goods WHERE id = ?',
    [sale.goodsId],
  );
  return {
    mysqlStock: Number(goods?.stock),
    redisStock: redisRemaining(await bucketStocks(stores.redis, sale.goodsId, sale.stockShards)),
  };
}

/** A sale's Redis stock over its buckets; null when Redis lacks any of them. */
function redisRemaining(stocks: readonly (number | null)[]): number | null {
  return stocks.some((stock) => stock === null)
    ? null
    : stocks.reduce((sum: number, stock) => sum + (stock ?? 0), 0);
}

/** Ready messages in each of the service's queues (unacked ones show in Redis's in-flight). */
export async function queueDepths(stores: Stores): Promise<Record<string, number>> {
  const connection = await amqp.connect(stores.rabbitUrl);
  try {
    const channel = await connection.createChannel();
    const depths: Record<string, number> = {};
    for (const queue of [
      'orders',
      'orders.dead',
      'orders.timeout',
      `orders.delay.${stores.paymentTimeoutMs}ms`,
    ]) {
      depths[queue] = (await channel.checkQueue(`${stores.prefix}.${queue}`)).messageCount;
    }
    return depths;
  } finally {
    await connection.close();
  }
}

/** What is still moving: queued messages, unsettled purchases in Redis, unpaid orders. */
export async function stillMoving(stores: Stores, sales: readonly Sale[]): Promise<string[]> {
  const moving: string[] = [];
  for (const [queue, depth] of Object.entries(await queueDepths(stores))) {
    if (depth > 0 && queue !== 'orders.dead') moving.push(`${depth} in ${queue}`);
  }
  for (const sale of sales) {
    const open = await unsettled(stores.redis, sale.goodsId, sale.stockShards);
    if (open > 0) moving.push(`${open} unsettled in Redis (${sale.name})`);
  }
  const [[pending]] = await stores.mysql.query<RowDataPacket[]>(
    "SELECT COUNT(*) n FROM seckill_order WHERE status = 'PENDING_PAYMENT'",
  );
  if (Number(pending?.n) > 0) moving.push(`${pending?.n} orders unpaid`);
  const [[undelivered]] = await stores.mysql.query<RowDataPacket[]>(
    'SELECT COUNT(*) n FROM seckill_merchant_event WHERE delivered_at IS NULL AND parked_at IS NULL',
  );
  if (Number(undelivered?.n) > 0) moving.push(`${undelivered?.n} order events not delivered`);
  return moving;
}

/** The admissions log keeps ten seconds: read every second, each entry is seen several times. */
const ADMITS_SAMPLE_MS = 1_000;

/**
 * Reads every queue sale's admissions log (lua/queue-tick.lua's `admits`, "head:count" -> at)
 * straight from Redis each second until stopped, as scripts/demo/queue-sale.ts does, and with it
 * the room's seed, head and journal mark; a read that fails (Redis killed or paused) is skipped.
 * Returns every entry seen, and every sampling of the room.
 */
export function sampleAdmissions(
  redis: RedisClient,
  sales: readonly Sale[],
): { stop: () => Promise<{ admissions: AdmissionRecord[]; rooms: RoomSample[] }> } {
  const seen = new Map<string, AdmissionRecord>();
  const rooms: RoomSample[] = [];
  let stopped = false;
  const read = async () => {
    for (const sale of sales) {
      const atEpochMs = Date.now();
      const state = await redis
        .hmget(queueKeys(sale.goodsId).state, 'seed', 'head', 'journal')
        .catch(() => undefined);
      if (state) {
        const [seed, head, journal] = state;
        rooms.push({
          goodsId: sale.goodsId,
          atEpochMs,
          seed: seed ?? null,
          head: head === null ? null : Number(head),
          journal: journal !== null,
        });
      }
      const flat = await redis
        .zrange(queueKeys(sale.goodsId).admits, 0, -1, 'WITHSCORES')
        .catch(() => [] as string[]);
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const member = flat[i];
        const atEpochMs = Number(flat[i + 1]);
        seen.set(`${sale.goodsId}:${member}@${atEpochMs}`, {
          goodsId: sale.goodsId,
          member,
          count: Number(member.split(':')[1]),
          atEpochMs,
        });
      }
    }
  };
  const loop = (async () => {
    while (!stopped) {
      await read();
      await sleep(ADMITS_SAMPLE_MS);
    }
    await read();
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return {
        admissions: [...seen.values()].sort((a, b) => a.atEpochMs - b.atEpochMs),
        rooms,
      };
    },
  };
}

/** A queue sale's admitted buyers (negative: used) and lapsed ones, as Redis holds them. */
export async function readQueueRoom(redis: RedisClient, sale: Sale): Promise<QueueRoomSnapshot> {
  const keys = queueKeys(sale.goodsId);
  const flat = await redis.zrange(keys.admitted, 0, -1, 'WITHSCORES');
  const admitted: Record<string, number> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) admitted[flat[i]] = Number(flat[i + 1]);
  return { goodsId: sale.goodsId, admitted, expired: await redis.smembers(keys.expired) };
}

/** A queue sale's waiting room as MySQL kept it (seckill_queue_join, seckill_queue_room). */
export async function readQueueJournal(mysql: Pool, sale: Sale): Promise<QueueJournalSnapshot> {
  const [[room]] = await mysql.query<RowDataPacket[]>(
    'SELECT seed, pre_size FROM seckill_queue_room WHERE goods_id = ?',
    [sale.goodsId],
  );
  const [joins] = await mysql.query<RowDataPacket[]>(
    'SELECT user_id, line, position FROM seckill_queue_join WHERE goods_id = ?',
    [sale.goodsId],
  );
  return {
    goodsId: sale.goodsId,
    seed: room?.seed == null ? null : String(room.seed),
    preSize: room?.pre_size == null ? null : Number(room.pre_size),
    joins: joins.map((row) => ({
      userId: Number(row.user_id),
      line: Number(row.line) === 1 ? 1 : 0,
      position: Number(row.position),
    })),
  };
}

/**
 * A queue sale's draw as anybody outside sees it (the public fairness answer) and the operator's
 * export, read over HTTP once the run was quiet; null parts when the app did not answer them.
 */
export async function readQueueDraw(
  sale: Sale,
  endpoint: Endpoint,
  adminToken: string,
): Promise<QueueDrawSnapshot> {
  const base = `${endpoint.baseUrl}/api/v1`;
  const published = await requestJson('GET', `${base}/goods/${sale.goodsId}/fairness`).catch(
    () => undefined,
  );
  const exported = await requestJson('GET', `${base}/admin/goods/${sale.goodsId}/entries`, {
    token: adminToken,
  }).catch(() => undefined);
  return {
    goodsId: sale.goodsId,
    published:
      published?.status === 200 ? (published.body as QueueDrawSnapshot['published']) : null,
    exported: exported?.status === 200 ? (exported.body as QueueDrawSnapshot['exported']) : null,
  };
}
