// How fast the project's two halves go when each has the box's attention: an APP_ROLE=api
// process taking purchases with nothing consuming them (its CPU per purchase), then an
// APP_ROLE=worker process draining the queued orders into MySQL (orders per second and CPU per
// order), for several consumer batch sizes. The capacity model in docs/scaling.md builds on these.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { createPool, type RowDataPacket } from 'mysql2/promise';

import { onCleanup } from '../scripts/lib/cleanup.js';
import { integerFlag, readFlags } from '../scripts/lib/args.js';
import { nonNegativeIntegerField } from '../scripts/lib/http.js';
import { signToken } from '../scripts/lib/jwt.js';
import { buyerHeaders, runLoad } from '../scripts/lib/load.js';
import { runScript } from '../scripts/lib/main.js';
import { createGoods, preheatGoods } from '../scripts/lib/sale.js';
import {
  startServer,
  stopServer,
  waitForReady,
  type ServerProcess,
} from '../scripts/lib/server-process.js';
import { cpuSeconds } from './lib/probes.js';
import { freePortBelowEphemeral } from '../scripts/lib/ports.js';
import { databaseUrl, freshDatabase, freshVhost, rabbitUrl, startRedis } from './lib/stores.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const STORE = 'seckill_bench_drain';

const USAGE = `usage: npm run bench:drain -- [--orders <n>] [--batch-sizes <list>]

Takes --orders purchases through an APP_ROLE=api process (nothing consumes them), then, for each
batch size, drains them into MySQL with a fresh APP_ROLE=worker process. Prints the api's CPU per
purchase and, per batch size, the worker's orders per second and CPU per order.

  --orders <n>          purchases per drain (default 20000)
  --batch-sizes <list>  comma-separated CONSUMER_BATCH_SIZE values (default 50,200,1000)

Needs what \`npm run bench\` needs (a build, MariaDB, RabbitMQ with rabbitmqctl, redis-server).`;

interface Options {
  orders: number;
  batchSizes: number[];
}

function parse(argv: string[]): Options | 'help' {
  const values = readFlags(argv, {
    orders: { type: 'string', default: '20000' },
    'batch-sizes': { type: 'string', default: '50,200,1000' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  return {
    orders: integerFlag('orders', values.orders, 100, 1_000_000),
    batchSizes: values['batch-sizes']
      .split(',')
      .map((size) => integerFlag('batch-sizes', size.trim(), 1, 5_000)),
  };
}

const cpuOf = (pid: number) => cpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));

async function run(options: Options): Promise<boolean> {
  const secret = 'drain-capacity-secret-0123456789abcdef';
  const redis = await startRedis(await freePortBelowEphemeral());
  onCleanup(() => redis.stop());
  const db = createPool({ uri: databaseUrl(STORE), connectionLimit: 2 });
  onCleanup(() => db.end());
  const admin = signToken({ userId: 1, admin: true, secret });
  let ok = true;

  const start = async (role: 'api' | 'worker', extra: Record<string, string> = {}) => {
    const server: ServerProcess = startServer({
      args: [join(REPO_ROOT, 'dist', 'main.js')],
      cwd: REPO_ROOT,
      port: await freePortBelowEphemeral(),
      logPath: `/tmp/drain-capacity-${role}.log`,
      env: {
        ...process.env,
        ...extra,
        APP_ROLE: role,
        DATABASE_URL: databaseUrl(STORE),
        REDIS_URL: redis.url,
        RABBITMQ_URL: rabbitUrl(STORE),
        JWT_SECRET: secret,
        TRUSTED_PROXIES: '127.0.0.1',
      },
    });
    onCleanup(() => stopServer(server));
    await waitForReady(server);
    return server;
  };

  for (const batchSize of options.batchSizes) {
    await freshDatabase(STORE, join(REPO_ROOT, 'dist', 'migrations', '*.js'));
    await freshVhost(STORE);
    await redis.client.flushdb();
    const api = await start('api');
    const goodsId = await createGoods(api.baseUrl, admin, {
      name: 'drain',
      price: 1,
      stock: options.orders,
    });
    await preheatGoods(api.baseUrl, admin, goodsId);
    const path = `/api/v1/seckill/${goodsId}`;
    const cpuBefore = cpuOf(api.child.pid!);
    const load = await runLoad({
      origin: api.baseUrl,
      connections: 100,
      next: (i) =>
        i < options.orders
          ? { method: 'POST', path, headers: buyerHeaders(2_000_000 + i, i, secret) }
          : undefined,
    });
    const apiCpuMs = (cpuOf(api.child.pid!) - cpuBefore) * 1000;
    const accepted = load.results.filter((r) => r.status === 202).length;
    await stopServer(api);

    const worker = await start('worker', { CONSUMER_BATCH_SIZE: String(batchSize) });
    const workerCpuBefore = cpuOf(worker.child.pid!);
    const drainStart = performance.now();
    for (;;) {
      const [[row]] = await db.query<RowDataPacket[]>(
        'SELECT COUNT(*) n FROM seckill_order WHERE goods_id = ?',
        [goodsId],
      );
      const written = nonNegativeIntegerField(row, 'n') ?? 0;
      if (written >= accepted) break;
      if (performance.now() - drainStart > 300_000) {
        console.log(`batch ${batchSize}: only ${written} of ${accepted} written after 300 s`);
        ok = false;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const drainSeconds = (performance.now() - drainStart) / 1000;
    const workerCpuMs = (cpuOf(worker.child.pid!) - workerCpuBefore) * 1000;
    await stopServer(worker);
    console.log(
      `batch ${String(batchSize).padStart(4)}: api ${Math.round(accepted / (load.elapsedMs / 1000))} purchases/s, ${((apiCpuMs / accepted) * 1000).toFixed(0)} µs CPU each; worker drained ${accepted} in ${drainSeconds.toFixed(2)} s = ${Math.round(accepted / drainSeconds)} orders/s, ${((workerCpuMs / accepted) * 1000).toFixed(0)} µs CPU each`,
    );
  }
  return ok;
}

await runScript(parse, USAGE, run);
