// End-to-end flash-sale demo: starts the server (unless --url), creates and preheats one goods,
// fires a burst of concurrent purchases from many distinct users, waits for the queue to drain
// into MySQL, and checks the stock invariants. Then it follows the orders' lifecycle: pays a
// share of them as their owners, waits for the rest to pass their payment deadline and be
// cancelled (which gives their stock back), and checks the stores again, through the admin
// reconcile route too. Exit code 1 when any invariant is broken.
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
// Slower than the drain poll: expiries take seconds, and each poll is two queries.
const EXPIRY_POLL_INTERVAL_MS = 200;
// Redis gets a cancelled order's stock back just after the MySQL commit, so a final reading taken
// right as the last order expires can be a moment early: it is read again before it counts as drift.
const SETTLE_READS = 5;
const SETTLE_PAUSE_MS = 200;
// Shorter than the burst plus the drain, orders would expire while the first table's stock
// checks read them, and those checks would compare a moving target.
const MIN_PAYMENT_TIMEOUT_SECONDS = 5;
const MAX_PAYMENT_TIMEOUT_SECONDS = (2 ** 31 - 1) / 1000;
const EXPIRY_TIMEOUT_SLACK_SECONDS = 60;
const ADMIN_USER_ID = 1;
const FIRST_BUYER_ID = 1_000_000;
// Buyer addresses are 10.0.0.1 .. 10.255.255.254, one per buyer.
const MAX_BUYERS = 2 ** 24 - 2;

const USAGE = `usage: npm run demo -- [options]

  --stock <n>            units for sale (default 100)
  --buyers <n>           distinct buyers (default 1000)
  --clicks <n>           concurrent purchase requests per buyer (default 2)
  --concurrency <n>      max requests in flight (default 200)
  --port <n>             port for the server this demo starts (default: a free one)
  --drain-timeout <s>    seconds to wait for accepted orders to reach MySQL (default 60)
  --pay-share <f>        fraction of the orders paid by their owners, 0..1 (default 0.5);
                         the others are left to expire
  --payment-timeout <s>  ORDER_PAYMENT_TIMEOUT_MS of the server this demo starts, in seconds
                         (default 10, at least 5); with --url the server's own timeout applies
  --expiry-timeout <s>   seconds to wait for the unpaid orders to be cancelled
                         (default: payment timeout + ${EXPIRY_TIMEOUT_SLACK_SECONDS})
  --url <base>           use an already running server (e.g. http://127.0.0.1:3000) instead of starting one
  --help                 show this help

Environment: DATABASE_URL (default ${DEFAULT_DATABASE_URL}), JWT_SECRET; ./.env is read too.`;

// ---------------------------------------------------------------- options

interface DemoOptions {
  stock: number;
  buyers: number;
  clicks: number;
  concurrency: number;
  port: number | undefined;
  drainTimeoutSeconds: number;
  payShare: number;
  paymentTimeoutSeconds: number;
  expiryTimeoutSeconds: number;
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

function parsePaymentTimeout(raw: string): number {
  const value = Number(raw);
  if (
    raw.trim() === '' ||
    !Number.isFinite(value) ||
    value < MIN_PAYMENT_TIMEOUT_SECONDS ||
    value > MAX_PAYMENT_TIMEOUT_SECONDS
  ) {
    throw new UsageError(
      `--payment-timeout must be between ${MIN_PAYMENT_TIMEOUT_SECONDS} and ${Math.floor(MAX_PAYMENT_TIMEOUT_SECONDS)} seconds, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

function parseFraction(name: string, raw: string): number {
  // Plain decimals only, for the same reason as parsePositiveInteger ("0x1" would be 1).
  const value = Number(raw);
  if (!/^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$/.test(raw) || value > 1) {
    throw new UsageError(`--${name} must be a number between 0 and 1, got ${JSON.stringify(raw)}`);
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
        'pay-share': { type: 'string', default: '0.5' },
        'payment-timeout': { type: 'string', default: '10' },
        // No default here: it follows --payment-timeout.
        'expiry-timeout': { type: 'string' },
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
  const paymentTimeoutSeconds = parsePaymentTimeout(flags['payment-timeout']);
  return {
    stock: parsePositiveInteger('stock', flags.stock),
    buyers: parsePositiveInteger('buyers', flags.buyers, MAX_BUYERS),
    clicks: parsePositiveInteger('clicks', flags.clicks, 1000),
    concurrency: parsePositiveInteger('concurrency', flags.concurrency, 100_000),
    port: flags.port === undefined ? undefined : parsePositiveInteger('port', flags.port, 65_535),
    drainTimeoutSeconds: parsePositiveSeconds('drain-timeout', flags['drain-timeout']),
    payShare: parseFraction('pay-share', flags['pay-share']),
    paymentTimeoutSeconds,
    expiryTimeoutSeconds:
      flags['expiry-timeout'] === undefined
        ? paymentTimeoutSeconds + EXPIRY_TIMEOUT_SLACK_SECONDS
        : parsePositiveSeconds('expiry-timeout', flags['expiry-timeout']),
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

/** A bar on stderr, so that stdout keeps only the report; stopped by the cleanups on Ctrl+C too. */
function startProgressBar(
  format: string,
  total: number,
  payload: Record<string, string | number> = {},
): cliProgress.SingleBar {
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format },
    cliProgress.Presets.shades_classic,
  );
  cleanups.push(() => bar.stop());
  bar.start(total, 0, payload);
  return bar;
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

function startServer(port: number, paymentTimeoutMs: number): ServerProcess {
  const entry = join(REPO_ROOT, 'dist', 'main.js');
  if (!existsSync(entry)) throw new DemoError(`${entry} not found: run \`npm run build\` first`);

  const log = createWriteStream(SERVER_LOG_PATH, { flags: 'w' });
  const child = spawn(process.execPath, [entry], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      // The buyers' X-Forwarded-For must be believed, or they would all share 127.0.0.1's rate limit.
      TRUSTED_PROXIES: '127.0.0.1,::1',
      // Short, so that the expiry phase sees the unpaid orders cancelled within the run.
      ORDER_PAYMENT_TIMEOUT_MS: String(paymentTimeoutMs),
    },
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

async function launchServer(
  requestedPort: number | undefined,
  paymentTimeoutMs: number,
): Promise<string> {
  const port = requestedPort ?? (await findFreePort());
  console.log(
    `starting server on port ${port} (payment timeout ${paymentTimeoutMs / 1000} s), log: ${SERVER_LOG_PATH}`,
  );
  const server = startServer(port, paymentTimeoutMs);
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

/** The parts of the admin reconcile answer that the demo reports; the order counts it reads from MySQL. */
interface Reconcile {
  consistent: boolean;
  /** null when Redis does not hold the sale. */
  redisDrift: number | null;
  dbDrift: number;
  inFlight: number;
}

function integerField(body: unknown, field: string): number | undefined {
  const raw = isRecord(body) ? body[field] : undefined;
  return typeof raw === 'number' && Number.isSafeInteger(raw) ? raw : undefined;
}

function parseReconcile(body: unknown): Reconcile | undefined {
  if (!isRecord(body) || typeof body.consistent !== 'boolean') return undefined;
  const drift = body.drift;
  const redisDrift = isRecord(drift) && drift.redis === null ? null : integerField(drift, 'redis');
  const dbDrift = integerField(drift, 'db');
  const inFlight = nonNegativeIntegerField(body, 'inFlight');
  if (redisDrift === undefined || dbDrift === undefined || inFlight === undefined) return undefined;
  return { consistent: body.consistent, redisDrift, dbDrift, inFlight };
}

async function fetchReconcile(
  baseUrl: string,
  adminToken: string,
  goodsId: number,
): Promise<Reconcile> {
  const response = await requestJson('GET', `${baseUrl}/api/v1/admin/goods/${goodsId}/reconcile`, {
    token: adminToken,
  });
  expectStatus('reconcile', response, 200);
  const reconcile = parseReconcile(response.body);
  if (reconcile === undefined)
    throw new DemoError(`reconcile: unexpected answer ${JSON.stringify(response.body)}`);
  return reconcile;
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
  const bar = startProgressBar(
    'buying [{bar}] {percentage}% | {value}/{total} requests | {duration}s',
    requests.length,
  );
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

const ORDER_STATUSES = ['PENDING_PAYMENT', 'PAID', 'CANCELLED'] as const;
type OrderStatus = (typeof ORDER_STATUSES)[number];

interface OrderRow extends RowDataPacket {
  order_no: string;
  user_id: number | string;
}

interface StatusCountRow extends RowDataPacket {
  status: string;
  n: number | string;
  q: number | string;
}

interface DeadlineRow extends RowDataPacket {
  deadline_ms: number | string | null;
}

interface OrderRef {
  orderNo: string;
  userId: number;
}

interface StatusCount {
  orders: number;
  quantity: number;
}

type StatusCounts = Record<OrderStatus, StatusCount>;

function isOrderStatus(value: string): value is OrderStatus {
  return (ORDER_STATUSES as readonly string[]).includes(value);
}

async function readOrders(db: Connection, goodsId: number): Promise<OrderRef[]> {
  const [rows] = await db.query<OrderRow[]>(
    'SELECT order_no, user_id FROM seckill_order WHERE goods_id = ? ORDER BY id',
    [goodsId],
  );
  return rows.map((row) => ({ orderNo: row.order_no, userId: Number(row.user_id) }));
}

async function countByStatus(db: Connection, goodsId: number): Promise<StatusCounts> {
  const [rows] = await db.query<StatusCountRow[]>(
    `SELECT status, COUNT(*) n, COALESCE(SUM(quantity),0) q
       FROM seckill_order WHERE goods_id = ? GROUP BY status`,
    [goodsId],
  );
  // Every status present, so that a status with no orders reads as 0 rather than missing.
  const counts: StatusCounts = {
    PENDING_PAYMENT: { orders: 0, quantity: 0 },
    PAID: { orders: 0, quantity: 0 },
    CANCELLED: { orders: 0, quantity: 0 },
  };
  for (const row of rows) {
    if (isOrderStatus(row.status)) {
      counts[row.status] = { orders: Number(row.n), quantity: Number(row.q) };
    }
  }
  return counts;
}

/**
 * The latest payment deadline among the goods' unpaid orders, in epoch ms (undefined when none
 * is unpaid). The server writes expire_at in UTC; the arithmetic is done on the DATETIME itself,
 * so that neither this connection's nor MySQL's time zone can shift it.
 */
async function readPaymentDeadline(db: Connection, goodsId: number): Promise<number | undefined> {
  const [rows] = await db.query<DeadlineRow[]>(
    `SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', MAX(expire_at)) DIV 1000 deadline_ms
       FROM seckill_order WHERE goods_id = ? AND status = 'PENDING_PAYMENT'`,
    [goodsId],
  );
  const raw = rows[0]?.deadline_ms;
  return raw === null || raw === undefined ? undefined : Number(raw);
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

// ---------------------------------------------------------------- payments and expiries

interface PayPhase {
  /** Orders of the goods in MySQL when the pays started. */
  orders: number;
  results: PurchaseResult[];
}

interface ExpiryPhase {
  /** Epoch ms of the last unpaid order's payment deadline; undefined when none was left unpaid. */
  deadline: number | undefined;
  settled: boolean;
  /** Epoch ms when no unpaid order was left, or when the wait gave up. */
  endedAt: number;
  timeoutSeconds: number;
}

function buildPayRequests(
  baseUrl: string,
  orders: readonly OrderRef[],
  buyers: number,
): PurchaseRequest[] {
  return orders.map((order) => {
    const index = order.userId - FIRST_BUYER_ID;
    if (!Number.isSafeInteger(index) || index < 0 || index >= buyers) {
      throw new DemoError(
        `order ${order.orderNo} belongs to user ${order.userId}, not one of the demo's buyers`,
      );
    }
    return {
      url: `${baseUrl}/api/v1/orders/${encodeURIComponent(order.orderNo)}/pay`,
      // The owner pays, from the address it bought from, as a buyer's own app would.
      headers: {
        authorization: `Bearer ${signToken({ userId: order.userId })}`,
        'x-forwarded-for': buyerAddress(index),
      },
    };
  });
}

async function runPays(
  db: Connection,
  baseUrl: string,
  goodsId: number,
  options: DemoOptions,
): Promise<PayPhase> {
  const orders = await readOrders(db, goodsId);
  const toPay = orders.slice(0, Math.round(orders.length * options.payShare));
  const requests = buildPayRequests(baseUrl, toPay, options.buyers);
  const bar = startProgressBar(
    'paying [{bar}] {percentage}% | {value}/{total} orders | {duration}s',
    requests.length,
  );
  // A pay is the same bodiless POST as a purchase, so the purchase sender serves for both.
  const results = await runWithConcurrency(requests, options.concurrency, sendPurchase, () =>
    bar.increment(),
  );
  bar.stop();
  return { orders: orders.length, results };
}

function countPaid(results: readonly PurchaseResult[]): number {
  return results.filter((result) => result.status === 200).length;
}

/** Pays that lost the race with the payment deadline: expected with a very short timeout. */
function countPaidTooLate(results: readonly PurchaseResult[]): number {
  return results.filter((result) => result.status === 409 && result.code === 'ORDER_CANCELLED')
    .length;
}

function deadlineClock(deadline: number | undefined, now: number): string {
  if (deadline === undefined) return 'no deadline';
  const seconds = (Math.abs(now - deadline) / 1000).toFixed(1);
  return now < deadline ? `deadline in ${seconds} s` : `deadline passed ${seconds} s ago`;
}

/** Polls MySQL until no order of the goods is left unpaid, or the timeout passes. */
async function waitForExpiry(
  db: Connection,
  goodsId: number,
  timeoutSeconds: number,
): Promise<ExpiryPhase> {
  // Wall-clock time, not performance.now(): the deadlines in MySQL come from the server's Date.now().
  const giveUpAt = Date.now() + timeoutSeconds * 1000;
  const deadline = await readPaymentDeadline(db, goodsId);
  let counts = await countByStatus(db, goodsId);
  const unpaid = counts.PENDING_PAYMENT.orders;
  const phase = { deadline, timeoutSeconds };
  if (unpaid === 0) return { ...phase, settled: true, endedAt: Date.now() };
  if (deadline !== undefined && deadline > giveUpAt) {
    console.warn(
      `warning: the last payment deadline is ${Math.ceil((deadline - Date.now()) / 1000)} s away, ` +
        `beyond the expiry timeout of ${timeoutSeconds} s (see --expiry-timeout)`,
    );
  }

  const bar = startProgressBar(
    'expiring [{bar}] {value}/{total} unpaid orders settled | {pending} pending | {clock}',
    unpaid,
    { pending: unpaid, clock: deadlineClock(deadline, Date.now()) },
  );
  try {
    for (;;) {
      const now = Date.now();
      const pending = counts.PENDING_PAYMENT.orders;
      bar.update(Math.max(0, unpaid - pending), { pending, clock: deadlineClock(deadline, now) });
      if (pending === 0) return { ...phase, settled: true, endedAt: now };
      if (now >= giveUpAt) return { ...phase, settled: false, endedAt: now };
      await sleep(EXPIRY_POLL_INTERVAL_MS);
      counts = await countByStatus(db, goodsId);
    }
  } finally {
    bar.stop();
  }
}

interface FinalState {
  counts: StatusCounts;
  stock: StockRow;
  redisRemaining: number | undefined;
  reconcile: Reconcile;
}

function redisCaughtUp(state: FinalState): boolean {
  const active = state.counts.PENDING_PAYMENT.quantity + state.counts.PAID.quantity;
  return (
    state.reconcile.consistent &&
    state.redisRemaining !== undefined &&
    state.redisRemaining + active === state.stock.total_stock
  );
}

/** Reads both stores and the reconcile route, again for a moment while Redis trails MySQL. */
async function readFinalState(
  db: Connection,
  baseUrl: string,
  adminToken: string,
  goodsId: number,
): Promise<FinalState> {
  for (let read = 1; ; read++) {
    const state: FinalState = {
      counts: await countByStatus(db, goodsId),
      stock: await readStock(db, goodsId),
      redisRemaining: await fetchRedisRemaining(baseUrl, goodsId),
      reconcile: await fetchReconcile(baseUrl, adminToken, goodsId),
    };
    if (redisCaughtUp(state) || read >= SETTLE_READS) return state;
    await sleep(SETTLE_PAUSE_MS);
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

interface LifecycleReport {
  /** Purchases answered 202 in the burst. */
  accepted: number;
  payShare: number;
  pays: PayPhase;
  expiry: ExpiryPhase;
  final: FinalState;
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

function newTable(title: string): InstanceType<typeof Table> {
  return new Table({
    head: [title, 'value'],
    colAligns: ['left', 'right'],
    // No colour codes when the report is redirected to a file or CI log.
    style: process.stdout.isTTY ? { compact: true } : { head: [], border: [], compact: true },
  });
}

function buildTable(report: Report): string {
  const { burst, drain, stock } = report;
  const latencies = burst.results.map((result) => result.latencyMs).sort((a, b) => a - b);
  const seconds = burst.elapsedMs / 1000;
  const table = newTable('metric');
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

function payFailureLabel(result: PurchaseResult): string {
  if (result.status === 0) return `pay failed: network error ${result.code ?? ''}`.trimEnd();
  return `pay failed: ${result.code ?? `HTTP ${result.status}`}`;
}

/** Pays answered neither 200 nor "too late", most frequent first. */
function payFailureRows(results: readonly PurchaseResult[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const result of results) {
    if (result.status === 200) continue;
    if (result.status === 409 && result.code === 'ORDER_CANCELLED') continue;
    const label = payFailureLabel(result);
    counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  return [...counts].sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
}

function expiryTime(expiry: ExpiryPhase): string {
  if (expiry.deadline === undefined) return 'n/a (none unpaid)';
  if (!expiry.settled) return `timed out (${expiry.timeoutSeconds})`;
  return ((expiry.endedAt - expiry.deadline) / 1000).toFixed(2);
}

function buildLifecycleTable(report: LifecycleReport): string {
  const { pays, expiry, final } = report;
  const { counts, stock, reconcile } = final;
  const table = newTable('after payments and expiries');
  table.push(
    [`pays sent (${Math.round(report.payShare * 100)}% of ${pays.orders})`, pays.results.length],
    ['paid (200)', countPaid(pays.results)],
    ['too late (409 ORDER_CANCELLED)', countPaidTooLate(pays.results)],
    ...payFailureRows(pays.results),
    ['orders paid', counts.PAID.orders],
    ['orders cancelled (expired)', counts.CANCELLED.orders],
    ['still pending', counts.PENDING_PAYMENT.orders],
    ['all expired, s after deadline', expiryTime(expiry)],
    ['MySQL stock', `${stock.stock} / ${stock.total_stock}`],
    ['Redis remaining', final.redisRemaining ?? 'n/a'],
    ['reconcile consistent', reconcile.consistent ? 'yes' : 'no'],
    ['drift redis / db', `${reconcile.redisDrift ?? 'n/a'} / ${reconcile.dbDrift}`],
    ['in flight', reconcile.inFlight],
  );
  return table.toString();
}

function evaluateLifecycleChecks(report: LifecycleReport): Check[] {
  const { counts, stock, redisRemaining, reconcile } = report.final;
  const successfulPays = countPaid(report.pays.results);
  const paid = counts.PAID.orders;
  const paidQuantity = counts.PAID.quantity;
  const pending = counts.PENDING_PAYMENT.orders;
  const cancelled = counts.CANCELLED.orders;
  const total = stock.total_stock;
  return [
    {
      name: 'paid orders == successful pays',
      ok: paid === successfulPays,
      detail: `${paid} paid in MySQL, ${successfulPays} pays answered 200`,
    },
    {
      name: 'no order left pending',
      ok: pending === 0,
      detail: `${pending} pending${report.expiry.settled ? '' : ` after ${report.expiry.timeoutSeconds} s`}`,
    },
    {
      name: 'cancelled == accepted - paid',
      ok: cancelled === report.accepted - paid,
      detail: `${cancelled} vs ${report.accepted} - ${paid}`,
    },
    {
      name: 'MySQL stock == total - paid',
      ok: stock.stock === total - paidQuantity,
      detail: `${stock.stock} vs ${total} - ${paidQuantity}`,
    },
    {
      name: 'Redis remaining == total - paid',
      ok: redisRemaining !== undefined && redisRemaining === total - paidQuantity,
      detail: `${redisRemaining ?? 'n/a'} vs ${total} - ${paidQuantity}`,
    },
    {
      name: 'reconcile consistent',
      ok: reconcile.consistent,
      detail: `drift redis ${reconcile.redisDrift ?? 'n/a'} / db ${reconcile.dbDrift}, ${reconcile.inFlight} in flight`,
    },
  ];
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

/** Pays a share of the orders, waits for the rest to expire, and reads where the stores ended up. */
async function runLifecycle(
  db: Connection,
  baseUrl: string,
  adminToken: string,
  goodsId: number,
  accepted: number,
  options: DemoOptions,
): Promise<LifecycleReport> {
  const pays = await runPays(db, baseUrl, goodsId, options);
  const tooLate = countPaidTooLate(pays.results);
  console.log(
    `pays done: ${countPaid(pays.results)} of ${pays.results.length} paid` +
      `${tooLate > 0 ? `, ${tooLate} too late (ORDER_CANCELLED)` : ''}; waiting for the unpaid orders to expire…`,
  );
  const expiry = await waitForExpiry(db, goodsId, options.expiryTimeoutSeconds);
  const final = await readFinalState(db, baseUrl, adminToken, goodsId);
  return { accepted, payShare: options.payShare, pays, expiry, final };
}

async function runDemo(options: DemoOptions): Promise<boolean> {
  if (options.url !== undefined) {
    console.log(
      `note: with --url the server's own ORDER_PAYMENT_TIMEOUT_MS applies (--payment-timeout is ` +
        `not used); the expiry phase waits up to ${options.expiryTimeoutSeconds} s (--expiry-timeout)`,
    );
  }
  const baseUrl =
    options.url ??
    (await launchServer(options.port, Math.round(options.paymentTimeoutSeconds * 1000)));
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
  const drainOk = printChecks(evaluateChecks(report));

  // Straight after the drain, so that the pays land well before the payment deadline.
  const lifecycle = await runLifecycle(db, baseUrl, adminToken, goodsId, accepted, options);
  console.log(buildLifecycleTable(lifecycle));
  // Both lists are printed whatever the first one says.
  const lifecycleOk = printChecks(evaluateLifecycleChecks(lifecycle));
  return drainOk && lifecycleOk;
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
