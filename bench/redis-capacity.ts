// How much purchase work one Redis core does: the figure the capacity model in docs/scaling.md
// ("Running at scale") builds on. A private redis-server, the project's own scripts and lock,
// driven by pipelined clients on the other core; the rate is divided by the share of a core the
// server used, so that a client that cannot keep up does not lower the figure.
import { randomUUID } from 'node:crypto';

import { Redis } from 'ioredis';

import {
  encodeOrderMessage,
  saleKeys,
  saleScriptsOn,
  throttleKeys,
  type SaleScripts,
} from '../scripts/lib/sale-scripts.js';
import { onCleanup } from '../scripts/lib/cleanup.js';
import { integerFlag, readFlags } from '../scripts/lib/args.js';
import { runScript } from '../scripts/lib/main.js';
import { sampleProcess } from './lib/probes.js';
import { freePortBelowEphemeral } from '../scripts/lib/ports.js';
import { startRedis } from './lib/stores.js';

const USAGE = `usage: npm run bench:redis -- [--seconds <s>] [--clients <n>]

Measures, on a private redis-server, how many of each unit of work one Redis core executes per
second: a purchase's whole Redis work (rate-limit budgets, Redlock acquire, deduct, unlock with
the outbox entry), the deduct script alone, and a sold-out refusal by the script.

  --seconds <s>   seconds per measurement (default 5)
  --clients <n>   client connections, each keeping 200 units in flight (default 2)`;

interface Options {
  seconds: number;
  clients: number;
}

function parse(argv: string[]): Options | 'help' {
  const values = readFlags(argv, {
    seconds: { type: 'string', default: '5' },
    clients: { type: 'string', default: '2' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  return {
    seconds: integerFlag('seconds', values.seconds, 1, 600),
    clients: integerFlag('clients', values.clients, 1, 16),
  };
}

const IN_FLIGHT_PER_CLIENT = 200;
const HOUR_MS = 3_600_000;

interface Client {
  redis: Redis;
  scripts: SaleScripts;
}

async function measure(
  name: string,
  clients: Client[],
  redisPid: number,
  seconds: number,
  unit: (client: Client, n: number) => Promise<unknown>,
): Promise<void> {
  let done = 0;
  const deadline = performance.now() + seconds * 1000;
  const server = sampleProcess(redisPid, 500);
  const startedAt = performance.now();
  await Promise.all(
    clients.flatMap((client) =>
      Array.from({ length: IN_FLIGHT_PER_CLIENT }, async () => {
        while (performance.now() < deadline) await unit(client, done++);
      }),
    ),
  );
  const elapsed = (performance.now() - startedAt) / 1000;
  const { cpuPercent } = server.stop();
  const rate = done / elapsed;
  const perCore = cpuPercent > 0 ? rate / (cpuPercent / 100) : NaN;
  console.log(
    `${name.padEnd(44)} ${Math.round(rate).toLocaleString('en-US').padStart(9)}/s at ${cpuPercent.toFixed(0).padStart(3)} % of a core: ${Math.round(perCore).toLocaleString('en-US').padStart(9)}/s per Redis core`,
  );
}

async function run(options: Options): Promise<boolean> {
  const server = await startRedis(await freePortBelowEphemeral());
  onCleanup(() => server.stop());
  const clients: Client[] = Array.from({ length: options.clients }, () => {
    const redis = new Redis(server.url, { enableAutoPipelining: true });
    return { redis, scripts: saleScriptsOn(redis) };
  });
  onCleanup(async () => {
    for (const { redis } of clients) redis.disconnect();
  });

  const preheat = async (goodsId: number, stock: number) => {
    await clients[0].scripts.load.preheat(saleKeys(goodsId), {
      totalStock: stock,
      stock,
      startAt: new Date(Date.now() - HOUR_MS),
      endAt: new Date(Date.now() + HOUR_MS),
      perUserLimit: 1,
    });
  };
  const deduct = async (client: Client, goodsId: number, userId: number) => {
    const requestId = randomUUID();
    const message = encodeOrderMessage({
      requestId,
      orderNo: `SK${Date.now()}0123456789ABCDEF`,
      userId,
      goodsId,
      quantity: 1,
      acceptedAt: Date.now(),
    });
    const { code } = await client.scripts.ledger.deduct(
      saleKeys(goodsId),
      userId,
      1,
      requestId,
      message,
    );
    return { code, requestId };
  };
  console.log(
    `redis-server ${server.url}, ${options.clients} clients × ${IN_FLIGHT_PER_CLIENT} in flight`,
  );

  // The route's default budgets: per user and per client address.
  await preheat(1, 1_000_000_000);
  await measure(
    'purchase (budgets, lock, deduct, unlock)',
    clients,
    server.pid,
    options.seconds,
    async (client, n) => {
      const userId = 1_000_000 + n;
      const budget = (name: string, tracker: string) => ({
        keys: throttleKeys(name, tracker),
        windowMs: 1_000,
        limit: 5,
        blockMs: 10_000,
      });
      await client.scripts.throttle.throttleHits([
        budget('purchase-user', `u:${userId}`),
        budget('purchase-ip', `ip:10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`),
      ]);
      const lock = await client.scripts.locks.tryLockPurchase(saleKeys(1), userId, 5_000);
      const { requestId } = await deduct(client, 1, userId);
      // As after a confirmed publish: the outbox entry leaves with the lock.
      await lock?.release(requestId);
    },
  );

  await preheat(2, 1_000_000_000);
  await measure(
    'deduct script alone (accepted)',
    clients,
    server.pid,
    options.seconds,
    (client, n) => deduct(client, 2, 1_000_000 + n),
  );

  await preheat(3, 0);
  await measure(
    'deduct script alone (SOLD_OUT)',
    clients,
    server.pid,
    options.seconds,
    (client, n) => deduct(client, 3, 1_000_000 + n),
  );
  return true;
}

await runScript(parse, USAGE, run);
