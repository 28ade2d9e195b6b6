// The waiting room's promises, judged over the answers the buyers of a queue sale were given, the
// admissions log sampled during the run and the room's final state in Redis. Pure, as the rest of
// the checker: each judgement counts what it checked only when the run exercised it.
import type { InvariantName, SaleSnapshot, Violation } from './checker.js';
import type { HistoryEntry } from './history.js';

/** A queue sale as the run opened it; times in ms after the run's start. */
export interface QueueSaleFacts {
  goodsId: number;
  name: string;
  startMs: number;
  endMs: number;
  admitPerSecond: number;
  admissionTtlMs: number;
}

/** One entry of a room's admissions log (lua/queue-tick.lua's `admits`: "head:count" -> at). */
export interface AdmissionRecord {
  goodsId: number;
  member: string;
  count: number;
  /** Redis's clock (ms since the epoch). */
  atEpochMs: number;
}

/** A queue sale's room in Redis once the run went quiet. */
export interface QueueRoomSnapshot {
  goodsId: number;
  /** userId -> admitted until (the room's clock, ms since the epoch), negative once used. */
  admitted: Record<string, number>;
  /** userIds whose admission lapsed unused. */
  expired: string[];
}

/** A fault as played, in ms after the run's start. */
export interface FaultSpan {
  from: number;
  to: number;
  what: string;
  kind: string;
  /** Redis lost (or went back on) its data: the waiting room with it. */
  redisData: boolean;
  /**
   * It may stop a room's admission clock (lua/lib/room-clock.lua): Redis or a link to it down,
   * stalled or slow, a rebuild's stock out of Redis, an instance that ticks killed or paused.
   */
  stopsClock: boolean;
}

export interface QueueFacts {
  sales: QueueSaleFacts[];
  admissions: AdmissionRecord[];
  rooms: QueueRoomSnapshot[];
  faults: FaultSpan[];
  /** When every fault had been healed. */
  healedMs: number;
  /** When the last standing read after the heal was answered (the settle phase's end). */
  toldMs: number;
}

export interface QueueCheckInput {
  history: readonly HistoryEntry[];
  queue: QueueFacts;
  sales: readonly SaleSnapshot[];
  quietReached: boolean;
  startedAtEpochMs: number;
}

export interface Judge {
  checked(name: InvariantName, count?: number): void;
  violate(violation: Violation): void;
}

/** Within this of the end, every joined buyer has been told a final standing (faults aside). */
export const FINAL_AT_END_BOUND_MS = 5_000;
/** An instance restarted after a kill takes this long to answer again, on top of the bound. */
const RESTART_SLACK_MS = 10_000;
/** The server's clock against the run's, and a standing's read of the end, may differ this much. */
const END_SLACK_MS = 1_000;
const CLOCK_SLACK_MS = 50;
/** The run reads the admissions log this often (snapshot.ts), give or take a slow read. */
const LOG_SAMPLED_EVERY_MS = 1_000;
const LOG_SLACK_MS = 500;
const MAX_LISTED = 10;

const isStanding = (entry: HistoryEntry) =>
  (entry.op === 'join' || entry.op === 'queue') && entry.status === 200;

const describe = (entry: HistoryEntry) =>
  `#${entry.id} ${entry.op} ${entry.status || 'no answer'}${entry.queueState ? ` ${entry.queueState}` : ''}${entry.code ? ` ${entry.code}` : ''}${entry.final === undefined ? '' : ` final ${entry.final}`} at ${entry.sentMs} ms`;

function byBuyer(entries: readonly HistoryEntry[]): Map<number, HistoryEntry[]> {
  const map = new Map<number, HistoryEntry[]>();
  for (const entry of entries) map.set(entry.buyer, [...(map.get(entry.buyer) ?? []), entry]);
  return map;
}

/** The buyers a join answered in line (any state but NOT_JOINED), before `beforeMs` if given. */
export function joinedBuyers(
  history: readonly HistoryEntry[],
  goodsId: number,
  beforeMs = Infinity,
): Set<number> {
  return new Set(
    history
      .filter(
        (e) =>
          e.goodsId === goodsId &&
          e.op === 'join' &&
          e.status === 200 &&
          e.queueState !== undefined &&
          e.queueState !== 'NOT_JOINED' &&
          e.sentMs < beforeMs,
      )
      .map((e) => e.buyer),
  );
}

export function checkQueues(input: QueueCheckInput, judge: Judge): void {
  checkAdmittedPurchases(input, judge);
  checkPace(input, judge);
  checkFinalAtEnd(input, judge);
  checkEveryoneTold(input, judge);
}

/**
 * queue-admitted-purchase: a purchase answered 202 in a queue sale was made by a buyer the room
 * had admitted. Evidence, in order: the buyer's last standing (ADMITTED or EXPIRED) read before
 * the answer said ADMITTED; or the room's final state holds an admission for it given before the
 * answer (a buyer admitted between its last read and its purchase: admitted until, less the time
 * to buy, is no later than the admission on the room's clock, which never runs ahead of Redis's);
 * or its admission lapsed and the purchase is no order (given back, then lapsed). Once Redis lost
 * its data after the purchase was sent, the room proves nothing: a purchase without the first
 * evidence is then judged only when the admissions log, sampled before the loss, shows nobody
 * admitted between the buyer's last read and the answer.
 */
export function checkAdmittedPurchases(input: QueueCheckInput, judge: Judge): void {
  const { history, queue, startedAtEpochMs } = input;
  const ordered = new Set(input.sales.flatMap((sale) => sale.orders.map((o) => o.requestId)));
  for (const sale of queue.sales) {
    const room = queue.rooms.find((r) => r.goodsId === sale.goodsId);
    const expired = new Set(room?.expired ?? []);
    const reads = byBuyer(history.filter((e) => e.goodsId === sale.goodsId && isStanding(e)));
    const accepted = history.filter(
      (e) =>
        e.goodsId === sale.goodsId &&
        e.op === 'purchase' &&
        e.status === 202 &&
        !e.outsider &&
        !e.probe,
    );
    for (const purchase of accepted) {
      const theirs = reads.get(purchase.buyer) ?? [];
      const turn = theirs
        .filter(
          (e) =>
            e.sentMs <= purchase.answeredMs &&
            (e.queueState === 'ADMITTED' || e.queueState === 'EXPIRED'),
        )
        .at(-1);
      const score = room?.admitted[String(purchase.buyer)];
      const admittedAt =
        score === undefined ? undefined : Math.abs(score) - sale.admissionTtlMs - startedAtEpochMs;
      const evidence =
        turn?.queueState === 'ADMITTED' ||
        (admittedAt !== undefined && admittedAt <= purchase.answeredMs + CLOCK_SLACK_MS) ||
        (expired.has(String(purchase.buyer)) &&
          purchase.requestId !== undefined &&
          !ordered.has(purchase.requestId));
      if (evidence) {
        judge.checked('queue-admitted-purchase');
        continue;
      }
      const last = theirs.filter((e) => e.answeredMs <= purchase.sentMs).at(-1);
      // The room lost since: still judged when the admissions log, read before the loss, shows
      // no admission at all between the buyer's last read and the answer.
      const losses = queue.faults.filter((f) => f.redisData && f.to >= purchase.sentMs);
      if (losses.length > 0) {
        const from = last?.sentMs ?? -Infinity;
        const sampledBefore = losses.every(
          (f) => purchase.answeredMs < f.from - LOG_SAMPLED_EVERY_MS - LOG_SLACK_MS,
        );
        const admittedMeanwhile = queue.admissions.some(
          (a) =>
            a.goodsId === sale.goodsId &&
            a.atEpochMs - startedAtEpochMs >= from - CLOCK_SLACK_MS &&
            a.atEpochMs - startedAtEpochMs <= purchase.answeredMs + CLOCK_SLACK_MS,
        );
        if (!sampledBefore || admittedMeanwhile || last === undefined) continue;
      }
      judge.checked('queue-admitted-purchase');
      judge.violate({
        invariant: 'queue-admitted-purchase',
        message: `${sale.name}: purchase #${purchase.id} by buyer ${purchase.buyer} was answered 202 at ${purchase.answeredMs} ms, and the room never admitted the buyer before it (last standing read before: ${last ? describe(last) : 'none'}; ${admittedAt === undefined ? 'no admission in the room' : `the room's admission came at ${Math.round(admittedAt)} ms or later`})`,
        requestIds: purchase.requestId ? [purchase.requestId] : [],
        historyIds: [...(last ? [last.id] : []), purchase.id],
        goodsId: sale.goodsId,
        atMs: purchase.sentMs,
      });
    }
  }
}

/**
 * queue-pace: no 1,000 ms holds more than admitPerSecond admissions, read from the admissions log
 * sampled during the run (the log keeps ten seconds; a Redis that lost its data starts a new log,
 * whose windows are not added to the old one's).
 */
export function checkPace(input: QueueCheckInput, judge: Judge): void {
  const { queue, startedAtEpochMs } = input;
  const restarts = queue.faults.filter((f) => f.redisData).map((f) => f.from);
  for (const sale of queue.sales) {
    const seen = new Map<string, { atMs: number; count: number; member: string }>();
    for (const a of queue.admissions) {
      if (a.goodsId !== sale.goodsId) continue;
      seen.set(`${a.member}@${a.atEpochMs}`, {
        atMs: a.atEpochMs - startedAtEpochMs,
        count: a.count,
        member: a.member,
      });
    }
    const log = [...seen.values()].sort((a, b) => a.atMs - b.atMs);
    judge.checked('queue-pace', log.length);
    let reportedUntil = -Infinity;
    for (const [i, last] of log.entries()) {
      const window = log
        .slice(0, i + 1)
        .filter(
          (a) => a.atMs > last.atMs - 1_000 && !restarts.some((r) => a.atMs <= r && r <= last.atMs),
        );
      const admitted = window.reduce((sum, a) => sum + a.count, 0);
      if (admitted <= sale.admitPerSecond || last.atMs < reportedUntil) continue;
      reportedUntil = last.atMs + 1_000;
      judge.violate({
        invariant: 'queue-pace',
        message: `${sale.name}: ${admitted} admissions in the 1,000 ms to ${Math.round(last.atMs)} ms, at a pace of ${sale.admitPerSecond} a second (${window.map((a) => `${a.member} at ${Math.round(a.atMs)} ms`).join(', ')})`,
        requestIds: [],
        historyIds: [],
        goodsId: sale.goodsId,
        atMs: Math.round(last.atMs),
      });
    }
  }
}

/**
 * How long after the end the standings may take to turn final: the bound, and past it the end of
 * each fault held meanwhile (plus the bound again, and a restarted instance's start), for as long
 * as faults follow each other; Infinity when that reaches the heal (judged on the reads after it).
 */
export function finalDeadline(endMs: number, faults: readonly FaultSpan[], healedMs: number) {
  let deadline = endMs + FINAL_AT_END_BOUND_MS;
  for (let moved = true; moved;) {
    moved = false;
    for (const fault of faults) {
      if (fault.from > deadline || fault.to < endMs) continue;
      const after =
        fault.to + FINAL_AT_END_BOUND_MS + (fault.kind === 'app-kill' ? RESTART_SLACK_MS : 0);
      if (after > deadline) {
        deadline = after;
        moved = true;
      }
    }
  }
  return deadline >= healedMs ? Infinity : deadline;
}

/**
 * queue-final-at-end: for a queue sale that ended during the run, every buyer who joined before
 * the end is told a final standing by the deadline above; no standing read after the end is
 * anything but final (an admission in force, or a place in line); no purchase sent after the end
 * is accepted; and no admission read in the last seconds lasts past the end (the time to buy of
 * an admission is cut at endAt: judged where no fault could have stopped the room's clock since
 * the admission, which lengthens what is left).
 */
export function checkFinalAtEnd(input: QueueCheckInput, judge: Judge): void {
  const { history, queue, startedAtEpochMs } = input;
  for (const sale of queue.sales) {
    if (sale.endMs >= queue.healedMs) continue;
    const on = { goodsId: sale.goodsId, requestIds: [] as string[] };
    const deadline = finalDeadline(sale.endMs, queue.faults, queue.healedMs);
    const reads = history.filter((e) => e.goodsId === sale.goodsId && isStanding(e));
    const theirs = byBuyer(reads);
    for (const buyer of joinedBuyers(history, sale.goodsId, sale.endMs)) {
      judge.checked('queue-final-at-end');
      const own = theirs.get(buyer) ?? [];
      if (own.some((e) => e.final === true && e.answeredMs <= deadline)) continue;
      const last = own.at(-1);
      judge.violate({
        ...on,
        invariant: 'queue-final-at-end',
        message: `${sale.name}: buyer ${buyer} joined and was told no final standing by ${Number.isFinite(deadline) ? `${Math.round(deadline)} ms (the end at ${sale.endMs} ms, plus ${FINAL_AT_END_BOUND_MS} ms and the faults held)` : `the end of the settle phase (the end at ${sale.endMs} ms, faults held until the heal)`}; last standing: ${last ? describe(last) : 'none'}`,
        historyIds: last ? [last.id] : [],
        atMs: sale.endMs,
      });
    }
    const after = sale.endMs + END_SLACK_MS;
    const lateReads = reads.filter((e) => e.sentMs >= after);
    judge.checked('queue-final-at-end', lateReads.length);
    const open = lateReads.filter((e) => e.final !== true || e.queueState === 'ADMITTED');
    if (open.length > 0) {
      judge.violate({
        ...on,
        invariant: 'queue-final-at-end',
        message: `${sale.name}: ${open.length} standings read after the end (${sale.endMs} ms) were not final: ${open.slice(0, MAX_LISTED).map(describe).join('; ')}${open.length > MAX_LISTED ? '; …' : ''}`,
        historyIds: open.map((e) => e.id),
        atMs: open[0].sentMs,
      });
    }
    const late = history.filter(
      (e) => e.goodsId === sale.goodsId && e.op === 'purchase' && e.sentMs >= after,
    );
    judge.checked('queue-final-at-end', late.length);
    for (const purchase of late.filter((e) => e.status === 202)) {
      judge.violate({
        invariant: 'queue-final-at-end',
        message: `${sale.name}: purchase #${purchase.id} by buyer ${purchase.buyer}, sent at ${purchase.sentMs} ms after the end (${sale.endMs} ms), was answered 202`,
        goodsId: sale.goodsId,
        requestIds: purchase.requestId ? [purchase.requestId] : [],
        historyIds: [purchase.id],
        atMs: purchase.sentMs,
      });
    }
    const closing = reads.filter(
      (e) =>
        e.queueState === 'ADMITTED' &&
        e.admittedUntilEpochMs !== undefined &&
        e.answeredMs <= sale.endMs &&
        e.answeredMs >= sale.endMs - sale.admissionTtlMs - END_SLACK_MS &&
        !queue.faults.some(
          (f) =>
            f.stopsClock &&
            f.to >= e.sentMs - sale.admissionTtlMs - 2 * END_SLACK_MS &&
            f.from <= e.answeredMs,
        ),
    );
    judge.checked('queue-final-at-end', closing.length);
    const outliving = closing.filter(
      (e) => e.admittedUntilEpochMs! - startedAtEpochMs > sale.endMs + END_SLACK_MS,
    );
    if (outliving.length > 0) {
      judge.violate({
        ...on,
        invariant: 'queue-final-at-end',
        message: `${sale.name}: ${outliving.length} admissions outlive the end (${sale.endMs} ms): ${outliving
          .slice(0, MAX_LISTED)
          .map(
            (e) =>
              `${describe(e)} admitted until ${Math.round(e.admittedUntilEpochMs! - startedAtEpochMs)} ms`,
          )
          .join('; ')}`,
        historyIds: outliving.map((e) => e.id),
        atMs: outliving[0].sentMs,
      });
    }
  }
}

/**
 * every-waiting-told: once a queue sale is over for good (ended, or sold out with no unpaid order
 * left once the run was quiet), every buyer who joined and bought nothing was told a final
 * standing by the end of the settle phase (whose reads ask each one not told yet).
 */
export function checkEveryoneTold(input: QueueCheckInput, judge: Judge): void {
  const { history, queue } = input;
  for (const sale of queue.sales) {
    const snapshot = input.sales.find((s) => s.goodsId === sale.goodsId);
    const ended = sale.endMs <= queue.toldMs;
    const soldOut = input.quietReached && snapshot?.mysqlStock === 0 && snapshot.redisStock === 0;
    if (!ended && !soldOut) continue;
    const bought = new Set(snapshot?.orders.map((o) => o.userId) ?? []);
    const theirs = byBuyer(history.filter((e) => e.goodsId === sale.goodsId && isStanding(e)));
    const untold: number[] = [];
    for (const buyer of joinedBuyers(history, sale.goodsId)) {
      if (bought.has(buyer)) continue;
      judge.checked('every-waiting-told');
      if (!(theirs.get(buyer) ?? []).some((e) => e.final === true)) untold.push(buyer);
    }
    if (untold.length === 0) continue;
    judge.violate({
      invariant: 'every-waiting-told',
      message: `${sale.name} (${ended ? `ended at ${sale.endMs} ms` : 'sold out for good'}): ${untold.length} buyers who joined and bought nothing were never told a final standing: ${untold
        .slice(0, MAX_LISTED)
        .map((buyer) => {
          const last = theirs.get(buyer)?.at(-1);
          return `${buyer} (last: ${last ? describe(last) : 'none'})`;
        })
        .join('; ')}${untold.length > MAX_LISTED ? '; …' : ''}`,
      goodsId: sale.goodsId,
      requestIds: [],
      historyIds: untold.flatMap(
        (buyer) =>
          theirs
            .get(buyer)
            ?.slice(-1)
            .map((e) => e.id) ?? [],
      ),
    });
  }
}
