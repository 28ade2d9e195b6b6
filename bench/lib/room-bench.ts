// What the waiting-room benches share (bench/queue.ts, bench/draw.ts): a private redis-server's
// clients, Redis's own figures, a crowd driven through the project's scripts as the app drives
// them, and joins written to MySQL as the app writes them before answering.
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';

import { onCleanup } from '../../scripts/lib/cleanup.js';
import { freePortBelowEphemeral } from '../../scripts/lib/ports.js';
import {
  JoinCode,
  queueKeys,
  saleScriptsOn,
  type SaleScripts,
} from '../../scripts/lib/sale-scripts.js';
import type { PreQueuePage } from '../../src/modules/waiting-room/queue.scripts.js';
import { JoinJournalService } from '../../src/modules/queue-journal/join-journal.service.js';
import { QueueJournalRepository } from '../../src/modules/queue-journal/queue-journal.repository.js';
import { PreQueueFollower } from '../../src/modules/waiting-room/pre-queue-follower.js';
import { databaseUrl, dropDatabase, freshDatabase, startRedis } from './stores.js';

// The project's migrations as built (the benches build first).
const MIGRATIONS_GLOB = new URL('../../dist/migrations/*.js', import.meta.url).pathname;
const IN_FLIGHT_PER_CLIENT = 200;
const HOUR_MS = 3_600_000;
/** As the app's default QUEUE_TICK_MS. */
export const TICK_MS = 100;
/** As RoomDrawService: the most joins followed per tick before the draw. */
const FOLLOW_BUDGET = 20_000;
/** The first buyer's user id; the crowd's are consecutive from it. */
export const FIRST_BUYER = 1_000_000;

export interface Client {
  redis: Redis;
  scripts: SaleScripts;
}

/** A private redis-server and two pipelined clients on it, all stopped at the end. */
export async function privateRedis(): Promise<{ url: string; clients: Client[] }> {
  const server = await startRedis(await freePortBelowEphemeral());
  onCleanup(() => server.stop());
  const clients: Client[] = [0, 1].map(() => {
    const redis = new Redis(server.url, { enableAutoPipelining: true });
    return { redis, scripts: saleScriptsOn(redis) };
  });
  onCleanup(async () => {
    for (const { redis } of clients) redis.disconnect();
  });
  return { url: server.url, clients };
}

/** A read of a room's pre-queue (its entries) as RoomDrawService makes it, for a draw at `drawAt`. */
export const preReader =
  (scripts: SaleScripts, goodsId: number, drawAt: number) =>
  (from: number, limit: number): Promise<PreQueuePage> =>
    scripts.queue.preRead(goodsId, from, limit, drawAt);

/**
 * The admission job's follow of the pre-queue as it grows (each tick, FOLLOW_BUDGET joins at
 * most) into the draw's digest, until `stop()`, which returns how many were followed by then.
 */
export function followWhileJoining(
  follower: PreQueueFollower,
  read: ReturnType<typeof preReader>,
): { stop: () => Promise<number> } {
  let joining = true;
  const following = (async () => {
    while (joining) {
      await follower.follow(read, FOLLOW_BUDGET);
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    }
  })();
  return {
    stop: async () => {
      joining = false;
      await following;
      return follower.size();
    },
  };
}

/** `count` joins (a draw's entries) of goods `goodsId` from FIRST_BUYER on; refused ones counted. */
export async function crowdJoins(
  clients: Client[],
  goodsId: number,
  count: number,
  window: { startAt: number; endAt: number },
): Promise<{ ms: number; refused: number }> {
  const started = performance.now();
  let refused = 0;
  await spread(clients, count, async (client, i) => {
    const { code } = await client.scripts.queue.join(goodsId, FIRST_BUYER + i, {
      opensAt: 0,
      ...window,
    });
    if (code !== JoinCode.Joined) refused++;
  });
  return { ms: performance.now() - started, refused };
}

/**
 * An instance that takes the admission job over at the draw follows nothing yet: it reads the
 * whole pre-queue then (the app also looks each join up in MySQL, which these Redis-only sales
 * have not). Prints the time; true when it comes to the digest `followed` has.
 */
export async function coldDraw(
  pseudonymKey: Buffer,
  read: ReturnType<typeof preReader>,
  followed: PreQueueFollower,
  what: string,
): Promise<boolean> {
  const started = performance.now();
  const cold = new PreQueueFollower(pseudonymKey);
  await cold.follow(read);
  const ms = performance.now() - started;
  const same = cold.digestSoFar() === followed.digestSoFar();
  console.log(
    `a draw by an instance that followed nothing: the ${cold.size().toLocaleString('en-US')} ${what} read and digested in ${seconds(ms)} (${((ms * 1000) / cold.size()).toFixed(1)} µs each); ${same ? 'the same digest' : 'ANOTHER DIGEST'} as the one followed`,
  );
  return same;
}

export async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
}

/** Redis's own µs per script call since the last call of this (INFO commandstats), and a reset. */
export async function scriptMicros(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  await redis.config('RESETSTAT');
  return Number(/cmdstat_evalsha:.*usec_per_call=([\d.]+)/.exec(info)?.[1] ?? NaN);
}

/** Runs `unit(i)` for i in [0, count) with IN_FLIGHT_PER_CLIENT in flight on each client. */
export async function spread(
  clients: Client[],
  count: number,
  unit: (client: Client, i: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    clients.flatMap((client) =>
      Array.from({ length: IN_FLIGHT_PER_CLIENT }, async () => {
        while (next < count) await unit(client, next++);
      }),
    ),
  );
}

export const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** The room as a restore of an empty journal leaves it (the app's first join does that). */
export async function journalRoom(redis: Redis, goodsId: number): Promise<void> {
  const runId = /run_id:(\w+)/.exec(await redis.info('server'))![1];
  await redis.hset(queueKeys(goodsId).state, 'journal', runId);
}

/**
 * Joins (a draw's entries) as the app makes them: the script places the buyer, then
 * JoinJournalService writes the join to MySQL (shared INSERTs, one read of what was kept) before
 * it would be answered. On `database` (made afresh, dropped after), for goods `goodsId`, whose
 * room is emptied after. Prints the rate under `what`.
 */
export async function durableJoins(
  clients: Client[],
  options: { buyers: number; goodsId: number; database: string; drawAt: number; what: string },
): Promise<void> {
  const { buyers, goodsId, database, drawAt } = options;
  await freshDatabase(database, MIGRATIONS_GLOB);
  const source = new DataSource({
    type: 'mysql',
    url: databaseUrl(database),
    extra: { connectionLimit: 20 },
  });
  await source.initialize();
  onCleanup(async () => {
    await source.destroy();
    await dropDatabase(database);
  });
  const journal = new JoinJournalService(new QueueJournalRepository(source));
  await journalRoom(clients[0].redis, goodsId);
  const started = performance.now();
  let refused = 0;
  await spread(clients, buyers, async (client, i) => {
    const userId = FIRST_BUYER + i;
    const { code, line, position } = await client.scripts.queue.join(goodsId, userId, {
      opensAt: 0,
      startAt: drawAt,
      endAt: drawAt + HOUR_MS,
    });
    if (code !== JoinCode.Joined) refused++;
    else await journal.record({ goodsId, userId, line, position, address: null });
  });
  const ms = performance.now() - started;
  const [{ n }] = await source.query<{ n: number }[]>(
    'SELECT COUNT(*) AS n FROM seckill_queue_join WHERE goods_id = ?',
    [goodsId],
  );
  console.log(
    `${options.what} written to MySQL before their answer: ${Math.round((buyers * 1000) / ms).toLocaleString('en-US')}/s (${buyers.toLocaleString('en-US')} in ${seconds(ms)}; ${Number(n).toLocaleString('en-US')} rows), ${refused} refused`,
  );
  await clients[0].redis.del(...Object.values(queueKeys(goodsId)));
}
