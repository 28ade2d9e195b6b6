import { appendFileSync } from 'node:fs';
import type { Stores } from './harness.js';

/** One fault scenario's outcome, as `npm run chaos` prints it. */
export interface ChaosRow {
  scenario: string;
  fault: string;
  requests: number;
  accepted: number;
  orders: number;
  lost: number;
  duplicated: number;
  recoveredSeconds: number | null;
}

/**
 * Counts, from the stores themselves, what a fault did to a sale: accepted purchases (202s)
 * without an order are lost; a request id or a user with two active orders is duplicated.
 * Written to CHAOS_REPORT (JSON lines) when `npm run chaos` runs the fault tests; a no-op in a
 * plain `npm test`.
 */
export async function recordChaos(
  stores: Stores,
  row: Omit<ChaosRow, 'orders' | 'lost' | 'duplicated'> & { goodsId: number },
): Promise<ChaosRow> {
  const orders = await stores.orders(row.goodsId);
  const distinctRequests = new Set(orders.map((order) => order.request_id)).size;
  const active = orders.filter((order) => order.status !== 'CANCELLED');
  const distinctActiveUsers = new Set(active.map((order) => order.user_id)).size;
  const result: ChaosRow = {
    scenario: row.scenario,
    fault: row.fault,
    requests: row.requests,
    accepted: row.accepted,
    recoveredSeconds: row.recoveredSeconds,
    orders: orders.length,
    lost: Math.max(0, row.accepted - orders.length),
    duplicated: orders.length - distinctRequests + (active.length - distinctActiveUsers),
  };
  const file = process.env.CHAOS_REPORT;
  if (file) appendFileSync(file, `${JSON.stringify(result)}\n`);
  return result;
}

export const secondsSince = (startMs: number) => Math.round((Date.now() - startMs) / 100) / 10;
