// The demo's report: the tables it prints and the invariants it checks.
import Table from 'cli-table3';

import { percentile } from '../lib/stats.js';
import {
  countPaid,
  countPaidTooLate,
  type BurstResult,
  type ExpiryPhase,
  type FinalState,
  type PayPhase,
  type PurchaseResult,
} from './phases.js';
import { paymentChecks, paymentRows, type MerchantPhase, type PaymentsPhase } from './payments.js';
import type { DrainResult, StockRow } from './store.js';

/** Where the stores stand once the accepted purchases are written. */
export interface StoreReport {
  /** Purchases answered 202. */
  accepted: number;
  drain: DrainResult;
  stock: StockRow;
  duplicateBuyers: number[];
  redisRemaining: number | undefined;
}

export interface Report extends StoreReport {
  burst: BurstResult;
}

export interface LifecycleReport {
  /** Purchases answered 202 in the burst. */
  accepted: number;
  payShare: number;
  /** The owners' pay route (a server the demo cannot give a provider secret); else empty. */
  pays: PayPhase;
  /** The provider's webhooks, when the demo pays through it. */
  payments?: PaymentsPhase;
  /** The shop's side of the order events, when the demo started the server. */
  merchant?: MerchantPhase;
  expiry: ExpiryPhase;
  final: FinalState;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export function outcomeLabel(result: PurchaseResult): string {
  if (result.status === 202) return 'accepted (202)';
  if (result.status === 0) return `other: network error ${result.code ?? ''}`.trimEnd();
  if (result.status >= 400 && result.code !== undefined) return `rejected: ${result.code}`;
  return `other: HTTP ${result.status}`;
}

/** Rejections first (most frequent first), then anything unexpected. */
export function outcomeRows(results: readonly PurchaseResult[]): [string, number][] {
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

export function countAccepted(results: readonly PurchaseResult[]): number {
  return results.filter((result) => result.status === 202).length;
}

export function oversold(report: StoreReport): number {
  return Math.max(0, report.drain.counts.activeQuantity - report.stock.total_stock);
}

export function newTable(title: string): InstanceType<typeof Table> {
  return new Table({
    head: [title, 'value'],
    colAligns: ['left', 'right'],
    // No colour codes when the report is redirected to a file or CI log.
    style: process.stdout.isTTY ? { compact: true } : { head: [], border: [], compact: true },
  });
}

export function buildTable(report: Report): string {
  const { burst, drain, stock } = report;
  const latencies = burst.results.map((result) => result.latencyMs).sort((a, b) => a - b);
  const seconds = burst.elapsedMs / 1000;
  const table = newTable('metric');
  table.push(
    ['requests', burst.results.length],
    ['accepted (202)', report.accepted],
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

export function payFailureLabel(result: PurchaseResult): string {
  if (result.status === 0) return `pay failed: network error ${result.code ?? ''}`.trimEnd();
  return `pay failed: ${result.code ?? `HTTP ${result.status}`}`;
}

/** Pays answered neither 200 nor "too late", most frequent first. */
export function payFailureRows(results: readonly PurchaseResult[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const result of results) {
    if (result.status === 200) continue;
    if (result.status === 409 && result.code === 'ORDER_CANCELLED') continue;
    const label = payFailureLabel(result);
    counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  return [...counts].sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
}

export function expiryTime(expiry: ExpiryPhase): string {
  if (expiry.deadline === undefined) return 'n/a (none unpaid)';
  if (!expiry.settled) return `timed out (${expiry.timeoutSeconds})`;
  return ((expiry.endedAt - expiry.deadline) / 1000).toFixed(2);
}

export function buildLifecycleTable(report: LifecycleReport): string {
  const { pays, expiry, final } = report;
  const { counts, stock, reconcile } = final;
  const table = newTable('after payments and expiries');
  if (report.payments) {
    table.push(...paymentRows(report.payments, report.merchant));
  } else {
    table.push(
      [`pays sent (${Math.round(report.payShare * 100)}% of ${pays.orders})`, pays.results.length],
      ['paid (200)', countPaid(pays.results)],
      ['too late (409 ORDER_CANCELLED)', countPaidTooLate(pays.results)],
      ...payFailureRows(pays.results),
    );
  }
  table.push(
    ['orders paid', counts.PAID.orders],
    ['orders cancelled (expired)', counts.CANCELLED.orders],
    ['orders to refund (paid late, none left)', counts.REFUND_REQUIRED.orders],
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

export function evaluateLifecycleChecks(report: LifecycleReport): Check[] {
  const { counts, stock, redisRemaining, reconcile } = report.final;
  const successfulPays = countPaid(report.pays.results);
  const paid = counts.PAID.orders;
  const paidQuantity = counts.PAID.quantity;
  const pending = counts.PENDING_PAYMENT.orders;
  const cancelled = counts.CANCELLED.orders;
  const refunds = counts.REFUND_REQUIRED.orders;
  const total = stock.total_stock;
  const payChecks: Check[] = report.payments
    ? paymentChecks(report.payments, report.merchant, paid, refunds)
    : [
        {
          name: 'paid orders == successful pays',
          ok: paid === successfulPays,
          detail: `${paid} paid in MySQL, ${successfulPays} pays answered 200`,
        },
      ];
  return [
    ...payChecks,
    {
      name: 'no order left pending',
      ok: pending === 0,
      detail: `${pending} pending${report.expiry.settled ? '' : ` after ${report.expiry.timeoutSeconds} s`}`,
    },
    {
      name: 'cancelled == accepted - paid - to refund',
      ok: cancelled === report.accepted - paid - refunds,
      detail: `${cancelled} vs ${report.accepted} - ${paid} - ${refunds}`,
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

export function evaluateChecks(report: StoreReport): Check[] {
  const { drain, stock, accepted } = report;
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

export function printChecks(checks: readonly Check[]): boolean {
  for (const check of checks) {
    console.log(`${check.ok ? 'OK    ' : 'BROKEN'}  ${check.name}: ${check.detail}`);
  }
  return checks.every((check) => check.ok);
}
