// The bench's yardstick: the purchase contract with nothing but its essentials (JWT, the project's
// own deduct script, a confirmed publish, a batched version-checked writer), so that the project's
// figures can be read as ratios measured in the same run on the same noisy machine. No rate limits,
// no purchase lock, no idempotency, no outbox sweeper, no metrics: whatever the project spends on
// those shows up as the gap.
//
// BASELINE_WORK=same (`npm run bench -- --baseline same-work`): the same Redis work as the
// project's purchase, in plain code: the per-user and per-address rate limits in one
// throttle-hits call (the project's default limits), the per-user lock (SET NX PX, as Redlock
// takes it), the deduct, the confirmed publish, and the lock released with the outbox entry in
// one purchase-unlock call, off the answer's path. The ratio then prices the code, not the design.
import { createHmac, createSecretKey, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import amqp, { type ConsumeMessage } from 'amqplib';
import Fastify, { type FastifyReply } from 'fastify';
import { Redis } from 'ioredis';
import { createPool, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';

import { withIncludes } from '../../src/infra/redis/lua-source.js';
import { saleKeys, throttleKeys } from '../../src/infra/redis/seckill-keys.js';
import { BASELINE_SCRIPTS } from './scripts.js';
import type { NewOrder } from '../../src/modules/messaging/order-message.js';

const env = process.env;
const PORT = Number(env.PORT ?? 3100);
const QUEUE = env.BASELINE_QUEUE ?? 'baseline.orders';
const PREFETCH = 500;
const BATCH_SIZE = 200;
const BATCH_WAIT_MS = 10;
const PAYMENT_TIMEOUT_MS = 900_000;
const SAME_WORK = env.BASELINE_WORK === 'same';
// The project's defaults: THROTTLE_WINDOW_MS, THROTTLE_PURCHASE_USER_LIMIT and _IP_LIMIT, a block
// as long as the window, PURCHASE_LOCK_TTL_MS.
const THROTTLE_WINDOW_MS = 1_000;
const THROTTLE_USER_LIMIT = 5;
const THROTTLE_IP_LIMIT = 100;
const LOCK_TTL_MS = 5_000;
const LUA_DIR = new URL('../../lua/', import.meta.url);
// Same order as lua/seckill-deduct.lua's return codes.
const DEDUCT_CODES = [
  'ACCEPTED',
  'NOT_PREHEATED',
  'SALE_NOT_STARTED',
  'SALE_ENDED',
  'SOLD_OUT',
  'ALREADY_PURCHASED',
  'OVER_LIMIT',
  'REPLAYED',
  'VOIDED',
];

type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;
interface Scripts {
  seckillDeduct: ScriptFn;
  seckillPreheat: ScriptFn;
  seckillComplete: ScriptFn;
  purchaseUnlock: ScriptFn;
  throttleHits2: ScriptFn;
}

const jwtKey = createSecretKey(Buffer.from(env.JWT_SECRET ?? '', 'utf8'));

interface Claims {
  userId: number;
  admin: boolean;
}

function verifyJwt(header: string | undefined): Claims | undefined {
  if (header === undefined || !header.startsWith('Bearer ')) return undefined;
  const parts = header.slice(7).split('.');
  if (parts.length !== 3) return undefined;
  const [head, payload, signature] = parts as [string, string, string];
  try {
    const alg = (JSON.parse(Buffer.from(head, 'base64url').toString()) as { alg?: unknown }).alg;
    if (alg !== 'HS256') return undefined;
    const expected = createHmac('sha256', jwtKey).update(`${head}.${payload}`).digest();
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<
      string,
      unknown
    >;
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= Date.now()) return undefined;
    const userId = Number(claims.sub);
    if (!Number.isSafeInteger(userId) || userId <= 0) return undefined;
    return { userId, admin: claims.role === 'admin' };
  } catch {
    return undefined;
  }
}

function refuse(reply: FastifyReply, statusCode: number, code: string, message = code) {
  return reply.code(statusCode).send({ statusCode, code, message });
}

function positiveInt(raw: unknown): number | undefined {
  const value = typeof raw === 'string' && /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : raw;
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

const redis = new Redis(env.REDIS_URL ?? 'redis://127.0.0.1:6379/0');
for (const { name, file, numberOfKeys } of BASELINE_SCRIPTS) {
  redis.defineCommand(name, { numberOfKeys, lua: withIncludes(fileURLToPath(LUA_DIR), file) });
}
// Two budgets, two keys each (the header names them per budget, so not in BASELINE_SCRIPTS).
redis.defineCommand('throttleHits2', {
  numberOfKeys: 4,
  lua: readFileSync(new URL('throttle-hits.lua', LUA_DIR), 'utf8'),
});
const scripts = redis as unknown as Scripts;

const db = createPool({ uri: env.DATABASE_URL, connectionLimit: 4, timezone: 'Z' });
// TCP_NODELAY as the project has it: with amqplib's default (Nagle on) each confirm waits.
const broker = await amqp.connect(env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672/', {
  noDelay: true,
});
const publisher = await broker.createConfirmChannel();
await publisher.assertQueue(QUEUE, { durable: true, arguments: { 'x-queue-type': 'quorum' } });

function publish(message: string): Promise<void> {
  return new Promise((resolve, reject) => {
    publisher.publish('', QUEUE, Buffer.from(message), { persistent: true }, (error) =>
      error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(),
    );
  });
}

// Same-work: the buyer's address from X-Forwarded-For, as the project reads it behind the bench.
const app = Fastify({ logger: false, trustProxy: SAME_WORK ? '127.0.0.1' : false });

app.get('/health/ready', async () => ({ status: 'ok' }));

app.post<{ Params: { goodsId: string }; Body: { quantity?: unknown } | undefined }>(
  '/api/v1/seckill/:goodsId',
  async (request, reply) => {
    const claims = verifyJwt(request.headers.authorization);
    if (!claims) return refuse(reply, 401, 'UNAUTHORIZED');
    const goodsId = positiveInt(request.params.goodsId);
    const quantity = request.body?.quantity === undefined ? 1 : positiveInt(request.body.quantity);
    if (goodsId === undefined || quantity === undefined) {
      return refuse(reply, 400, 'VALIDATION_FAILED');
    }
    if (SAME_WORK) {
      const user = throttleKeys('purchase-user', String(claims.userId));
      const address = throttleKeys('purchase-ip', request.ip);
      const [refused] = (await scripts.throttleHits2(
        user.hits,
        user.block,
        address.hits,
        address.block,
        THROTTLE_WINDOW_MS,
        THROTTLE_USER_LIMIT,
        THROTTLE_WINDOW_MS,
        THROTTLE_WINDOW_MS,
        THROTTLE_IP_LIMIT,
        THROTTLE_WINDOW_MS,
      )) as [number];
      if (refused !== 0) return refuse(reply, 429, 'TOO_MANY_REQUESTS');
      const lock = saleKeys(goodsId).userLock(claims.userId);
      const value = randomBytes(16).toString('hex');
      if ((await redis.set(lock, value, 'PX', LOCK_TTL_MS, 'NX')) === null) {
        return refuse(reply, 409, 'DUPLICATE_REQUEST');
      }
      let confirmed = '';
      try {
        const answer = await purchase(goodsId, claims.userId, quantity, reply);
        confirmed = answer.confirmed;
        return answer.reply;
      } finally {
        void scripts
          .purchaseUnlock(lock, saleKeys(goodsId).outbox, value, confirmed)
          .catch(() => undefined);
      }
    }
    return (await purchase(goodsId, claims.userId, quantity, reply)).reply;
  },
);

/** The deduct and the confirmed publish; `confirmed`: the requestId the broker confirmed, or ''. */
async function purchase(
  goodsId: number,
  userId: number,
  quantity: number,
  reply: FastifyReply,
): Promise<{ reply: FastifyReply; confirmed: string }> {
  const requestId = randomUUID();
  const orderNo = `SK${Date.now()}${randomBytes(8).toString('hex').toUpperCase()}`;
  const message = JSON.stringify({
    v: 1,
    requestId,
    orderNo,
    userId,
    goodsId,
    quantity,
    acceptedAt: Date.now(),
  });
  const keys = saleKeys(goodsId);
  const [code] = (await scripts.seckillDeduct(
    keys.stock,
    keys.meta,
    keys.buyers,
    keys.inflight,
    keys.outbox,
    keys.results,
    keys.voided,
    keys.borrowed,
    keys.admitted,
    keys.queueClock,
    userId,
    quantity,
    requestId,
    message,
  )) as [number, number];
  if (code === 6) {
    return {
      reply: refuse(reply, 400, 'VALIDATION_FAILED', 'quantity above the limit'),
      confirmed: '',
    };
  }
  if (code !== 0) {
    return { reply: refuse(reply, 409, DEDUCT_CODES[code] ?? 'CONFLICT'), confirmed: '' };
  }
  try {
    await publish(message);
  } catch {
    // The outbox entry stays; the baseline has no sweeper, so this purchase is simply lost.
    return { reply: refuse(reply, 503, 'UNAVAILABLE'), confirmed: '' };
  }
  return { reply: reply.code(202).send({ status: 'QUEUED', requestId }), confirmed: requestId };
}

// The bench's setup hook: a goods row plus the same preheat script the project runs.
app.post<{ Body: { stock: number; name?: string } }>('/admin/goods', async (request, reply) => {
  if (!verifyJwt(request.headers.authorization)?.admin) return refuse(reply, 403, 'FORBIDDEN');
  const stock = positiveInt(request.body.stock);
  if (stock === undefined) return refuse(reply, 400, 'VALIDATION_FAILED');
  const startAt = new Date(Date.now() - 1_000);
  const endAt = new Date(Date.now() + 3_600_000);
  const [insert] = await db.query<ResultSetHeader>(
    'INSERT INTO seckill_goods (name, price, total_stock, stock, start_at, end_at, per_user_limit) VALUES (?, ?, ?, ?, ?, ?, 1)',
    [request.body.name ?? 'bench', 1, stock, stock, startAt, endAt],
  );
  const keys = saleKeys(insert.insertId);
  await scripts.seckillPreheat(keys.stock, keys.meta, stock, stock, +startAt, +endAt, 1, 0, 'open');
  return reply.code(201).send({ id: insert.insertId, stock });
});

async function writeGroup(goodsId: number, orders: NewOrder[]): Promise<void> {
  const total = orders.reduce((sum, order) => sum + order.quantity, 0);
  const conn = await db.getConnection();
  try {
    for (;;) {
      await conn.beginTransaction();
      const [[goods]] = await conn.query<RowDataPacket[]>(
        'SELECT version FROM seckill_goods WHERE id = ?',
        [goodsId],
      );
      const [update] = await conn.query<ResultSetHeader>(
        'UPDATE seckill_goods SET stock = stock - ?, version = version + 1 WHERE id = ? AND version = ? AND stock >= ?',
        [total, goodsId, goods?.version, total],
      );
      if (update.affectedRows !== 1) {
        await conn.rollback();
        continue;
      }
      await conn.query(
        'INSERT INTO seckill_order (order_no, request_id, user_id, goods_id, quantity, status, expire_at) VALUES ?',
        [
          orders.map((o) => [
            o.orderNo,
            o.requestId,
            o.userId,
            goodsId,
            o.quantity,
            'PENDING_PAYMENT',
            new Date(o.acceptedAt + PAYMENT_TIMEOUT_MS),
          ]),
        ],
      );
      await conn.commit();
      break;
    }
  } finally {
    conn.release();
  }
  const keys = saleKeys(goodsId);
  await scripts.seckillComplete(
    keys.inflight,
    keys.outbox,
    keys.claims,
    keys.results,
    keys.completed,
    keys.voided,
    keys.stock,
    keys.buyers,
    keys.admitted,
    ...orders.flatMap((o) => [o.requestId, o.userId, o.orderNo, o.quantity]),
  );
}

const consumer = await broker.createChannel();
await consumer.prefetch(PREFETCH);
let batch: ConsumeMessage[] = [];
let timer: NodeJS.Timeout | undefined;
let writing = Promise.resolve();

function flush(): void {
  clearTimeout(timer);
  timer = undefined;
  const messages = batch;
  batch = [];
  if (messages.length === 0) return;
  writing = writing.then(async () => {
    const groups = new Map<number, NewOrder[]>();
    for (const message of messages) {
      const order = JSON.parse(message.content.toString()) as NewOrder;
      groups.set(order.goodsId, [...(groups.get(order.goodsId) ?? []), order]);
    }
    for (;;) {
      try {
        for (const [goodsId, orders] of groups) {
          await writeGroup(goodsId, orders);
          groups.delete(goodsId);
        }
        break;
      } catch (error) {
        console.error('batch failed, retrying:', error);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    // Batches are written one after another in delivery order, so one cumulative ack covers them.
    consumer.ack(messages[messages.length - 1], true);
  });
}

await consumer.consume(QUEUE, (message) => {
  if (message === null) return;
  batch.push(message);
  if (batch.length >= BATCH_SIZE) flush();
  else timer ??= setTimeout(flush, BATCH_WAIT_MS);
});

const shutdown = async () => {
  await app.close();
  flush();
  await writing;
  await broker.close();
  redis.disconnect();
  await db.end();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());

await app.listen({ port: PORT, host: '127.0.0.1' });
console.log(`baseline listening on ${PORT}`);
