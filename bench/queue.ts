// How a queue sale's waiting room scales: a crowd far larger than the stock joins, is shuffled at
// the start, admitted at its pace and buys. On a private redis-server, with the project's own
// scripts (lua/queue-*.lua, the deduct and the completion), driven as the app drives them: joins
// pipelined from two clients, the admission job's ticks, each admitted buyer buying at once and
// its order completed as the consumer would once written. What it measures is Redis's side (the
// HTTP layer's cost per join is the join route's, measured by the fairness test and `npm run
// bench`).
import { randomBytes, randomUUID } from 'node:crypto';

import { integerFlag, readFlags } from '../scripts/lib/args.js';
import { runScript } from '../scripts/lib/main.js';
import {
  ADMIT_BATCH,
  DeductCode,
  encodeOrderMessage,
  queueKeys,
  saleKeys,
} from '../scripts/lib/sale-scripts.js';
import { drawSeed } from '../src/modules/queue-journal/fairness.js';
import { PreQueueFollower } from '../src/modules/waiting-room/pre-queue-follower.js';
import {
  coldDraw,
  crowdJoins,
  durableJoins,
  FIRST_BUYER,
  followWhileJoining,
  journalRoom,
  preReader,
  privateRedis,
  scriptMicros,
  seconds,
  spread,
  TICK_MS,
  usedMemory,
} from './lib/room-bench.js';

const USAGE = `usage: npm run bench:queue -- [--buyers <n>] [--stock <n>] [--admit-per-second <n>]

A queue sale on a private redis-server: <buyers> join before the start, the pre-queue is
shuffled at the start, buyers are admitted at <admit-per-second> within the stock (factor 1) and
each admitted one buys at once. Prints joins per second, Redis bytes per waiting buyer, the
first tick's time (the shuffle's seed and the first admissions), standings read per second, and
how long from the start until the last unit was sold and until the waiting buyers' standings say
SOLD_OUT.

  --buyers <n>            buyers in the queue (default 1000000)
  --stock <n>             units for sale (default 10000)
  --admit-per-second <n>  the queue's pace (default 5000)
  --durable-buyers <n>    buyers who join a second sale as the app has them join: each join
                          written to MySQL (database seckill_bench_queue, local MariaDB) before it
                          is answered, in the journal's shared statements (default 200000; 0:
                          skip). The joins per second with and without MySQL are both printed`;

interface Options {
  buyers: number;
  stock: number;
  admitPerSecond: number;
  durableBuyers: number;
}

function parse(argv: string[]): Options | 'help' {
  const values = readFlags(argv, {
    buyers: { type: 'string', default: '1000000' },
    stock: { type: 'string', default: '10000' },
    'admit-per-second': { type: 'string', default: '5000' },
    'durable-buyers': { type: 'string', default: '200000' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  return {
    buyers: integerFlag('buyers', values.buyers, 1, 20_000_000),
    stock: integerFlag('stock', values.stock, 1, 10_000_000),
    admitPerSecond: integerFlag('admit-per-second', values['admit-per-second'], 1, 100_000),
    durableBuyers: integerFlag('durable-buyers', values['durable-buyers'], 0, 10_000_000),
  };
}

const BENCH_DATABASE = 'seckill_bench_queue';
const GOODS_ID = 1;
/** The sale whose joins are written to MySQL too (the app's way): apart from GOODS_ID's figures. */
const DURABLE_GOODS_ID = 2;
const HOUR_MS = 3_600_000;
/** Buyers whose standing is read after the start, and again once the stock is gone. */
const STANDING_SAMPLE = 20_000;

async function run(options: Options): Promise<boolean> {
  const { url, clients } = await privateRedis();
  const [{ scripts, redis }] = clients;
  const keys = saleKeys(GOODS_ID);
  const room = queueKeys(GOODS_ID);
  console.log(
    `redis-server ${url}: ${options.buyers.toLocaleString('en-US')} buyers for ${options.stock.toLocaleString('en-US')} units, admitted at ${options.admitPerSecond.toLocaleString('en-US')}/s`,
  );

  // The sale opens far ahead while the crowd joins; the start is called once every one has.
  const farStart = Date.now() + HOUR_MS;
  const window = (startAt: number) => ({ startAt, endAt: startAt + HOUR_MS });
  await scripts.load.preheat(keys, {
    totalStock: options.stock,
    stock: options.stock,
    startAt: new Date(farStart),
    endAt: new Date(farStart + HOUR_MS),
    perUserLimit: 1,
    admission: 'queue',
  });
  await journalRoom(redis, GOODS_ID);
  const before = await usedMemory(redis);
  await scriptMicros(redis);
  // The admission job follows the pre-queue as it grows, each tick, for the draw's digest
  // (RoomDrawService; its check of each join in MySQL is not part of this Redis-only sale).
  const secret = randomBytes(32);
  const pseudonymKey = randomBytes(32);
  const follower = new PreQueueFollower(pseudonymKey);
  const following = followWhileJoining(follower, preReader(scripts, GOODS_ID, farStart));
  const { ms: joinMs, refused } = await crowdJoins(
    clients,
    GOODS_ID,
    options.buyers,
    window(farStart),
  );
  const followedAtEnd = await following.stop();
  const joinMicros = await scriptMicros(redis);
  const perBuyer = ((await usedMemory(redis)) - before) / options.buyers;
  console.log(
    `joins: ${Math.round((options.buyers * 1000) / joinMs).toLocaleString('en-US')}/s (${seconds(joinMs)}, ${joinMicros.toFixed(1)} µs of Redis each), ${refused} refused; Redis ${perBuyer.toFixed(0)} bytes per waiting buyer (used_memory)`,
  );

  if (options.durableBuyers > 0) {
    await durableJoins(clients, {
      buyers: options.durableBuyers,
      goodsId: DURABLE_GOODS_ID,
      database: BENCH_DATABASE,
      drawAt: farStart,
      what: 'joins',
    });
  }

  // The start: the sale's window and the ticks from now on.
  const startAt = Date.now();
  const { endAt } = window(startAt);
  await scripts.load.preheat(
    keys,
    {
      totalStock: options.stock,
      stock: options.stock,
      startAt: new Date(startAt),
      endAt: new Date(startAt + HOUR_MS),
      perUserLimit: 1,
      admission: 'queue',
    },
    undefined,
    { refresh: true },
  );
  const started = performance.now();
  // The draw, as RoomDrawService makes it: the rest of the pre-queue read, the seed drawn from
  // the secret and the digest (MySQL keeps it first in the app: one UPDATE and one read more).
  const read = preReader(scripts, GOODS_ID, startAt);
  const closed = await follower.follow(read);
  if (closed === 'stale' || !closed.closed) throw new Error('the pre-queue did not close');
  const seed = drawSeed(secret, follower.digestSoFar());
  const preSize = closed.preSeq;
  const seedMs = performance.now() - started;
  // As AdmissionPacerService's tick: batches of ADMIT_BATCH until one comes back short.
  const tick = async () => {
    let admitted = 0;
    for (;;) {
      const result = await scripts.queue.tick(GOODS_ID, {
        drawAt: startAt,
        buyFrom: startAt,
        endAt: startAt + HOUR_MS,
        admitPerSecond: options.admitPerSecond,
        admissionTtlMs: 60_000,
        stockFactor: 1,
        seed,
        preSize,
        paused: false,
        gapMs: 2_000,
      });
      admitted += result.admitted;
      if (result.admitted < ADMIT_BATCH) return admitted;
    }
  };
  const first = await tick();
  const drawnMs = performance.now() - started;
  console.log(
    `the start: the order of ${options.buyers.toLocaleString('en-US')} drawn and ${first.toLocaleString('en-US')} admitted by the first tick (batches of ${ADMIT_BATCH.toLocaleString('en-US')}), in ${Math.round(drawnMs)} ms; of which the seed ${Math.round(seedMs)} ms (the digest had ${followedAtEnd.toLocaleString('en-US')} joins when the joining ended, ${(preSize - followedAtEnd).toLocaleString('en-US')} read at the start)`,
  );

  // Standings of buyers still waiting, each place worked out from the seed as the app reads it.
  const sample = Array.from(
    { length: Math.min(STANDING_SAMPLE, options.buyers) },
    () => FIRST_BUYER + Math.floor(Math.random() * options.buyers),
  );
  await scriptMicros(redis);
  const readStarted = performance.now();
  await spread(clients, sample.length, (client, i) =>
    client.scripts.queue.status(GOODS_ID, sample[i], endAt),
  );
  const readMs = performance.now() - readStarted;
  console.log(
    `standings: ${Math.round((sample.length * 1000) / readMs).toLocaleString('en-US')}/s (${sample.length.toLocaleString('en-US')} random buyers, ${(await scriptMicros(redis)).toFixed(1)} µs of Redis each)`,
  );

  // The admitted buyers who have not bought (positive scores) buy at once; their orders are
  // completed as the consumer does once it wrote them.
  let soldMs = NaN;
  let ticks = 1;
  while (Number.isNaN(soldMs)) {
    const admitted = (await redis.zrangebyscore(room.admitted, 0, '+inf')).map(Number);
    await spread(clients, admitted.length, async (client, i) => {
      const userId = admitted[i];
      const requestId = randomUUID();
      const orderNo = `SK${Date.now()}${requestId.replace(/-/g, '').slice(0, 16).toUpperCase()}`;
      const message = encodeOrderMessage({
        requestId,
        orderNo,
        userId,
        goodsId: GOODS_ID,
        quantity: 1,
        acceptedAt: Date.now(),
      });
      const { code } = await client.scripts.ledger.deduct(keys, userId, 1, requestId, message);
      if (code !== DeductCode.Accepted) return;
      await client.scripts.ledger.complete(keys, [{ requestId, userId, orderNo, quantity: 1 }]);
    });
    const state = await scripts.queue.room(GOODS_ID, endAt);
    if (state.stock === 0 && state.inflight === 0) {
      soldMs = performance.now() - started;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    await tick();
    ticks++;
  }
  // Every buyer not admitted reads SOLD_OUT from the same room state: a sample of them, read now.
  const { head } = await scripts.queue.room(GOODS_ID, endAt);
  const states = new Map<string, number>();
  await spread(clients, sample.length, async (client, i) => {
    const state = (await client.scripts.queue.status(GOODS_ID, sample[i], endAt))?.state;
    states.set(state ?? 'RESTORING', (states.get(state ?? 'RESTORING') ?? 0) + 1);
  });
  const toldMs = performance.now() - started;
  const told = [...states].map(([state, n]) => `${state} ${n}`).join(', ');
  console.log(
    `from the start: last unit sold after ${seconds(soldMs)} (${ticks} ticks, ${head.toLocaleString('en-US')} admitted); the sampled buyers read ${told} after ${seconds(toldMs)}; a queue stream hears it within QUEUE_STREAM_POLL_MS (500 ms) more`,
  );
  console.log(
    `Redis after the sale: ${((await usedMemory(redis)) / 1024 / 1024).toFixed(0)} MiB used (${options.buyers.toLocaleString('en-US')} buyers in line)`,
  );
  const same = await coldDraw(pseudonymKey, read, follower, 'joins');
  return same && [...states.keys()].every((state) => state === 'SOLD_OUT' || state === 'PURCHASED');
}

await runScript(parse, USAGE, run);
