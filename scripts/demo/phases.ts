// The demo's phases against the server: the purchase burst, the pays, the wait for the expiries,
// and the final reading of both stores.
import { setTimeout as sleep } from 'node:timers/promises';

import type { Connection } from 'mysql2/promise';

import { startProgressBar } from '../lib/cleanup.js';
import { signToken } from '../lib/jwt.js';
import { buyerAddress, runLoad, type LoadRequest, type LoadResult } from '../lib/load.js';
import { fetchReconcile, fetchRedisRemaining, type Reconcile } from './api.js';
import { DemoError, type DemoOptions } from './options.js';
import {
  countByStatus,
  readOrders,
  readPaymentDeadline,
  readStock,
  type OrderRef,
  type StatusCounts,
  type StockRow,
} from './store.js';

export const FIRST_BUYER_ID = 1_000_000;
// Slower than the drain poll: expiries take seconds, and each poll is two queries.
const EXPIRY_POLL_INTERVAL_MS = 200;
// Redis gets a cancelled order's stock back just after the MySQL commit, so a final reading taken
// right as the last order expires can be a moment early: it is read again before it counts as drift.
const SETTLE_READS = 5;
const SETTLE_PAUSE_MS = 200;

export type PurchaseResult = LoadResult;

export interface BurstResult {
  results: PurchaseResult[];
  elapsedMs: number;
  endedAt: number;
}

export interface PayPhase {
  /** Orders of the goods in MySQL when the pays started. */
  orders: number;
  results: PurchaseResult[];
}

export interface ExpiryPhase {
  /** Epoch ms of the last unpaid order's payment deadline; undefined when none was left unpaid. */
  deadline: number | undefined;
  settled: boolean;
  /** Epoch ms when no unpaid order was left, or when the wait gave up. */
  endedAt: number;
  timeoutSeconds: number;
}

/** The server's origin for the pool, and the path it may be mounted under (from --url). */
function splitBaseUrl(baseUrl: string): { origin: string; prefix: string } {
  const url = new URL(baseUrl);
  return { origin: url.origin, prefix: url.pathname.replace(/\/+$/, '') };
}

async function sendAll(
  baseUrl: string,
  requests: readonly LoadRequest[],
  concurrency: number,
  onDone: () => void,
) {
  const { origin, prefix } = splitBaseUrl(baseUrl);
  if (requests.length === 0) return { results: [], elapsedMs: 0, endedAt: performance.now() };
  const run = await runLoad({
    origin,
    connections: Math.min(concurrency, requests.length),
    next: (index) => {
      const request = requests[index];
      return request && { ...request, path: prefix + request.path };
    },
    onResult: onDone,
  });
  return { results: run.results, elapsedMs: run.elapsedMs, endedAt: run.endedAt };
}

/** Every buyer's id is FIRST_BUYER_ID + its index: the people first, then a queue sale's scripts. */
export function buyerCount(options: DemoOptions): number {
  return options.buyers + (options.queue ? options.scripts : 0);
}

/** Buyer-major order, so a buyer's clicks sit next to each other in the queue and are in flight together. */
function buildPurchaseRequests(goodsId: number, options: DemoOptions): LoadRequest[] {
  // No body and no content-type: the contract allows an empty body, and an empty JSON body would be a 400.
  const path = `/api/v1/seckill/${goodsId}`;
  const requests: LoadRequest[] = [];
  for (let i = 0; i < options.buyers; i++) {
    const headers = {
      authorization: `Bearer ${signToken({ userId: FIRST_BUYER_ID + i })}`,
      'x-forwarded-for': buyerAddress(i),
    };
    for (let click = 0; click < options.clicks; click++) {
      requests.push({ method: 'POST', path, headers });
    }
  }
  return requests;
}

export async function runBurst(
  baseUrl: string,
  goodsId: number,
  options: DemoOptions,
): Promise<BurstResult> {
  const requests = buildPurchaseRequests(goodsId, options);
  const bar = startProgressBar(
    'buying [{bar}] {percentage}% | {value}/{total} requests | {duration}s',
    requests.length,
  );
  const burst = await sendAll(baseUrl, requests, options.concurrency, () => bar.increment());
  bar.stop();
  return burst;
}

function buildPayRequests(orders: readonly OrderRef[], buyers: number): LoadRequest[] {
  return orders.map((order) => {
    const index = order.userId - FIRST_BUYER_ID;
    if (!Number.isSafeInteger(index) || index < 0 || index >= buyers) {
      throw new DemoError(
        `order ${order.orderNo} belongs to user ${order.userId}, not one of the demo's buyers`,
      );
    }
    return {
      method: 'POST',
      path: `/api/v1/orders/${encodeURIComponent(order.orderNo)}/pay`,
      // The owner pays, from the address it bought from, as a buyer's own app would.
      headers: {
        authorization: `Bearer ${signToken({ userId: order.userId })}`,
        'x-forwarded-for': buyerAddress(index),
      },
    };
  });
}

export async function runPays(
  db: Connection,
  baseUrl: string,
  goodsId: number,
  options: DemoOptions,
): Promise<PayPhase> {
  const orders = await readOrders(db, goodsId);
  const toPay = orders.slice(0, Math.round(orders.length * options.payShare));
  const requests = buildPayRequests(toPay, buyerCount(options));
  const bar = startProgressBar(
    'paying [{bar}] {percentage}% | {value}/{total} orders | {duration}s',
    requests.length,
  );
  const { results } = await sendAll(baseUrl, requests, options.concurrency, () => bar.increment());
  bar.stop();
  return { orders: orders.length, results };
}

export function countPaid(results: readonly PurchaseResult[]): number {
  return results.filter((result) => result.status === 200).length;
}

/** Pays that lost the race with the payment deadline: expected with a very short timeout. */
export function countPaidTooLate(results: readonly PurchaseResult[]): number {
  return results.filter((result) => result.status === 409 && result.code === 'ORDER_CANCELLED')
    .length;
}

export function deadlineClock(deadline: number | undefined, now: number): string {
  if (deadline === undefined) return 'no deadline';
  const seconds = (Math.abs(now - deadline) / 1000).toFixed(1);
  return now < deadline ? `deadline in ${seconds} s` : `deadline passed ${seconds} s ago`;
}

/** Polls MySQL until no order of the goods is left unpaid, or the timeout passes. */
export async function waitForExpiry(
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

export interface FinalState {
  counts: StatusCounts;
  stock: StockRow;
  redisRemaining: number | undefined;
  reconcile: Reconcile;
}

export function redisCaughtUp(state: FinalState): boolean {
  const active = state.counts.PENDING_PAYMENT.quantity + state.counts.PAID.quantity;
  return (
    state.reconcile.consistent &&
    state.redisRemaining !== undefined &&
    state.redisRemaining + active === state.stock.total_stock
  );
}

/** Reads both stores and the reconcile route, again for a moment while Redis trails MySQL. */
export async function readFinalState(
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
