// How a draw sale scales: a crowd far larger than the stock enters, the draw at the close ranks
// every entry and hands out the purchase rights, and every winner is told. On a private
// redis-server, with the project's own scripts (lua/queue-join.lua for an entry, the pre-queue
// read and the digest for the draw, lua/queue-tick.lua for the rights, lua/queue-status.lua for
// what an entrant reads), driven as the app drives them; the entries written to MySQL before
// their answer are measured apart, on a sale of their own.
import { randomBytes } from 'node:crypto';

import { integerFlag, readFlags } from '../scripts/lib/args.js';
import { runScript } from '../scripts/lib/main.js';
import { ADMIT_BATCH, queueKeys, saleKeys } from '../scripts/lib/sale-scripts.js';
import { drawSeed } from '../src/modules/queue-journal/fairness.js';
import { PreQueueFollower } from '../src/modules/waiting-room/pre-queue-follower.js';
import { DRAW_ADMIT_PER_SECOND } from '../src/modules/waiting-room/room-sale.js';
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

const USAGE = `usage: npm run bench:draw -- [--entries <n>] [--stock <n>] [--winners-factor <n>]

A draw sale on a private redis-server: <entries> accounts enter, the draw at the close ranks them
and gives the first stock × winners-factor a purchase right, and every winner reads its entry.
Prints entries per second, Redis bytes per entry, the time from the close until every right is
given and until every winner has read SELECTED, and what a waitlisted entrant's read costs.

  --entries <n>          accounts that enter (default 1000000)
  --stock <n>            units for sale (default 10000)
  --winners-factor <n>   rights per unit (default 1)
  --durable-entries <n>  entries into a second sale as the app takes them: each written to MySQL
                         (database seckill_bench_draw, local MariaDB) before it is answered
                         (default 200000; 0: skip)`;

interface Options {
  entries: number;
  stock: number;
  winnersFactor: number;
  durableEntries: number;
}

function parse(argv: string[]): Options | 'help' {
  const values = readFlags(argv, {
    entries: { type: 'string', default: '1000000' },
    stock: { type: 'string', default: '10000' },
    'winners-factor': { type: 'string', default: '1' },
    'durable-entries': { type: 'string', default: '200000' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  return {
    entries: integerFlag('entries', values.entries, 1, 20_000_000),
    stock: integerFlag('stock', values.stock, 1, 10_000_000),
    winnersFactor: integerFlag('winners-factor', values['winners-factor'], 1, 100),
    durableEntries: integerFlag('durable-entries', values['durable-entries'], 0, 10_000_000),
  };
}

const GOODS_ID = 1;
const DURABLE_GOODS_ID = 2;
const BENCH_DATABASE = 'seckill_bench_draw';
const HOUR_MS = 3_600_000;
/** Waitlisted entrants whose standing is read after the draw. */
const STANDING_SAMPLE = 20_000;
/** The sale starts this long after the close: the rights run from the start. */
const START_AFTER_CLOSE_MS = 60_000;
const CLAIM_MS = 600_000;

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function run(options: Options): Promise<boolean> {
  const { url, clients } = await privateRedis();
  const [{ scripts, redis }] = clients;
  const keys = saleKeys(GOODS_ID);
  const room = queueKeys(GOODS_ID);
  const rights = options.stock * options.winnersFactor;
  console.log(
    `redis-server ${url}: ${fmt(options.entries)} entries for ${fmt(options.stock)} units, ${options.winnersFactor} right(s) per unit`,
  );

  // Entries are taken far ahead of the close; the close is called once every one is in.
  const farClose = Date.now() + HOUR_MS;
  const preheat = (closeAt: number, refresh: boolean) =>
    scripts.load.preheat(
      keys,
      {
        totalStock: options.stock,
        stock: options.stock,
        startAt: new Date(closeAt + START_AFTER_CLOSE_MS),
        endAt: new Date(closeAt + HOUR_MS),
        perUserLimit: 1,
        admission: 'draw',
      },
      undefined,
      refresh ? { refresh: true } : undefined,
    );
  await preheat(farClose, false);
  await journalRoom(redis, GOODS_ID);
  const before = await usedMemory(redis);
  await scriptMicros(redis);
  // The admission job follows the entries as they come, each tick, for the draw's digest.
  const secret = randomBytes(32);
  const pseudonymKey = randomBytes(32);
  const follower = new PreQueueFollower(pseudonymKey);
  const following = followWhileJoining(follower, preReader(scripts, GOODS_ID, farClose));
  // An entry is the draw's join, its window closing at the close (DrawEntryService).
  const { ms: enterMs, refused } = await crowdJoins(clients, GOODS_ID, options.entries, {
    startAt: farClose,
    endAt: farClose,
  });
  const followedAtClose = await following.stop();
  const enterMicros = await scriptMicros(redis);
  const perEntry = ((await usedMemory(redis)) - before) / options.entries;
  console.log(
    `entries: ${fmt((options.entries * 1000) / enterMs)}/s (${seconds(enterMs)}, ${enterMicros.toFixed(1)} µs of Redis each), ${refused} refused; Redis ${perEntry.toFixed(0)} bytes per entry (used_memory)`,
  );

  if (options.durableEntries > 0) {
    await durableJoins(clients, {
      buyers: options.durableEntries,
      goodsId: DURABLE_GOODS_ID,
      database: BENCH_DATABASE,
      drawAt: farClose,
      what: 'entries',
    });
  }

  // The close: the sale's window as a draw sale's, and the admission job's ticks from now on.
  const closeAt = Date.now();
  const startAt = closeAt + START_AFTER_CLOSE_MS;
  const endAt = closeAt + HOUR_MS;
  await preheat(closeAt, true);
  const closed = performance.now();
  const read = preReader(scripts, GOODS_ID, closeAt);
  const drawn = await follower.follow(read);
  if (drawn === 'stale' || !drawn.closed) throw new Error('the entries did not close');
  const seed = drawSeed(secret, follower.digestSoFar());
  const preSize = drawn.preSeq;
  const seedMs = performance.now() - closed;
  // As AdmissionPacerService: batches of ADMIT_BATCH for one tick period, then the next tick.
  let given = 0;
  let ticks = 0;
  while (given < Math.min(rights, options.entries)) {
    const tickEnds = performance.now() + TICK_MS;
    ticks++;
    for (;;) {
      const result = await scripts.queue.tick(GOODS_ID, {
        drawAt: closeAt,
        buyFrom: startAt,
        endAt,
        admitPerSecond: DRAW_ADMIT_PER_SECOND,
        admissionTtlMs: CLAIM_MS,
        stockFactor: options.winnersFactor,
        seed,
        preSize,
        paused: false,
        gapMs: 2_000,
      });
      given += result.admitted;
      if (result.admitted < ADMIT_BATCH || performance.now() >= tickEnds) break;
    }
    if (given < Math.min(rights, options.entries)) {
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, tickEnds - performance.now())),
      );
    }
  }
  const givenMs = performance.now() - closed;
  // Every winner reads its entry (as GET /entry does; a stream hears it from its room read).
  const winners = (await redis.zrangebyscore(room.admitted, 0, '+inf')).map(Number);
  let selected = 0;
  await spread(clients, winners.length, async (client, i) => {
    const standing = await client.scripts.queue.status(GOODS_ID, winners[i], endAt, {
      place: true,
    });
    if (standing?.state === 'ADMITTED') selected++;
  });
  const toldMs = performance.now() - closed;
  console.log(
    `the close: ${fmt(preSize)} entries ranked and ${fmt(given)} rights given in ${Math.round(givenMs)} ms (${ticks} tick(s) of batches of ${fmt(ADMIT_BATCH)}; the seed ${Math.round(seedMs)} ms, the digest had ${fmt(followedAtClose)} entries at the close, ${fmt(preSize - followedAtClose)} read then); every winner read SELECTED (${fmt(selected)} of ${fmt(winners.length)}) ${Math.round(toldMs)} ms after the close; an entry stream hears it within QUEUE_STREAM_POLL_MS (500 ms) more`,
  );

  // The waitlist: random entrants, each rank worked out from the seed as the app reads it.
  const sample = Array.from(
    { length: Math.min(STANDING_SAMPLE, options.entries) },
    () => FIRST_BUYER + Math.floor(Math.random() * options.entries),
  );
  await scriptMicros(redis);
  const readStarted = performance.now();
  let waitlisted = 0;
  await spread(clients, sample.length, async (client, i) => {
    const standing = await client.scripts.queue.status(GOODS_ID, sample[i], endAt, {
      place: true,
    });
    if (standing?.state === 'WAITING' && standing.ahead !== null) waitlisted++;
  });
  const readMs = performance.now() - readStarted;
  console.log(
    `entry reads: ${fmt((sample.length * 1000) / readMs)}/s (${fmt(sample.length)} random entrants, ${fmt(waitlisted)} waitlisted with a rank, ${(await scriptMicros(redis)).toFixed(1)} µs of Redis each)`,
  );
  console.log(
    `Redis after the draw: ${((await usedMemory(redis)) / 1024 / 1024).toFixed(0)} MiB used (${fmt(options.entries)} entries, ${fmt(given)} rights)`,
  );
  const same = await coldDraw(pseudonymKey, read, follower, 'entries');
  return same && selected === winners.length && given === Math.min(rights, options.entries);
}

await runScript(parse, USAGE, run);
