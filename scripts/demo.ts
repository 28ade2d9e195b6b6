// End-to-end flash-sale demo: starts the server (unless --url), creates and preheats one goods,
// fires a burst of concurrent purchases from many distinct users, waits for the queue to drain
// into MySQL, and checks the stock invariants. Then it follows the orders' lifecycle: pays a
// share of them as their owners, waits for the rest to pass their payment deadline and be
// cancelled (which gives their stock back), and checks the stores again, through the admin
// reconcile route too. The payments go through a fake payment provider's signed webhooks (some
// events twice, some out of order, a few after the deadline) and every order event is received
// by a fake shop (scripts/fake-provider/). Exit code 1 when any invariant is broken.
//
// The parts live in scripts/demo/ (options, the server's routes, MySQL reads, the phases, the
// report) and scripts/lib/ (server process, load, cleanup), shared with the bench.
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Connection } from 'mysql2/promise';

import { createDemoGoods, fetchRedisRemaining } from './demo/api.js';
import { parseOptions, USAGE, type DemoOptions } from './demo/options.js';
import { screenshotDashboard } from './demo/screenshot.js';
import {
  countPaid,
  countPaidTooLate,
  readFinalState,
  runBurst,
  runPays,
  waitForExpiry,
  type PayPhase,
} from './demo/phases.js';
import {
  buildLifecycleTable,
  buildTable,
  countAccepted,
  evaluateChecks,
  evaluateLifecycleChecks,
  printChecks,
  type LifecycleReport,
  type Report,
  type StoreReport,
} from './demo/report.js';
import {
  connectMysql,
  countByStatus,
  readDuplicateBuyers,
  readOrders,
  readStock,
  waitForDrain,
} from './demo/store.js';
import { buildQueueTable, evaluateQueueChecks, queueFigures } from './demo/queue-report.js';
import { findBoughtWithoutAdmission, runOpenComparison, runQueueSale } from './demo/queue-sale.js';
import { buildDrawTable, evaluateDrawChecks, runDrawSale } from './demo/draw-sale.js';
import { onCleanup } from './lib/cleanup.js';
import { ScriptError } from './lib/errors.js';
import { loadDotEnv, signToken } from './lib/jwt.js';
import { runScript } from './lib/main.js';
import { preheatGoods } from './lib/sale.js';
import { findFreePort, startServer, stopServer, waitForReady } from './lib/server-process.js';
import type { MerchantReceiver } from './fake-provider/merchant-receiver.js';
import { FakeProvider } from './fake-provider/provider.js';
import {
  demoSecrets,
  payLate,
  paymentsPhase,
  payThroughProvider,
  startMerchant,
  waitForMerchant,
  type DemoSecrets,
} from './demo/payments.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVER_LOG_PATH = join(tmpdir(), 'demo-server.log');
const ADMIN_USER_ID = 1;
// Late enough for the burst to sit inside the dashboard's chart (it shows seconds two seconds
// late), early enough to come before the demo's 10 s payment timeout.
const SCREENSHOT_AFTER_BURST_MS = 6_000;
/** The share of the accepted orders whose payment the provider sends after their deadline. */
const LATE_SHARE = 0.05;

/** The fake provider and shop of a server the demo started (or null: the owners pay). */
interface Payments {
  secrets: DemoSecrets;
  receiver: MerchantReceiver;
}

async function launchServer(
  requestedPort: number | undefined,
  paymentTimeoutMs: number,
  payments: Payments,
): Promise<string> {
  const port = requestedPort ?? (await findFreePort());
  console.log(
    `starting server on port ${port} (payment timeout ${paymentTimeoutMs / 1000} s), log: ${SERVER_LOG_PATH}`,
  );
  const entry = join(REPO_ROOT, 'dist', 'main.js');
  if (!existsSync(entry)) throw new ScriptError(`${entry} not found: run \`npm run build\` first`);
  const server = startServer({
    args: [entry],
    cwd: REPO_ROOT,
    port,
    logPath: SERVER_LOG_PATH,
    env: {
      ...process.env,
      // The buyers' X-Forwarded-For must be believed, or they would all share 127.0.0.1's rate limit.
      TRUSTED_PROXIES: '127.0.0.1,::1',
      // Short, so that the expiry phase sees the unpaid orders cancelled within the run.
      ORDER_PAYMENT_TIMEOUT_MS: String(paymentTimeoutMs),
      // The fake provider signs with this; the fake shop receives the order events.
      PAYMENT_WEBHOOK_SECRET: payments.secrets.payment,
      MERCHANT_WEBHOOK_URL: payments.receiver.url,
      MERCHANT_WEBHOOK_SECRET: payments.secrets.merchant,
    },
  });
  onCleanup(() => stopServer(server));
  await waitForReady(server);
  console.log('server ready');
  return server.baseUrl;
}

/** Pays a share of the orders, waits for the rest to expire, and reads where the stores ended up. */
async function runLifecycle(
  db: Connection,
  baseUrl: string,
  adminToken: string,
  goodsId: number,
  accepted: number,
  burstDoneAt: number,
  options: DemoOptions,
  payments: Payments | null,
): Promise<LifecycleReport> {
  const provider = payments
    ? new FakeProvider({ baseUrl, secret: payments.secrets.payment })
    : null;
  let pays: PayPhase;
  let onTime = 0;
  if (provider) {
    const paid = await payThroughProvider(
      provider,
      db,
      goodsId,
      options.payShare,
      options.concurrency,
    );
    pays = { orders: paid.orders, results: [] };
    onTime = paid.paid.length;
  } else {
    pays = await runPays(db, baseUrl, goodsId, options);
  }
  if (options.screenshot !== undefined) {
    await screenshotDashboard({
      baseUrl,
      adminToken,
      goodsId,
      sold: accepted,
      notBefore: burstDoneAt + SCREENSHOT_AFTER_BURST_MS,
      path: options.screenshot,
    });
  }
  const tooLate = countPaidTooLate(pays.results);
  console.log(
    provider
      ? `provider payments sent for ${onTime} orders; waiting for the unpaid orders to expire…`
      : `pays done: ${countPaid(pays.results)} of ${pays.results.length} paid` +
          `${tooLate > 0 ? `, ${tooLate} too late (ORDER_CANCELLED)` : ''}; waiting for the unpaid orders to expire…`,
  );
  const expiry = await waitForExpiry(db, goodsId, options.expiryTimeoutSeconds);
  if (!provider || !payments) {
    const final = await readFinalState(db, baseUrl, adminToken, goodsId);
    return { accepted, payShare: options.payShare, pays, expiry, final };
  }
  // A few payments land after their deadline cancelled the order: each takes its unit again.
  const lateOrders = await payLate(
    provider,
    db,
    goodsId,
    Math.max(1, Math.round(accepted * LATE_SHARE)),
  );
  console.log(
    `${lateOrders.length} late payments sent; waiting for the shop to hear every order event…`,
  );
  const merchant = await waitForMerchant(db, payments.receiver, goodsId);
  const final = await readFinalState(db, baseUrl, adminToken, goodsId);
  return {
    accepted,
    payShare: options.payShare,
    pays,
    payments: paymentsPhase(provider, onTime, lateOrders),
    merchant,
    expiry,
    final,
  };
}

/**
 * --queue: the queue sale and the open sale beside it (scripts/demo/queue-sale.ts), the stores
 * checked as after the burst, then the queue sale's orders paid and expired the same way.
 */
async function runQueueDemo(
  db: Connection,
  baseUrl: string,
  adminToken: string,
  options: DemoOptions,
  payments: Payments | null,
): Promise<boolean> {
  const run = await runQueueSale(baseUrl, adminToken, options);
  const saleEndedAt = performance.now();
  const accepted = run.accepted.size;
  console.log(`queue sale done: ${accepted} accepted; waiting for orders to reach MySQL…`);
  const drain = await waitForDrain(
    db,
    run.goodsId,
    accepted,
    saleEndedAt,
    options.drainTimeoutSeconds,
  );
  const buyers = (await readOrders(db, run.goodsId)).map((order) => order.userId);
  run.boughtWithoutAdmission = await findBoughtWithoutAdmission(baseUrl, run.goodsId, buyers);
  console.log('the same crowd on an open sale…');
  run.open = await runOpenComparison(baseUrl, adminToken, run);
  const stores: StoreReport = {
    accepted,
    drain,
    stock: await readStock(db, run.goodsId),
    duplicateBuyers: await readDuplicateBuyers(db, run.goodsId),
    redisRemaining: await fetchRedisRemaining(baseUrl, run.goodsId),
  };
  const figures = queueFigures(run);
  console.log(buildQueueTable(run, figures));
  const salesOk = printChecks([...evaluateChecks(stores), ...evaluateQueueChecks(run, figures)]);

  const lifecycle = await runLifecycle(
    db,
    baseUrl,
    adminToken,
    run.goodsId,
    accepted,
    performance.now(),
    options,
    payments,
  );
  console.log(buildLifecycleTable(lifecycle));
  const lifecycleOk = printChecks(evaluateLifecycleChecks(lifecycle));
  return salesOk && lifecycleOk;
}

/**
 * --draw: the draw sale (scripts/demo/draw-sale.ts), the stores checked as after the burst, its
 * promises (no purchase without a right, rights in draw order, the draw verified from outside).
 */
async function runDrawDemo(
  db: Connection,
  baseUrl: string,
  adminToken: string,
  options: DemoOptions,
): Promise<boolean> {
  console.log(`watch it live: ${baseUrl}/dashboard#token=${adminToken}`);
  const run = await runDrawSale(baseUrl, adminToken, options);
  const accepted = run.accepted.size;
  console.log(`draw sale done: ${accepted} accepted; waiting for orders to reach MySQL…`);
  const stores: StoreReport = {
    accepted,
    drain: await waitForDrain(
      db,
      run.goodsId,
      accepted,
      performance.now(),
      options.drainTimeoutSeconds,
    ),
    stock: await readStock(db, run.goodsId),
    duplicateBuyers: await readDuplicateBuyers(db, run.goodsId),
    redisRemaining: await fetchRedisRemaining(baseUrl, run.goodsId),
  };
  console.log(buildDrawTable(run));
  const unitsBack = (await countByStatus(db, run.goodsId)).CANCELLED.quantity;
  return printChecks([...evaluateChecks(stores), ...evaluateDrawChecks(run, unitsBack)]);
}

async function runDemo(options: DemoOptions): Promise<boolean> {
  if (options.url !== undefined) {
    console.log(
      `note: with --url the server's own ORDER_PAYMENT_TIMEOUT_MS applies (--payment-timeout is ` +
        `not used); the expiry phase waits up to ${options.expiryTimeoutSeconds} s (--expiry-timeout)`,
    );
  }
  // A server of its own gets a provider secret and a shop of the demo's; on one given by --url
  // (whose secrets the demo does not know) the owners pay through their pay route.
  const secrets = demoSecrets();
  const payments: Payments | null =
    options.url === undefined ? { secrets, receiver: await startMerchant(secrets.merchant) } : null;
  const baseUrl =
    options.url ??
    (await launchServer(options.port, Math.round(options.paymentTimeoutSeconds * 1000), payments!));
  const adminToken = signToken({ userId: ADMIN_USER_ID, admin: true });
  if (options.queue) {
    return runQueueDemo(await connectMysql(), baseUrl, adminToken, options, payments);
  }
  if (options.draw) return runDrawDemo(await connectMysql(), baseUrl, adminToken, options);
  const goodsId = await createDemoGoods(baseUrl, adminToken, options.stock);
  await preheatGoods(baseUrl, adminToken, goodsId);
  console.log(
    `goods ${goodsId}: ${options.stock} units, ${options.buyers} buyers × ${options.clicks} clicks`,
  );
  // The fragment never reaches the server; the page keeps the token in its tab only.
  console.log(`watch it live: ${baseUrl}/dashboard#token=${adminToken}`);

  // Connect before the burst, so a bad DATABASE_URL fails fast and the drain clock measures only the queue.
  const db = await connectMysql();
  const burst = await runBurst(baseUrl, goodsId, options);
  const burstDoneAt = Date.now();
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
    accepted,
    drain,
    stock: await readStock(db, goodsId),
    duplicateBuyers: await readDuplicateBuyers(db, goodsId),
    redisRemaining: await fetchRedisRemaining(baseUrl, goodsId),
  };
  console.log(buildTable(report));
  const drainOk = printChecks(evaluateChecks(report));

  // Straight after the drain, so that the pays land well before the payment deadline.
  const lifecycle = await runLifecycle(
    db,
    baseUrl,
    adminToken,
    goodsId,
    accepted,
    burstDoneAt,
    options,
    payments,
  );
  console.log(buildLifecycleTable(lifecycle));
  // Both lists are printed whatever the first one says.
  const lifecycleOk = printChecks(evaluateLifecycleChecks(lifecycle));
  return drainOk && lifecycleOk;
}

loadDotEnv();
await runScript(parseOptions, USAGE, runDemo);
