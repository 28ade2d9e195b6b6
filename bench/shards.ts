// One hot item on a Redis Cluster of three masters: its stock in 1 bucket (every purchase on one
// master) against 8 buckets (spread over the three). A private cluster, the project's own scripts
// and lock, driven by pipelined cluster clients; the purchase's Redis work is what PurchaseLedgerStore
// and PurchaseService do on the way to an accepted purchase (lock, deduct at the buyer's home
// bucket, unlock with the outbox entry). No HTTP: on this box the app, not Redis, is the limit
// there (see docs/scaling.md).
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Cluster } from 'ioredis';

import { onCleanup } from '../scripts/lib/cleanup.js';
import { integerFlag, readFlags } from '../scripts/lib/args.js';
import { ScriptError } from '../scripts/lib/errors.js';
import {
  clusterIsOk,
  clusterNodeArgs,
  createCluster,
  freeClusterPorts,
} from '../scripts/lib/redis-cluster.js';
import { runScript } from '../scripts/lib/main.js';
import {
  allBucketKeys,
  bucketKeys,
  DeductCode,
  encodeOrderMessage,
  homeBucket,
  keySlot,
  saleScriptsOn,
  splitEvenly,
  type SaleScripts,
} from '../scripts/lib/sale-scripts.js';
import { sampleProcess } from './lib/probes.js';
import { startRedis, type RedisServer } from './lib/stores.js';

const USAGE = `usage: npm run bench:shards -- [--seconds <s>] [--clients <n>] [--rounds <n>]

Starts a private Redis Cluster of three masters and measures purchases per second of one hot
item whose stock is in 1 bucket, then in 8 buckets (each its own hash tag, spread over the
masters): a purchase's Redis work (the buyer's lock, the deduct at the buyer's home bucket, the
unlock with the outbox entry), each by a new buyer, with stock that never runs out.

  --seconds <s>   seconds per measurement (default 5)
  --clients <n>   cluster clients, each keeping 200 purchases in flight (default 2)
  --rounds <n>    alternating 1-bucket / 8-bucket measurements of each (default 3)`;

interface Options {
  seconds: number;
  clients: number;
  rounds: number;
}

function parse(argv: string[]): Options | 'help' {
  const values = readFlags(argv, {
    seconds: { type: 'string', default: '5' },
    clients: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  return {
    seconds: integerFlag('seconds', values.seconds, 1, 600),
    clients: integerFlag('clients', values.clients, 1, 16),
    rounds: integerFlag('rounds', values.rounds, 1, 20),
  };
}

const IN_FLIGHT_PER_CLIENT = 200;
const HOUR_MS = 3_600_000;
const STOCK = 1_000_000_000;

async function startCluster(): Promise<RedisServer[]> {
  const dir = mkdtempSync(join(tmpdir(), 'seckill-bench-cluster-'));
  const ports = await freeClusterPorts();
  const servers: RedisServer[] = [];
  for (const port of ports) {
    const server = await startRedis(port, clusterNodeArgs(port, dir));
    servers.push(server);
    onCleanup(() => server.stop());
  }
  await createCluster(ports);
  for (let attempt = 0; !(await clusterIsOk(ports)); attempt++) {
    if (attempt === 150) throw new ScriptError('the cluster did not reach cluster_state:ok');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return servers;
}

interface Client {
  redis: Cluster;
  scripts: SaleScripts;
}

interface Figures {
  rate: number;
  masters: number[];
  client: number;
}

async function measure(
  clients: Client[],
  servers: RedisServer[],
  seconds: number,
  unit: (client: Client, n: number) => Promise<void>,
): Promise<Figures> {
  let done = 0;
  let n = 0;
  const deadline = performance.now() + seconds * 1000;
  const masters = servers.map((server) => sampleProcess(server.pid, 500));
  const self = sampleProcess(process.pid, 500);
  const startedAt = performance.now();
  await Promise.all(
    clients.flatMap((client) =>
      Array.from({ length: IN_FLIGHT_PER_CLIENT }, async () => {
        while (performance.now() < deadline) {
          await unit(client, n++);
          done++;
        }
      }),
    ),
  );
  const elapsed = (performance.now() - startedAt) / 1000;
  return {
    rate: done / elapsed,
    masters: masters.map((sample) => sample.stop().cpuPercent),
    client: self.stop().cpuPercent,
  };
}

/**
 * Where the hottest master would saturate at this mix: the rate divided by its share of a core.
 * On a box where the client cannot load the masters fully, the figure that compares layouts.
 */
const ceiling = (figures: Figures) => figures.rate / (Math.max(...figures.masters) / 100);

const count = (value: number) => Math.round(value).toLocaleString('en-US');

function line(name: string, figures: Figures): string {
  const cpu = figures.masters.map((percent) => `${percent.toFixed(0).padStart(3)} %`).join(' ');
  return `${name.padEnd(10)} ${count(figures.rate).padStart(8)} purchases/s   masters' CPU ${cpu}   this process ${figures.client.toFixed(0)} %   hottest master saturates at ${count(ceiling(figures)).padStart(8)}/s`;
}

async function run(options: Options): Promise<boolean> {
  const servers = await startCluster();
  const nodes = servers.map((server) => ({
    host: '127.0.0.1',
    port: Number(new URL(server.url).port),
  }));
  const clients: Client[] = Array.from({ length: options.clients }, () => {
    const redis = new Cluster(nodes, { enableAutoPipelining: true });
    return { redis, scripts: saleScriptsOn(redis) };
  });
  onCleanup(async () => {
    for (const { redis } of clients) redis.disconnect();
  });

  let nextGoodsId = 1;
  let nextUserId = 1_000_000;
  const preheat = async (goodsId: number, shards: number) => {
    const shares = splitEvenly(STOCK, shards);
    for (const [bucket, keys] of allBucketKeys(goodsId, shards).entries()) {
      await clients[0].scripts.load.preheat(keys, {
        totalStock: STOCK,
        stock: shares[bucket],
        startAt: new Date(Date.now() - HOUR_MS),
        endAt: new Date(Date.now() + HOUR_MS),
        perUserLimit: 1,
      });
    }
  };
  const purchase = (goodsId: number, shards: number) => async (client: Client) => {
    const userId = nextUserId++;
    const home = bucketKeys(goodsId, shards, homeBucket(userId, shards));
    const requestId = randomUUID();
    const message = encodeOrderMessage({
      requestId,
      orderNo: `SK${Date.now()}0123456789ABCDEF`,
      userId,
      goodsId,
      quantity: 1,
      acceptedAt: Date.now(),
    });
    const lock = await client.scripts.locks.tryLockPurchase(home, userId, 5_000);
    const { code } = await client.scripts.ledger.deduct(home, userId, 1, requestId, message);
    if (code !== DeductCode.Accepted) throw new ScriptError(`deduct refused: code ${code}`);
    await lock?.release(requestId);
  };

  console.log(
    `Redis Cluster of 3 masters (ports ${nodes.map((node) => node.port).join(', ')}), ${options.clients} clients × ${IN_FLIGHT_PER_CLIENT} purchases in flight, ${options.seconds} s each`,
  );
  const rates: Record<1 | 8, number[]> = { 1: [], 8: [] };
  const ceilings: Record<1 | 8, number[]> = { 1: [], 8: [] };
  for (let round = 1; round <= options.rounds; round++) {
    for (const shards of [1, 8] as const) {
      const goodsId = nextGoodsId++;
      await preheat(goodsId, shards);
      if (shards === 8 && round === 1) {
        const perMaster = new Map<string, number>();
        for (const keys of allBucketKeys(goodsId, shards)) {
          const master = clients[0].redis.slots[keySlot(keys.stock)]?.[0] ?? '?';
          perMaster.set(master, (perMaster.get(master) ?? 0) + 1);
        }
        console.log(
          `8 buckets over the masters: ${[...perMaster].map(([master, count]) => `${master} ${count}`).join(', ')}`,
        );
      }
      const figures = await measure(clients, servers, options.seconds, purchase(goodsId, shards));
      rates[shards].push(figures.rate);
      ceilings[shards].push(ceiling(figures));
      console.log(line(`${shards} bucket${shards === 1 ? '' : 's'}`, figures));
    }
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const [one, eight] = [median(rates[1]), median(rates[8])];
  console.log(
    `median measured: 1 bucket ${count(one)}/s, 8 buckets ${count(eight)}/s, ratio ${(eight / one).toFixed(2)}`,
  );
  const [oneCeiling, eightCeiling] = [median(ceilings[1]), median(ceilings[8])];
  console.log(
    `median hottest-master ceiling: 1 bucket ${count(oneCeiling)}/s, 8 buckets ${count(eightCeiling)}/s, ratio ${(eightCeiling / oneCeiling).toFixed(2)}`,
  );
  return true;
}

await runScript(parse, USAGE, run);
