// The two servers the bench compares, each started as a child process on its own stores.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import type { Redis } from 'ioredis';
import { createPool, type Pool, type RowDataPacket } from 'mysql2/promise';

import { ScriptError } from '../../scripts/lib/errors.js';
import { expectStatus, nonNegativeIntegerField, requestJson } from '../../scripts/lib/http.js';
import { signToken } from '../../scripts/lib/jwt.js';
import { freePortBelowEphemeral } from '../../scripts/lib/ports.js';
import { createGoods, preheatGoods } from '../../scripts/lib/sale.js';
import type { BaselineWork } from './options.js';
import {
  startServer,
  stopServer,
  waitForReady,
  type ServerProcess,
} from '../../scripts/lib/server-process.js';
import {
  databaseUrl,
  freshDatabase,
  freshVhost,
  rabbitUrl,
  startRedis,
  type RedisServer,
} from './stores.js';

export type SideName = 'project' | 'baseline';
export const SIDES: readonly SideName[] = ['project', 'baseline'];

const STORE_NAMES: Record<SideName, string> = {
  project: 'seckill_bench_app',
  baseline: 'seckill_bench_base',
};
export interface Side {
  name: SideName;
  origin: string;
  pid: number;
  /** The project's worker process, when it runs as api + worker (`--worker`). */
  workerPid?: number;
  redisPid: number;
  redis: Redis;
  db: Pool;
  logPath: string;
  /** A new goods of `stock` units, on sale from now for an hour, preheated into Redis. */
  createSale: (stock: number) => Promise<number>;
  stop: () => Promise<void>;
}

export interface SideOptions {
  repoRoot: string;
  logDir: string;
  jwtSecret: string;
  /** Where `node --cpu-prof` writes `<side>/*.cpuprofile` at exit; no profiling when absent. */
  profileDir?: string;
  /** The project as APP_ROLE=api plus an APP_ROLE=worker process on the same stores. */
  worker?: boolean;
  /** The baseline's Redis work per purchase (BASELINE_WORK, bench/baseline/server.ts). */
  baseline?: BaselineWork;
  /** Its own database, vhost name and log name, for more than one side of one kind. */
  store?: string;
  logName?: string;
  /** More environment for the side's processes (a setting under test). */
  env?: Record<string, string>;
}

function sideCommand(name: SideName, options: SideOptions): string[] {
  // A directory per side: tsx's loader thread writes a profile of its own beside the main one.
  const profile =
    options.profileDir === undefined
      ? []
      : ['--cpu-prof', `--cpu-prof-dir=${join(options.profileDir, `profile-${name}`)}`];
  if (name === 'project') {
    const entry = join(options.repoRoot, 'dist', 'main.js');
    if (!existsSync(entry)) throw new ScriptError(`${entry} not found: run \`npm run build\``);
    return [...profile, entry];
  }
  // tsx only compiles the file at start; the running code is plain JavaScript like the project's.
  return [...profile, '--import', 'tsx', join(options.repoRoot, 'bench', 'baseline', 'server.ts')];
}

async function createProjectSale(origin: string, admin: string, stock: number): Promise<number> {
  const id = await createGoods(origin, admin, { name: 'bench', price: 1, stock });
  await preheatGoods(origin, admin, id);
  return id;
}

async function createBaselineSale(origin: string, admin: string, stock: number): Promise<number> {
  const created = await requestJson('POST', `${origin}/admin/goods`, {
    token: admin,
    body: { stock },
  });
  expectStatus('create goods (baseline)', created, 201);
  const id = nonNegativeIntegerField(created.body, 'id');
  if (!id) throw new ScriptError(`create goods: no id in ${JSON.stringify(created.body)}`);
  return id;
}

export async function startSide(name: SideName, options: SideOptions): Promise<Side> {
  const store = options.store ?? STORE_NAMES[name];
  const [port, redisPort] = [await freePortBelowEphemeral(), await freePortBelowEphemeral()];
  const redis: RedisServer = await startRedis(redisPort);
  await freshDatabase(store, join(options.repoRoot, 'dist', 'migrations', '*.js'));
  await freshVhost(store);
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl(store),
    REDIS_URL: redis.url,
    RABBITMQ_URL: rabbitUrl(store),
    JWT_SECRET: options.jwtSecret,
    // Every buyer comes from its own X-Forwarded-For address, as behind a load balancer.
    TRUSTED_PROXIES: '127.0.0.1',
    ...options.env,
  };
  const split = name === 'project' && options.worker === true;
  const logPath = join(options.logDir, `${options.logName ?? name}.log`);
  const server: ServerProcess = startServer({
    args: sideCommand(name, options),
    cwd: options.repoRoot,
    port,
    logPath,
    env: split
      ? { ...env, APP_ROLE: 'api' }
      : name === 'baseline' && options.baseline === 'same-work'
        ? { ...env, BASELINE_WORK: 'same' }
        : env,
  });
  // The migrations ran above, before either process: the two do not race to apply them.
  const worker: ServerProcess | undefined = split
    ? startServer({
        args: [join(options.repoRoot, 'dist', 'main.js')],
        cwd: options.repoRoot,
        port: await freePortBelowEphemeral(),
        logPath: join(options.logDir, `${name}-worker.log`),
        env: { ...env, APP_ROLE: 'worker' },
      })
    : undefined;
  try {
    await Promise.all([waitForReady(server), worker && waitForReady(worker)]);
  } catch (error) {
    await Promise.all([stopServer(server), worker && stopServer(worker)]);
    await redis.stop();
    throw error;
  }
  const pid = server.child.pid;
  if (pid === undefined) throw new ScriptError(`${name}: no pid`);
  const workerPid = worker?.child.pid;
  const db = createPool({ uri: databaseUrl(store), connectionLimit: 2 });
  const admin = signToken({ userId: 1, admin: true, secret: options.jwtSecret });
  const origin = server.baseUrl;
  let stopping: Promise<void> | undefined;
  return {
    name,
    origin,
    pid,
    workerPid,
    redisPid: redis.pid,
    redis: redis.client,
    db,
    logPath,
    createSale: (stock) =>
      name === 'project'
        ? createProjectSale(origin, admin, stock)
        : createBaselineSale(origin, admin, stock),
    // Memoized: the bench stops the sides itself before it reads their profiles, and the
    // exit cleanups call it again.
    stop: () =>
      (stopping ??= (async () => {
        await Promise.all([stopServer(server), worker && stopServer(worker)]);
        await db.end();
        await redis.stop();
      })()),
  };
}

export interface SaleCounts {
  orders: number;
  users: number;
  quantity: number;
  stock: number;
  totalStock: number;
}

export async function saleCounts(db: Pool, goodsId: number): Promise<SaleCounts> {
  const [[orders]] = await db.query<RowDataPacket[]>(
    `SELECT COUNT(*) n, COUNT(DISTINCT user_id) u, COALESCE(SUM(quantity), 0) q
       FROM seckill_order WHERE goods_id = ?`,
    [goodsId],
  );
  const [[goods]] = await db.query<RowDataPacket[]>(
    'SELECT stock, total_stock FROM seckill_goods WHERE id = ?',
    [goodsId],
  );
  return {
    orders: Number(orders?.n ?? 0),
    users: Number(orders?.u ?? 0),
    quantity: Number(orders?.q ?? 0),
    stock: Number(goods?.stock ?? NaN),
    totalStock: Number(goods?.total_stock ?? NaN),
  };
}

export async function countOrders(db: Pool, goodsId: number): Promise<number> {
  const [[row]] = await db.query<RowDataPacket[]>(
    'SELECT COUNT(*) n FROM seckill_order WHERE goods_id = ?',
    [goodsId],
  );
  return Number(row?.n ?? 0);
}
