// After the nemesis: how long each sale took to answer purchases again, and the wait until the
// sales are quiet (nothing queued, nothing in flight, every order paid or cancelled).
import { setTimeout as sleep } from 'node:timers/promises';

import type { Reopen, StoreSnapshot } from './checker.js';
import type { HistoryEntry } from './history.js';
import { stillMoving, unitsLeft, type Stores } from './snapshot.js';
import type { Endpoint, Sale, Workload } from './workload.js';

/** The bound stated for liveness: every sale answers again within this of the heal. */
export const REOPEN_BOUND_MS = 60_000;
const PROBE_EVERY_MS = 500;
const QUIET_TIMEOUT_MS = 180_000;
const QUIET_POLL_MS = 1_000;
/** Consecutive quiet readings: one could fall between a message's ack and its next step. */
const QUIET_READINGS = 3;

/**
 * A decided answer: the sale itself spoke (sold, sold out, or a queue sale's refusal of a buyer
 * its waiting room has not admitted, a draw sale's of one without a right), not a closed or
 * unreachable one.
 */
export function decided(entry: HistoryEntry): boolean {
  if (entry.status === 202) return true;
  if (entry.status === 403) return entry.code === 'NOT_ADMITTED' || entry.code === 'NOT_SELECTED';
  return entry.status === 409 && entry.code !== 'NOT_PREHEATED';
}

/** Probes every sale on every serving instance, each with fresh buyers, until it is decided. */
export async function measureReopen(
  workload: Workload,
  sales: readonly Sale[],
  endpoints: readonly Endpoint[],
  now: () => number,
  healedAt: number,
): Promise<Reopen[]> {
  const probe = async (sale: Sale, endpoint: Endpoint): Promise<Reopen> => {
    let answer = 'none';
    while (now() - healedAt <= REOPEN_BOUND_MS) {
      const entry = await workload.probe(sale, endpoint);
      answer = `${entry.status || 'no answer'} ${entry.code ?? ''}`.trim();
      if (decided(entry)) {
        return {
          goodsId: sale.goodsId,
          instance: endpoint.name,
          ms: Math.round(entry.answeredMs - healedAt),
          answer,
        };
      }
      await sleep(PROBE_EVERY_MS);
    }
    return { goodsId: sale.goodsId, instance: endpoint.name, ms: null, answer };
  };
  return Promise.all(sales.flatMap((sale) => endpoints.map((endpoint) => probe(sale, endpoint))));
}

/**
 * Once quiet: every open sale that both stores say still has units is bought from once on each
 * serving instance, one after the other (each reading the units again), by buyers of their own.
 * A sale with units must sell them: no-undersell judges the answers. Queue sales sell only to
 * whom they admit and are left out; so are sales past their end. Returns the probes made.
 */
export async function probeUndersell(
  workload: Workload,
  stores: Stores,
  sales: readonly Sale[],
  endpoints: readonly Endpoint[],
  untilMs: number,
  now: () => number,
): Promise<number> {
  let probes = 0;
  for (const sale of sales.filter((s) => !s.queue)) {
    for (const endpoint of endpoints) {
      if (Date.now() >= sale.endAtEpochMs - UNDERSELL_END_MARGIN_MS || now() >= untilMs) break;
      const units = await within(
        unitsLeft(stores, sale),
        READING_BOUND_MS,
        `the units left of ${sale.name}`,
      );
      if (units.redisStock === null || units.redisStock <= 0 || units.mysqlStock <= 0) break;
      await workload.undersellProbe(
        sale,
        endpoint,
        { mysqlStock: units.mysqlStock, redisStock: units.redisStock },
        untilMs,
      );
      probes++;
    }
  }
  return probes;
}

/**
 * The reads after the quiet (the results of unknown outcomes, the under-sell probes) start no new
 * try past this: instances that answer nothing (sales-reopen and instances-keep-up say so) would
 * otherwise hold the run for as long as every try's timeout, hundreds of them.
 */
export const AFTER_QUIET_BUDGET_MS = 120_000;

/** A sale this close to its end is not probed for under-selling: the end may refuse the probe. */
const UNDERSELL_END_MARGIN_MS = 30_000;

/**
 * One reading of the stores gives up after this: a client stuck on a store that answers nothing
 * (a cluster client's offline queue, a socket gone silent) fails the reading instead of holding
 * the run, which then reports what it saw.
 */
export const READING_BOUND_MS = 30_000;

/** The promise's value, or an error naming `what` once `ms` passed without one. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until nothing moves for a few readings in a row, or gives up after a while. */
export async function waitQuiet(
  stores: Stores,
  sales: readonly Sale[],
): Promise<StoreSnapshot['quiet']> {
  const started = Date.now();
  let quietReadings = 0;
  let last = 'not read yet';
  while (Date.now() - started < QUIET_TIMEOUT_MS) {
    const moving = await within(stillMoving(stores, sales), READING_BOUND_MS, 'the stores').catch(
      (error: unknown) => [
        `could not read the stores: ${error instanceof Error ? error.message : String(error)}`,
      ],
    );
    last = moving.length === 0 ? 'quiet' : moving.join(', ');
    quietReadings = moving.length === 0 ? quietReadings + 1 : 0;
    if (quietReadings >= QUIET_READINGS) {
      return { reached: true, waitedMs: Date.now() - started, last };
    }
    await sleep(QUIET_POLL_MS);
  }
  return { reached: false, waitedMs: Date.now() - started, last };
}
