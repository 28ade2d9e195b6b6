// What a person reads after a run: the same summary on the terminal and in report.html (one
// self-contained page, like the bench's: the charts are inline SVG).
import Table from 'cli-table3';

import { htmlPage, htmlTable } from '../../bench/lib/report.js';
import { escapeXml, lineChart, type Band, type Series } from '../../bench/lib/svg.js';
import type { CheckReport, Reopen, Violation } from './checker.js';
import type { HistoryEntry } from './history.js';
import type { NemesisEvent, Schedule } from './nemesis.js';
import type { SystemEvent } from './system.js';

export interface RunRecord {
  seed: number;
  schedule: Schedule;
  startedAt: string;
  commit: string;
  /** From the first request to the end of the check. */
  elapsedMs: number;
  replay: string;
  history: readonly HistoryEntry[];
  nemesis: readonly NemesisEvent[];
  system: readonly SystemEvent[];
  reopens: readonly Reopen[];
  reopenBoundMs: number;
  quietAfterMs: number;
  check: CheckReport;
}

/** A fault as it was actually played: from its inject to its heal (or its inject alone). */
interface Span {
  faultId: number;
  what: string;
  from: number;
  to: number;
  error?: string;
}

const AROUND_MS = 3_000;
const CLASSES = [
  ['202', '#16a34a'],
  ['409', '#2563eb'],
  ['429', '#a855f7'],
  ['503', '#ea580c'],
  ['other', '#64748b'],
  ['no answer', '#dc2626'],
] as const;

export function spans(events: readonly NemesisEvent[]): Span[] {
  const byFault = new Map<number, Span>();
  for (const event of events) {
    const span = byFault.get(event.faultId) ?? {
      faultId: event.faultId,
      what: event.what,
      from: event.atMs,
      to: event.atMs,
    };
    if (event.phase === 'inject') span.from = event.atMs;
    else span.to = event.atMs;
    if (event.error) span.error = `${event.phase}: ${event.error}`;
    span.to = Math.max(span.to, span.from);
    byFault.set(event.faultId, span);
  }
  return [...byFault.values()].sort((a, b) => a.from - b.from);
}

/** The faults held within a few seconds of `atMs`. */
function around(all: readonly Span[], atMs: number | undefined): string {
  if (atMs === undefined) return 'end state';
  const near = all.filter((s) => s.from - AROUND_MS <= atMs && atMs <= s.to + AROUND_MS);
  return near.length === 0 ? 'none' : near.map((s) => `#${s.faultId} ${s.what}`).join(', ');
}

function answerClass(entry: HistoryEntry): (typeof CLASSES)[number][0] {
  if (entry.status === 0) return 'no answer';
  const status = String(entry.status);
  return CLASSES.some(([name]) => name === status) ? (status as '202') : 'other';
}

function answersChart(record: RunRecord, all: readonly Span[]): string {
  const purchases = record.history.filter((entry) => entry.op === 'purchase');
  const seconds = Math.ceil(Math.max(1, ...purchases.map((e) => e.answeredMs)) / 1000);
  const series: Series[] = CLASSES.map(([name, color]) => {
    const counts = new Array<number>(seconds + 1).fill(0);
    for (const entry of purchases) {
      if (answerClass(entry) === name) counts[Math.floor(entry.answeredMs / 1000)]++;
    }
    return { name, color, points: counts.map((n, second) => [second, n] as const) };
  }).filter((s) => s.points.some(([, n]) => n > 0));
  const lanes: number[] = [];
  const bands: Band[] = all.map((span) => {
    let lane = lanes.findIndex((end) => end < span.from);
    if (lane === -1) lane = lanes.push(0) - 1;
    lanes[lane] = span.to + 300;
    return {
      from: span.from / 1000,
      to: Math.max(span.to, span.from + 300) / 1000,
      label: `#${span.faultId} ${span.what} (${(span.from / 1000).toFixed(1)}–${(span.to / 1000).toFixed(1)} s)`,
      color: span.error ? '#dc2626' : '#f59e0b',
      lane,
    };
  });
  return lineChart({
    title: 'Purchase answers per second, by status, against the faults (bars: hover for each)',
    xLabel: 'seconds since the start',
    yLabel: 'answers/s',
    width: 1060,
    height: 360,
    series,
    bands,
  });
}

function violationRows(check: CheckReport, all: readonly Span[]): string[][] {
  return check.invariants.flatMap((invariant) =>
    invariant.violations.map((v: Violation) => [
      v.invariant,
      v.message,
      [...v.requestIds.slice(0, 5), ...(v.requestIds.length > 5 ? ['…'] : [])].join(' ') || '-',
      v.historyIds.length > 0
        ? v.historyIds
            .slice(0, 8)
            .map((id) => `#${id}`)
            .join(' ')
        : '-',
      around(all, v.atMs),
    ]),
  );
}

/** VIOLATED, or OK only for what the run checked at least once: the rest was not exercised. */
export function invariantVerdict(invariant: CheckReport['invariants'][number]): string {
  if (invariant.violations.length > 0) return 'VIOLATED';
  return invariant.checked === 0 ? 'not exercised' : 'OK';
}

/** Which invariants the run checked at least once, and which it never reached. */
export function exercisedLines(check: CheckReport): string[] {
  const exercised = check.invariants.filter((i) => i.checked > 0).map((i) => i.name);
  const not = check.invariants.filter((i) => i.checked === 0).map((i) => i.name);
  return [
    `exercised (${exercised.length} of ${check.invariants.length}): ${exercised.join(', ') || 'none'}`,
    `not exercised: ${not.join(', ') || 'none'}`,
  ];
}

function invariantRows(check: CheckReport): string[][] {
  return check.invariants.map((i) => [
    invariantVerdict(i),
    i.name,
    String(i.checked),
    String(i.violations.length),
    i.description,
  ]);
}

/** Seconds from a fault's heal to the next purchase answered 202 (another fault may still be held). */
function nextAcceptance(history: readonly HistoryEntry[], span: Span): string {
  const next = history.find(
    (entry) => entry.op === 'purchase' && entry.status === 202 && entry.sentMs >= span.to,
  );
  return next === undefined ? '-' : ((next.answeredMs - span.to) / 1000).toFixed(1);
}

function faultRows(all: readonly Span[], history: readonly HistoryEntry[]): string[][] {
  return all.map((s) => [
    `#${s.faultId}`,
    s.what,
    (s.from / 1000).toFixed(1),
    ((s.to - s.from) / 1000).toFixed(1),
    nextAcceptance(history, s),
    s.error ?? '',
  ]);
}

function reopenRows(record: RunRecord): string[][] {
  return record.reopens.map((r) => [
    String(r.goodsId),
    r.instance,
    r.ms === null ? `over ${record.reopenBoundMs / 1000} s` : (r.ms / 1000).toFixed(1),
    r.answer,
  ]);
}

export function longestReopenMs(reopens: readonly Reopen[]): number | null {
  return reopens.some((r) => r.ms === null) ? null : Math.max(0, ...reopens.map((r) => r.ms ?? 0));
}

function headline(record: RunRecord): string[] {
  const purchases = record.history.filter((e) => e.op === 'purchase');
  const longest = longestReopenMs(record.reopens);
  const violations = record.check.invariants.reduce((n, i) => n + i.violations.length, 0);
  const { total, taken, notTaken } = record.check.unknown;
  return [
    `seed ${record.seed}: ${record.check.ok ? 'OK' : `${violations} VIOLATIONS`}`,
    `${(record.schedule.durationMs / 60_000).toFixed(2)} min of faults and load on ${record.schedule.instances.map((i) => `${i.name} (${i.role})`).join(', ')}, REDIS_DOWN_MODE=${record.schedule.redisDownMode}${record.schedule.cluster ? ', on a RabbitMQ cluster of three nodes and a MariaDB primary with its replica' : ''}; ${(record.elapsedMs / 1000).toFixed(0)} s in all`,
    `${record.schedule.faults.length} faults scheduled, ${spans(record.nemesis).length} played; ${record.history.length} requests, ${purchases.length} purchases, ${purchases.filter((e) => e.status === 202).length} answered 202`,
    `slow steps while a slow-steps fault holds (FAULT_DELAYS point:ms:percent): ${record.schedule.slowSteps.join(', ') || 'none'}`,
    `consumer: ${record.schedule.consumer ? `CONSUMER_PREFETCH=${record.schedule.consumer.prefetch}, CONSUMER_BATCH_SIZE=${record.schedule.consumer.batchSize}` : "the app's defaults"}`,
    `unknown outcomes: ${total} (${taken} ended as an order, ${notTaken} did not)`,
    `longest reopen after the heal: ${longest === null ? `over the bound of ${record.reopenBoundMs / 1000} s` : `${(longest / 1000).toFixed(1)} s`} (bound ${record.reopenBoundMs / 1000} s); quiet ${(record.quietAfterMs / 1000).toFixed(1)} s after that`,
    ...record.system.map((e) => `${e.instance} at ${(e.atMs / 1000).toFixed(1)} s: ${e.what}`),
    `replay: ${record.replay}`,
  ];
}

export function terminalSummary(record: RunRecord): string {
  const style = process.stdout.isTTY ? { compact: true } : { head: [], border: [], compact: true };
  const invariants = new Table({ head: ['', 'invariant', 'checked', 'violations'], style });
  invariants.push(...invariantRows(record.check).map((row) => row.slice(0, 4)));
  const all = spans(record.nemesis);
  const lines = [...headline(record), '', invariants.toString(), ...exercisedLines(record.check)];
  for (const row of violationRows(record.check, all)) {
    lines.push(
      `VIOLATION ${row[0]}: ${row[1]}`,
      `  requests ${row[2]} (history ${row[3]}); faults around: ${row[4]}`,
    );
  }
  return lines.join('\n');
}

export function buildReport(record: RunRecord): string {
  const all = spans(record.nemesis);
  const violations = violationRows(record.check, all);
  return htmlPage(
    `seckill chaos: seed ${record.seed}`,
    // Mostly text, unlike the bench's figures: every column reads from the left.
    `<style>td,th{text-align:left}</style>
<h1>seckill chaos: seed ${record.seed} — ${record.check.ok ? 'OK' : 'VIOLATED'}</h1>
<pre>${escapeXml(headline(record).join('\n'))}</pre>
<div class="charts">${answersChart(record, all)}</div>
<h2>Invariants</h2>
${htmlTable(['', 'invariant', 'checked', 'violations', 'what it says'], invariantRows(record.check))}
<p>${escapeXml(exercisedLines(record.check).join('; '))}</p>
<h2>Violations</h2>
${violations.length === 0 ? '<p>None.</p>' : htmlTable(['invariant', 'what', 'request ids', 'history entries', `faults within ${AROUND_MS / 1000} s`], violations)}
<h2>Reopen after the heal</h2>
<p>From the moment every fault was healed until a purchase by a new buyer got a decided answer
(202, or a 409 other than NOT_PREHEATED), per sale and instance; the bound is
${record.reopenBoundMs / 1000} s.</p>
${htmlTable(['goods', 'instance', 'seconds', 'answer'], reopenRows(record))}
<h2>Faults played</h2>
${htmlTable(['fault', 'what', 'at (s)', 'held (s)', 'next 202 after its heal (s)', 'error'], faultRows(all, record.history))}
<p>Started ${escapeXml(record.startedAt)} at commit ${escapeXml(record.commit)}; every answer is in
history.jsonl, the schedule in schedule.json, the stores as checked in snapshot.json.</p>`,
  );
}
