// End-to-end flash-sale demo: starts the server (unless --url), creates and preheats one goods,
// fires a burst of concurrent purchases from many distinct users, waits for the queue to drain
// into MySQL, and checks the stock invariants. Exit code 1 when any invariant is broken.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync, type WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import cliProgress from 'cli-progress';
import Table from 'cli-table3';
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';

import { loadDotEnv, signToken } from './lib/jwt.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVER_LOG_PATH = join(tmpdir(), 'demo-server.log');
const DEFAULT_DATABASE_URL = 'mysql://root:@127.0.0.1:3306/seckill';

const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 15_000;
const POLL_INTERVAL_MS = 100;
// A single hung request must not hang the whole demo; it is recorded as a failure instead.
const REQUEST_TIMEOUT_MS = 30_000;
const LOG_TAIL_LINES = 40;
const ADMIN_USER_ID = 1;
const FIRST_BUYER_ID = 1_000_000;
// Buyer addresses are 10.0.0.1 .. 10.255.255.254, one per buyer.
const MAX_BUYERS = 2 ** 24 - 2;

const USAGE = `usage: npm run demo -- [options]

  --stock <n>          units for sale (default 100)
  --buyers <n>         distinct buyers (default 1000)
  --clicks <n>         concurrent purchase requests per buyer (default 2)
  --concurrency <n>    max requests in flight (default 200)
  --port <n>           port for the server this demo starts (default: a free one)
  --drain-timeout <s>  seconds to wait for accepted orders to reach MySQL (default 60)
  --url <base>         use an already running server (e.g. http://127.0.0.1:3000) instead of starting one
  --help               show this help

Environment: DATABASE_URL (default ${DEFAULT_DATABASE_URL}), JWT_SECRET; ./.env is read too.`;

// ---------------------------------------------------------------- options

interface DemoOptions {
  stock: number;
  buyers: number;
  clicks: number;
  concurrency: number;
  port: number | undefined;
  drainTimeoutSeconds: number;
  url: string | undefined;
}

class DemoError extends Error {}

class UsageError extends DemoError {}

function parsePositiveInteger(name: string, raw: string, max = Number.MAX_SAFE_INTEGER): number {
  // A strict pattern, because Number() would accept "1e3", "0x10" or " 7".
  if (!/^[1-9][0-9]*$/.test(raw) || Number(raw) > max) {
    throw new UsageError(
      `--${name} must be an integer between 1 and ${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return Number(raw);
}

function parsePositiveSeconds(name: string, raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value <= 0) {
    throw new UsageError(
      `--${name} must be a positive number of seconds, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

function parseBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--url must be an absolute URL, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`--url must be http or https, got ${url.protocol}`);
  }
  // Routes are appended as absolute paths, so a trailing slash would double up.
  return url.href.replace(/\/+$/, '');
}

function readFlags(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: {
        stock: { type: 'string', default: '100' },
        buyers: { type: 'string', default: '1000' },
        clicks: { type: 'string', default: '2' },
        concurrency: { type: 'string', default: '200' },
        port: { type: 'string' },
        'drain-timeout': { type: 'string', default: '60' },
        url: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function parseOptions(argv: string[]): DemoOptions | 'help' {
  const flags = readFlags(argv);
  if (flags.help) return 'help';
  return {
    stock: parsePositiveInteger('stock', flags.stock),
    buyers: parsePositiveInteger('buyers', flags.buyers, MAX_BUYERS),
    clicks: parsePositiveInteger('clicks', flags.clicks, 1000),
    concurrency: parsePositiveInteger('concurrency', flags.concurrency, 100_000),
    port: flags.port === undefined ? undefined : parsePositiveInteger('port', flags.port, 65_535),
    drainTimeoutSeconds: parsePositiveSeconds('drain-timeout', flags['drain-timeout']),
    url: flags.url === undefined ? undefined : parseBaseUrl(flags.url),
  };
}

// ---------------------------------------------------------------- cleanup on exit and Ctrl+C

type Cleanup = () => Promise<void> | void;
const cleanups: Cleanup[] = [];
let cleaning: Promise<void> | undefined;
const startedServers = new Set<ChildProcess>();

/**
 * Runs each registered cleanup once, newest first. Both `finally` and the signal handler call it;
 * they share one run so neither can exit while the other is still stopping the server.
 */
function runCleanups(): Promise<void> {
  cleaning ??= drainCleanups();
  return cleaning;
}

async function drainCleanups(): Promise<void> {
  while (cleanups.length > 0) {
    const cleanup = cleanups.pop();
    try {
      await cleanup?.();
    } catch (error) {
      console.error('cleanup failed:', error);
    }
  }
}

function installSignalHandlers(): void {
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    // A second Ctrl+C means "now": skip the server's graceful shutdown, but leave no orphan behind.
    if (interrupted) {
      for (const child of startedServers) child.kill('SIGKILL');
      process.exit(130);
    }
    interrupted = true;
    console.error(`\n${signal} received, stopping…`);
    void runCleanups().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

// ---------------------------------------------------------------- small helpers

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // undici hides the useful part (ECONNREFUSED, …) in `cause`.
  const cause = error.cause;
  if (isRecord(cause) && typeof cause.code === 'string') return cause.code;
  return error.name === 'TimeoutError' ? 'TIMEOUT' : error.message;
}

function nonNegativeIntegerField(body: unknown, field: string): number | undefined {
  if (!isRecord(body)) return undefined;
  const raw = body[field];
  // Only numbers or numeric strings: Number(null) would silently read as 0.
  const value = typeof raw === 'number' || typeof raw === 'string' ? Number(raw) : NaN;
  return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() =>
        port > 0 ? resolve(port) : reject(new Error('could not read a free port')),
      );
    });
  });
}

function readLogTail(path: string, lines: number): string {
  if (!existsSync(path)) return '(no log)';
  return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

// ---------------------------------------------------------------- HTTP

interface JsonResponse {
  status: number;
  body: unknown;
}

interface RequestOptions {
  token?: string;
  body?: unknown;
}

async function requestJson(
  method: string,
  url: string,
  options: RequestOptions = {},
): Promise<JsonResponse> {
  const headers: Record<string, string> = {};
  const init: RequestInit = { method, headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(url, init);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: keep the raw text for the error message.
  }
  return { status: response.status, body };
}

function expectStatus(what: string, response: JsonResponse, expected: number): void {
  if (response.status === expected) return;
  const hint =
    response.status === 401 ? ' (is JWT_SECRET the same for the server and this script?)' : '';
  throw new DemoError(
    `${what}: expected HTTP ${expected}, got ${response.status}${hint}: ${JSON.stringify(response.body)}`,
  );
}

// ---------------------------------------------------------------- server process

interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  logPath: string;
  /** Settles once the process is gone and its output is flushed to the log file. */
  closed: Promise<ExitInfo>;
}

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function closeLog(log: WriteStream): Promise<void> {
  return new Promise((resolve) => log.end(resolve));
}

function startServer(port: number): ServerProcess {
  const entry = join(REPO_ROOT, 'dist', 'main.js');
  if (!existsSync(entry)) throw new DemoError(`${entry} not found: run \`npm run build\` first`);

  const log = createWriteStream(SERVER_LOG_PATH, { flags: 'w' });
  const child = spawn(process.execPath, [entry], {
    cwd: REPO_ROOT,
    // The buyers' X-Forwarded-For must be believed, or they would all share 127.0.0.1's rate limit.
    env: { ...process.env, PORT: String(port), TRUSTED_PROXIES: '127.0.0.1,::1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  startedServers.add(child);
  child.once('exit', () => startedServers.delete(child));
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });

  const closed = new Promise<ExitInfo>((resolve) => {
    // 'close' (not 'exit') so that both pipes are drained before the log is closed and read.
    child.once('close', (code, signal) => void closeLog(log).then(() => resolve({ code, signal })));
    child.once('error', (error) => {
      log.write(`spawn failed: ${error.message}\n`);
      void closeLog(log).then(() => resolve({ code: null, signal: null }));
    });
  });
  return { child, baseUrl: `http://127.0.0.1:${port}`, logPath: SERVER_LOG_PATH, closed };
}

async function waitForReady(server: ServerProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  // A holder object, because a plain `let` assigned in a callback is not re-checked by narrowing.
  const state: { exit?: ExitInfo } = {};
  void server.closed.then((info) => (state.exit = info));

  while (Date.now() < deadline) {
    if (state.exit !== undefined) {
      console.error(`--- last ${LOG_TAIL_LINES} lines of ${server.logPath} ---`);
      console.error(readLogTail(server.logPath, LOG_TAIL_LINES));
      throw new DemoError(
        `server exited before it was ready (code ${state.exit.code}, signal ${state.exit.signal})`,
      );
    }
    try {
      const response = await fetch(`${server.baseUrl}/health/ready`, {
        signal: AbortSignal.timeout(2_000),
      });
      await response.body?.cancel();
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await Promise.race([sleep(POLL_INTERVAL_MS), server.closed]);
  }
  throw new DemoError(`server not ready after ${READY_TIMEOUT_MS / 1000} s; see ${server.logPath}`);
}

async function stopServer(server: ServerProcess): Promise<void> {
  if (!hasExited(server.child)) {
    server.child.kill('SIGTERM');
    // Unref'd so this timer alone never keeps the demo alive.
    const graceful = await Promise.race([
      server.closed.then(() => true),
      sleep(STOP_GRACE_MS, false, { ref: false }),
    ]);
    if (!graceful) {
      console.error(`server did not stop within ${STOP_GRACE_MS / 1000} s, sending SIGKILL`);
      server.child.kill('SIGKILL');
    }
  }
  await server.closed;
}

async function launchServer(requestedPort: number | undefined): Promise<string> {
  const port = requestedPort ?? (await findFreePort());
  console.log(`starting server on port ${port}, log: ${SERVER_LOG_PATH}`);
  const server = startServer(port);
  cleanups.push(() => stopServer(server));
  await waitForReady(server);
  console.log('server ready');
  return server.baseUrl;
}

// ---------------------------------------------------------------- goods setup

async function createGoods(baseUrl: string, adminToken: string, stock: number): Promise<number> {
  const now = Date.now();
  const response = await requestJson('POST', `${baseUrl}/api/v1/admin/goods`, {
    token: adminToken,
    body: {
      name: 'Demo phone',
      price: 4999,
      stock,
      // A second in the past so the sale is already open when the burst starts.
      startAt: new Date(now - 1_000).toISOString(),
      endAt: new Date(now + 3_600_000).toISOString(),
      perUserLimit: 1,
    },
  });
  expectStatus('create goods', response, 201);
  const id = nonNegativeIntegerField(response.body, 'id');
  if (id === undefined || id === 0)
    throw new DemoError(`create goods: no id in ${JSON.stringify(response.body)}`);
  return id;
}

async function preheatGoods(baseUrl: string, adminToken: string, goodsId: number): Promise<void> {
  const response = await requestJson('POST', `${baseUrl}/api/v1/admin/goods/${goodsId}/preheat`, {
    token: adminToken,
  });
  expectStatus('preheat goods', response, 200);
}

async function fetchRedisRemaining(baseUrl: string, goodsId: number): Promise<number | undefined> {
  const response = await requestJson('GET', `${baseUrl}/api/v1/goods/${goodsId}`);
  expectStatus('get goods', response, 200);
  return nonNegativeIntegerField(response.body, 'remaining');
}

// ---------------------------------------------------------------- the burst

interface PurchaseRequest {
  url: string;
  headers: Record<string, string>;
}

interface PurchaseResult {
  status: number;
  code: string | undefined;
  latencyMs: number;
}

interface BurstResult {
  results: PurchaseResult[];
  elapsedMs: number;
  endedAt: number;
}

/** 10.a.b.c from the buyer index, skipping 10.0.0.0 so every address looks like a host. */
function buyerAddress(index: number): string {
  const n = index + 1;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
}

/** Buyer-major order, so a buyer's clicks sit next to each other in the queue and are in flight together. */
function buildPurchaseRequests(
  baseUrl: string,
  goodsId: number,
  options: DemoOptions,
): PurchaseRequest[] {
  const url = `${baseUrl}/api/v1/seckill/${goodsId}`;
  const requests: PurchaseRequest[] = [];
  for (let i = 0; i < options.buyers; i++) {
    const headers = {
      authorization: `Bearer ${signToken({ userId: FIRST_BUYER_ID + i })}`,
      'x-forwarded-for': buyerAddress(i),
    };
    for (let click = 0; click < options.clicks; click++) requests.push({ url, headers });
  }
  return requests;
}

async function sendPurchase(request: PurchaseRequest): Promise<PurchaseResult> {
  const started = performance.now();
  try {
    // No body and no content-type: the contract allows an empty body, and an empty JSON body would be a 400.
    const response = await fetch(request.url, {
      method: 'POST',
      headers: request.headers,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await response.text();
    const latencyMs = performance.now() - started;
    return {
      status: response.status,
      code: response.status >= 400 ? errorCode(text) : undefined,
      latencyMs,
    };
  } catch (error) {
    return { status: 0, code: describeError(error), latencyMs: performance.now() - started };
  }
}

function errorCode(text: string): string | undefined {
  try {
    const body: unknown = JSON.parse(text);
    return isRecord(body) && typeof body.code === 'string' ? body.code : undefined;
  } catch {
    return undefined;
  }
}

async function runWithConcurrency<T, R>(
  items: readonly T[],
  limit: number,
  worker: (item: T) => Promise<R>,
  onDone: () => void,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  // One iterator shared by all lanes: each next() hands out the next item exactly once.
  const queue = items.entries();
  const lane = async (): Promise<void> => {
    for (const [index, item] of queue) {
      results[index] = await worker(item);
      onDone();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

async function runBurst(requests: PurchaseRequest[], concurrency: number): Promise<BurstResult> {
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: 'buying [{bar}] {percentage}% | {value}/{total} requests | {duration}s',
    },
    cliProgress.Presets.shades_classic,
  );
  cleanups.push(() => bar.stop());
  bar.start(requests.length, 0);
  const started = performance.now();
  const results = await runWithConcurrency(requests, concurrency, sendPurchase, () =>
    bar.increment(),
  );
  const endedAt = performance.now();
  bar.stop();
  return { results, elapsedMs: endedAt - started, endedAt };
}

// ---------------------------------------------------------------- MySQL

interface OrderCountRow extends RowDataPacket {
  n: number | string;
  q: number | string;
  active: number | string;
}

interface StockRow extends RowDataPacket {
  total_stock: number;
  stock: number;
}

interface UserRow extends RowDataPacket {
  user_id: number;
}

interface OrderCounts {
  orders: number;
  quantity: number;
  /** Quantity of orders that still hold stock; equals `quantity` unless something was cancelled. */
  activeQuantity: number;
}

interface DrainResult {
  counts: OrderCounts;
  drained: boolean;
  drainMs: number;
}

async function countOrders(db: Connection, goodsId: number): Promise<OrderCounts> {
  // SUM() comes back as a DECIMAL string from mysql2, hence Number().
  const [rows] = await db.query<OrderCountRow[]>(
    `SELECT COUNT(*) n, COALESCE(SUM(quantity),0) q,
            COALESCE(SUM(CASE WHEN status <> 'CANCELLED' THEN quantity ELSE 0 END),0) active
       FROM seckill_order WHERE goods_id = ?`,
    [goodsId],
  );
  const row = rows[0];
  return {
    orders: Number(row?.n ?? 0),
    quantity: Number(row?.q ?? 0),
    activeQuantity: Number(row?.active ?? 0),
  };
}

async function waitForDrain(
  db: Connection,
  goodsId: number,
  accepted: number,
  burstEndedAt: number,
  timeoutSeconds: number,
): Promise<DrainResult> {
  const deadline = burstEndedAt + timeoutSeconds * 1000;
  for (;;) {
    const counts = await countOrders(db, goodsId);
    const now = performance.now();
    // More rows than 202s is a bug, not a reason to keep waiting; the invariants report it.
    if (counts.orders >= accepted) return { counts, drained: true, drainMs: now - burstEndedAt };
    if (now >= deadline) return { counts, drained: false, drainMs: now - burstEndedAt };
    await sleep(POLL_INTERVAL_MS);
  }
}

async function readStock(db: Connection, goodsId: number): Promise<StockRow> {
  const [rows] = await db.query<StockRow[]>(
    'SELECT total_stock, stock FROM seckill_goods WHERE id = ?',
    [goodsId],
  );
  const row = rows[0];
  if (row === undefined) throw new DemoError(`goods ${goodsId} not found in MySQL`);
  return { ...row, total_stock: Number(row.total_stock), stock: Number(row.stock) };
}

async function readDuplicateBuyers(db: Connection, goodsId: number): Promise<number[]> {
  const [rows] = await db.query<UserRow[]>(
    `SELECT user_id FROM seckill_order WHERE goods_id = ? AND status <> 'CANCELLED'
      GROUP BY user_id HAVING COUNT(*) > 1`,
    [goodsId],
  );
  return rows.map((row) => Number(row.user_id));
}

async function connectMysql(): Promise<Connection> {
  const url = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  try {
    const db = await createConnection(url);
    cleanups.push(() => db.end());
    return db;
  } catch (error) {
    throw new DemoError(
      `cannot connect to MySQL at ${url.replace(/:[^:@/]*@/, ':***@')}: ${describeError(error)}`,
    );
  }
}

// ---------------------------------------------------------------- report

interface Report {
  burst: BurstResult;
  drain: DrainResult;
  stock: StockRow;
  duplicateBuyers: number[];
  redisRemaining: number | undefined;
}

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  // Nearest-rank: the value below which p% of the samples fall.
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? 0;
}

function outcomeLabel(result: PurchaseResult): string {
  if (result.status === 202) return 'accepted (202)';
  if (result.status === 0) return `other: network error ${result.code ?? ''}`.trimEnd();
  if (result.status >= 400 && result.code !== undefined) return `rejected: ${result.code}`;
  return `other: HTTP ${result.status}`;
}

/** Rejections first (most frequent first), then anything unexpected. */
function outcomeRows(results: readonly PurchaseResult[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const result of results) {
    const label = outcomeLabel(result);
    if (label !== 'accepted (202)') counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  return [...counts].sort(([a, x], [b, y]) => {
    const aOther = a.startsWith('other') ? 1 : 0;
    const bOther = b.startsWith('other') ? 1 : 0;
    return aOther - bOther || y - x || a.localeCompare(b);
  });
}

function countAccepted(results: readonly PurchaseResult[]): number {
  return results.filter((result) => result.status === 202).length;
}

function oversold(report: Report): number {
  return Math.max(0, report.drain.counts.activeQuantity - report.stock.total_stock);
}

function buildTable(report: Report): string {
  const { burst, drain, stock } = report;
  const latencies = burst.results.map((result) => result.latencyMs).sort((a, b) => a - b);
  const seconds = burst.elapsedMs / 1000;
  const table = new Table({
    head: ['metric', 'value'],
    colAligns: ['left', 'right'],
    // No colour codes when the report is redirected to a file or CI log.
    style: process.stdout.isTTY ? { compact: true } : { head: [], border: [], compact: true },
  });
  table.push(
    ['requests', burst.results.length],
    ['accepted (202)', countAccepted(burst.results)],
    ...outcomeRows(burst.results),
    ['orders in MySQL', drain.counts.orders],
    ['ordered quantity', drain.counts.quantity],
    ['oversold', oversold(report)],
    ['users with two orders', report.duplicateBuyers.length],
    ['MySQL stock', `${stock.stock} / ${stock.total_stock}`],
    ['Redis remaining', report.redisRemaining ?? 'n/a'],
    ['burst elapsed (s)', seconds.toFixed(2)],
    ['throughput (req/s)', seconds > 0 ? Math.round(burst.results.length / seconds) : 'n/a'],
    ['latency p50 (ms)', percentile(latencies, 50).toFixed(1)],
    ['latency p99 (ms)', percentile(latencies, 99).toFixed(1)],
    ['latency max (ms)', (latencies.at(-1) ?? 0).toFixed(1)],
    [
      'drain time (s)',
      drain.drained
        ? (drain.drainMs / 1000).toFixed(2)
        : `timed out (${(drain.drainMs / 1000).toFixed(0)})`,
    ],
  );
  return table.toString();
}

function evaluateChecks(report: Report): Check[] {
  const { drain, stock } = report;
  const accepted = countAccepted(report.burst.results);
  const active = drain.counts.activeQuantity;
  const total = stock.total_stock;
  const redis = report.redisRemaining;
  const duplicates = report.duplicateBuyers;
  return [
    { name: 'no oversell', ok: oversold(report) === 0, detail: `ordered ${active} of ${total}` },
    {
      name: 'no user bought twice',
      ok: duplicates.length === 0,
      detail:
        duplicates.length === 0
          ? 'none'
          : `users ${duplicates.slice(0, 10).join(', ')}${duplicates.length > 10 ? ', …' : ''}`,
    },
    {
      name: 'every 202 became an order',
      ok: drain.counts.orders === accepted,
      detail: `${drain.counts.orders} orders for ${accepted} accepted${drain.drained ? '' : ' (drain timed out)'}`,
    },
    {
      name: 'MySQL stock + ordered == total',
      ok: stock.stock + active === total,
      detail: `${stock.stock} + ${active} vs ${total}`,
    },
    {
      name: 'Redis remaining + ordered == total',
      ok: redis !== undefined && redis + active === total,
      detail: `${redis ?? 'n/a'} + ${active} vs ${total}`,
    },
    // A run where nothing sold proves nothing, so it fails too.
    {
      name: 'orders landed',
      ok: drain.counts.orders > 0,
      detail: `${drain.counts.orders} within the drain timeout`,
    },
  ];
}

function printChecks(checks: readonly Check[]): boolean {
  for (const check of checks) {
    console.log(`${check.ok ? 'OK    ' : 'BROKEN'}  ${check.name}: ${check.detail}`);
  }
  return checks.every((check) => check.ok);
}

// ---------------------------------------------------------------- main

async function runDemo(options: DemoOptions): Promise<boolean> {
  const baseUrl = options.url ?? (await launchServer(options.port));
  const adminToken = signToken({ userId: ADMIN_USER_ID, admin: true });
  const goodsId = await createGoods(baseUrl, adminToken, options.stock);
  await preheatGoods(baseUrl, adminToken, goodsId);
  console.log(
    `goods ${goodsId}: ${options.stock} units, ${options.buyers} buyers × ${options.clicks} clicks`,
  );

  // Connect before the burst, so a bad DATABASE_URL fails fast and the drain clock measures only the queue.
  const db = await connectMysql();
  const requests = buildPurchaseRequests(baseUrl, goodsId, options);
  const burst = await runBurst(requests, options.concurrency);
  const accepted = countAccepted(burst.results);
  console.log(`burst done: ${accepted} accepted; waiting for orders to reach MySQL…`);

  const drain = await waitForDrain(
    db,
    goodsId,
    accepted,
    burst.endedAt,
    options.drainTimeoutSeconds,
  );
  const report: Report = {
    burst,
    drain,
    stock: await readStock(db, goodsId),
    duplicateBuyers: await readDuplicateBuyers(db, goodsId),
    redisRemaining: await fetchRedisRemaining(baseUrl, goodsId),
  };
  console.log(buildTable(report));
  return printChecks(evaluateChecks(report));
}

async function main(): Promise<void> {
  loadDotEnv();
  let options: DemoOptions | 'help';
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`error: ${error.message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (options === 'help') {
    console.log(USAGE);
    return;
  }

  installSignalHandlers();
  try {
    process.exitCode = (await runDemo(options)) ? 0 : 1;
  } catch (error) {
    console.error(error instanceof DemoError ? `error: ${error.message}` : error);
    process.exitCode = 1;
  } finally {
    await runCleanups();
  }
}

await main();
