// The waiting room's promises, judged over the answers the buyers of a queue sale were given, the
// admissions log sampled during the run and the room's final state in Redis. Pure, as the rest of
// the checker: each judgement counts what it checked only when the run exercised it.
import type { InvariantName, SaleSnapshot, Violation } from './checker.js';
import type { HistoryEntry } from './history.js';
import {
  verifyDraw,
  type DrawExport,
  type PublishedDraw,
} from '../../src/modules/waiting-room/draw-verifier.js';
import { queueOrder } from './queue-order.js';

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
  /** The service whose links it acts on (a proxy fault), if any. */
  service?: string;
  /** The app instance it acts on (`all`: every one), if any. */
  instance?: string;
  /**
   * It may stop a room's admission clock (lua/lib/room-clock.lua): Redis or a link to it down,
   * stalled or slow, a rebuild's stock out of Redis, an instance that ticks killed or paused, a
   * MySQL link held up (the pacer writes each step to the journal before the next).
   */
  stopsClock: boolean;
}

/**
 * A room's state hash in Redis (lua/queue-tick.lua's `state`), read with the admissions log each
 * second: the seed it orders the pre-queue with, how far admission went, the journal mark.
 */
export interface RoomSample {
  goodsId: number;
  /** The wall clock when read (ms since the epoch). */
  atEpochMs: number;
  seed: string | null;
  head: number | null;
  /** The room was the journal's (not lost, not being restored). */
  journal: boolean;
}

/** A join as MySQL kept it (seckill_queue_join): line 0 the pre-queue (join index), 1 behind it. */
export interface JournalJoin {
  userId: number;
  line: 0 | 1;
  position: number;
}

/** A queue sale's waiting room as MySQL kept it once the run was quiet (its durable copy). */
export interface QueueJournalSnapshot {
  goodsId: number;
  /** seckill_queue_room's seed and pre-queue size (null: never drawn). */
  seed: string | null;
  preSize: number | null;
  joins: JournalJoin[];
}

/** A queue sale's draw read over HTTP once quiet (null: the route did not answer 200). */
export interface QueueDrawSnapshot {
  goodsId: number;
  published: PublishedDraw | null;
  exported: DrawExport | null;
}

export interface QueueFacts {
  sales: QueueSaleFacts[];
  admissions: AdmissionRecord[];
  rooms: QueueRoomSnapshot[];
  /** The rooms' state hashes, sampled each second. */
  roomSamples: RoomSample[];
  /** The rooms as MySQL kept them, read at the end (absent: MySQL could not be read). */
  journals: QueueJournalSnapshot[];
  /** The draws' public answers and exports, read at the end (absent: not read). */
  draws?: QueueDrawSnapshot[];
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
/**
 * A purchase sent this long after its admission's `admittedUntil` is judged lapsed: the room's
 * clock ticks in steps, and the client's clock reads the server's a moment late.
 */
const LAPSE_SLACK_MS = 1_000;
/** The run reads the admissions log this often (snapshot.ts), give or take a slow read. */
const LOG_SAMPLED_EVERY_MS = 1_000;
const LOG_SLACK_MS = 500;
/**
 * After Redis is back with other data, the room may still be read as it was (an old snapshot)
 * until the rebuild drops it and restores it from MySQL: places told meanwhile, and until then,
 * are not compared with those told before (the head, not the places, may differ).
 */
const RESTORE_SLACK_MS = 10_000;
/** A read sent this close to a Redis loss's end may still have been answered by the lost room. */
const LOSS_SLACK_MS = 1_000;
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
  checkPlacesKept(input, judge);
  checkAdmissionOrder(input, judge);
  checkDraws(input, judge);
}

/**
 * queue-draw-verifiable: each queue sale's draw, from the public answer and the export read at
 * the end, checked as an auditor would (verifyDraw), and every join receipt the buyers were given
 * against them: its commitment the one whose secret was revealed, its join in the export at its
 * index under its pseudonym. Judged for the sales drawn; counted per receipt and per export.
 */
export function checkDraws(input: QueueCheckInput, judge: Judge): void {
  for (const draw of input.queue.draws ?? []) {
    const sale = input.queue.sales.find((s) => s.goodsId === draw.goodsId);
    if (!sale || !draw.published?.drawn) continue;
    const name = `${sale.name} (goods ${sale.goodsId})`;
    const violate = (message: string, entries: HistoryEntry[] = []) =>
      judge.violate({
        invariant: 'queue-draw-verifiable',
        message: `${name}: ${message}`,
        requestIds: [],
        historyIds: entries.map((e) => e.id),
        goodsId: sale.goodsId,
      });
    if (!draw.exported) {
      violate('the export could not be read while the fairness answer says drawn');
      continue;
    }
    judge.checked('queue-draw-verifiable');
    const verdict = verifyDraw(draw.published, draw.exported);
    if (!verdict.ok) violate(verdict.problem);
    const byIndex = new Map(draw.exported.preQueue.map((e) => [e.joinIndex, e.pseudonym]));
    const wrong: HistoryEntry[] = [];
    const lost: HistoryEntry[] = [];
    for (const entry of input.history) {
      if (entry.goodsId !== sale.goodsId || entry.op !== 'join' || !entry.receipt) continue;
      judge.checked('queue-draw-verifiable');
      if (entry.receipt.seedCommitment !== draw.published.seedCommitment) wrong.push(entry);
      if (
        entry.receipt.joinIndex !== null &&
        entry.receipt.joinIndex < (draw.published.preSize ?? 0) &&
        byIndex.get(entry.receipt.joinIndex) !== entry.receipt.pseudonym
      ) {
        lost.push(entry);
      }
    }
    if (wrong.length > 0) {
      violate(
        `${wrong.length} join receipts carry another commitment than the revealed secret's: ${wrong
          .slice(0, MAX_LISTED)
          .map(describe)
          .join('; ')}`,
        wrong.slice(0, MAX_LISTED),
      );
    }
    if (lost.length > 0) {
      violate(
        `${lost.length} join receipts name a join the export does not hold at its index: ${lost
          .slice(0, MAX_LISTED)
          .map((e) => `${describe(e)} index ${e.receipt!.joinIndex}`)
          .join('; ')}`,
        lost.slice(0, MAX_LISTED),
      );
    }
  }
}

/**
 * queue-admission-order: the room admits places in order, so the buyers it admitted (the
 * admissions in force or used, and those lapsed) are exactly the first places of the final
 * journal's order (the seed's permutation of the pre-queue, then the line by arrival). Judged
 * once quiet, from the room Redis holds and the journal MySQL holds; counted per admitted buyer,
 * where somebody placed was still waiting (a room that admitted everyone proves no order).
 */
export function checkAdmissionOrder(input: QueueCheckInput, judge: Judge): void {
  const { queue } = input;
  for (const sale of queue.sales) {
    const room = queue.rooms.find((r) => r.goodsId === sale.goodsId);
    const places = journalPlaces(queue.journals.find((j) => j.goodsId === sale.goodsId));
    if (!room || places.size === 0) continue;
    const admitted = new Set([...Object.keys(room.admitted), ...room.expired].map(Number));
    const placed = [...places.entries()].sort((a, b) => a[1] - b[1]);
    const waiting = placed.filter(([buyer]) => !admitted.has(buyer));
    const ahead = placed.filter(([buyer]) => admitted.has(buyer));
    if (waiting.length === 0 || ahead.length === 0) continue;
    judge.checked('queue-admission-order', ahead.length);
    const [firstWaiting, firstPlace] = waiting[0];
    const passed = ahead.filter(([, place]) => place > firstPlace);
    if (passed.length === 0) continue;
    judge.violate({
      invariant: 'queue-admission-order',
      message: `${sale.name}: buyer ${firstWaiting} at place ${firstPlace} was never admitted, while ${passed.length} buyers placed after it were: ${listed(passed, ([buyer, place]) => `${buyer} at ${place}`)}`,
      goodsId: sale.goodsId,
      requestIds: [],
      historyIds: [],
    });
  }
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
      // EXPIRED is final: a purchase sent after the buyer was told so was sold on a lapsed
      // admission, unless Redis lost the room between the two (the room restored from MySQL may
      // be a step behind the one that told it; a room not yet restored answers 503, never EXPIRED).
      const toldExpired = theirs.find(
        (e) => e.queueState === 'EXPIRED' && e.answeredMs <= purchase.sentMs,
      );
      if (
        toldExpired &&
        !queue.faults.some(
          (f) =>
            f.redisData &&
            f.from <= purchase.answeredMs &&
            f.to + LOSS_SLACK_MS >= toldExpired.sentMs,
        )
      ) {
        judge.checked('queue-admitted-purchase');
        judge.violate({
          invariant: 'queue-admitted-purchase',
          message: `${sale.name}: purchase #${purchase.id} by buyer ${purchase.buyer} was sent at ${purchase.sentMs} ms and answered 202, after the buyer was told its admission had lapsed (${describe(toldExpired)})`,
          requestIds: purchase.requestId ? [purchase.requestId] : [],
          historyIds: [toldExpired.id, purchase.id],
          goodsId: sale.goodsId,
          atMs: purchase.sentMs,
        });
        continue;
      }
      // An ADMITTED read tells until when the admission is in force: a purchase sent well past
      // that, with nothing around that could stop the room's clock, was sold on a lapsed one.
      if (turn?.queueState === 'ADMITTED' && turn.admittedUntilEpochMs !== undefined) {
        const lapsedAtMs = turn.admittedUntilEpochMs - startedAtEpochMs;
        const stopped = queue.faults.some(
          (f) =>
            f.stopsClock && f.from <= purchase.answeredMs && f.to + RESTART_SLACK_MS >= turn.sentMs,
        );
        if (!stopped && purchase.sentMs > lapsedAtMs + LAPSE_SLACK_MS) {
          judge.checked('queue-admitted-purchase');
          judge.violate({
            invariant: 'queue-admitted-purchase',
            message: `${sale.name}: purchase #${purchase.id} by buyer ${purchase.buyer} was sent at ${purchase.sentMs} ms and answered 202, and its admission, read at ${turn.sentMs} ms (${describe(turn)}), lapsed at ${Math.round(lapsedAtMs)} ms, with no fault that could stop the room's clock`,
            requestIds: purchase.requestId ? [purchase.requestId] : [],
            historyIds: [turn.id, purchase.id],
            goodsId: sale.goodsId,
            atMs: purchase.sentMs,
          });
          continue;
        }
      }
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

/** A buyer's place as the final MySQL journal gives it (null: not placed there, or no seed). */
function journalPlaces(journal: QueueJournalSnapshot | undefined): Map<number, number> {
  const places = new Map<number, number>();
  if (!journal || journal.seed === null || journal.preSize === null) return places;
  const order = queueOrder(journal.seed, journal.preSize);
  const pre = journal.joins.filter((j) => j.line === 0 && j.position < journal.preSize!);
  for (const join of pre) places.set(join.userId, order.placeOf(join.position));
  const line = journal.joins.filter((j) => j.line === 1).sort((a, b) => a.position - b.position);
  for (const [rank, join] of line.entries()) places.set(join.userId, journal.preSize + rank);
  return places;
}

const listed = <T>(items: readonly T[], show: (item: T) => string) =>
  `${items.slice(0, MAX_LISTED).map(show).join('; ')}${items.length > MAX_LISTED ? '; …' : ''}`;

/**
 * queue-places-kept: no joiner's place is lost or changed, across a Redis restart too (the room
 * is restored from its MySQL journal). Judged from what the buyers were told and the final
 * stores:
 * - a buyer answered 200 on a join never reads NOT_JOINED later (a 503 is fine), and is in the
 *   final journal, in the pre-queue if the join was answered before the start, behind it if it
 *   was first tried after;
 * - places: a WAITING standing's position is the place less the head (places admitted so far),
 *   which moves only at an admission (the log, sampled) or a restore. Standings read with no
 *   admission and no Redis loss between them share a head: one buyer is told one position
 *   there, two buyers two positions (but 1: ahead of the head too), and the order they are
 *   told in is the journal's (its seed's shuffle, then arrival) and never inverts in another
 *   such window, before or after a restart;
 * - the seed: every sampling of Redis's seed is the journal's (seckill_queue_room.seed);
 * - an admission's state: no ADMITTED after EXPIRED (final), nor after PURCHASED once the
 *   buyer's order was in MySQL.
 * Counted where exercised: a joined buyer asked again after a Redis loss, one placed and read
 * again, a seed sampled again after a loss, a lapse or an order read again.
 */
export function checkPlacesKept(input: QueueCheckInput, judge: Judge): void {
  const { history, queue, startedAtEpochMs } = input;
  const losses = queue.faults.filter((f) => f.redisData);
  for (const sale of queue.sales) {
    const goodsId = sale.goodsId;
    const violate = (message: string, historyIds: number[], atMs?: number) =>
      judge.violate({
        invariant: 'queue-places-kept',
        message: `${sale.name}: ${message}`,
        goodsId,
        requestIds: [],
        historyIds,
        ...(atMs === undefined ? {} : { atMs }),
      });
    const reads = history
      .filter((e) => e.goodsId === goodsId && isStanding(e))
      .sort((a, b) => a.sentMs - b.sentMs || a.id - b.id);
    const theirs = byBuyer(reads);
    const journal = queue.journals.find((j) => j.goodsId === goodsId);
    const attempts = byBuyer(history.filter((e) => e.goodsId === goodsId && e.op === 'join'));
    checkJoinsKept(sale, reads, theirs, attempts, journal, losses, judge, violate);
    checkAdmissionStates(input, sale, theirs, judge, violate);
    checkSeedKept(queue, sale, journal, losses, startedAtEpochMs, judge, violate);
    checkOrderTold(input, sale, reads, journal, losses, judge, violate);
  }
}

type Violate = (message: string, historyIds: number[], atMs?: number) => void;

function checkJoinsKept(
  sale: QueueSaleFacts,
  reads: readonly HistoryEntry[],
  theirs: Map<number, HistoryEntry[]>,
  attempts: Map<number, HistoryEntry[]>,
  journal: QueueJournalSnapshot | undefined,
  losses: readonly FaultSpan[],
  judge: Judge,
  violate: Violate,
): void {
  const firstJoin = new Map<number, HistoryEntry>();
  for (const e of reads) {
    if (e.op !== 'join' || e.queueState === undefined || e.queueState === 'NOT_JOINED') continue;
    const known = firstJoin.get(e.buyer);
    if (!known || e.answeredMs < known.answeredMs) firstJoin.set(e.buyer, e);
  }
  const kept = new Map(journal?.joins.map((j) => [j.userId, j]) ?? []);
  const lost: { buyer: number; joined: HistoryEntry; read: HistoryEntry }[] = [];
  const missing: HistoryEntry[] = [];
  const misplaced: string[] = [];
  for (const [buyer, joined] of firstJoin) {
    const later = (theirs.get(buyer) ?? []).filter((e) => e.sentMs >= joined.answeredMs);
    const lossSince = losses.filter((f) => f.from >= joined.sentMs);
    if (lossSince.some((f) => later.some((e) => e.sentMs >= f.from)))
      judge.checked('queue-places-kept');
    const read = later.find((e) => e.queueState === 'NOT_JOINED');
    if (read) lost.push({ buyer, joined, read });
    if (!journal) continue;
    if (lossSince.length > 0) judge.checked('queue-places-kept');
    const row = kept.get(buyer);
    if (!row) {
      missing.push(joined);
      continue;
    }
    // The first attempt of any kind: a join answered 503 may have placed the buyer already.
    const tried = Math.min(...(attempts.get(buyer) ?? [joined]).map((e) => e.sentMs));
    const line =
      joined.answeredMs < sale.startMs - CLOCK_SLACK_MS
        ? 0
        : tried > sale.startMs + CLOCK_SLACK_MS
          ? 1
          : undefined;
    if (line !== undefined && row.line !== line) {
      misplaced.push(
        `${buyer} (joined ${describe(joined)}, the journal has line ${row.line} position ${row.position})`,
      );
    }
  }
  if (lost.length > 0) {
    violate(
      `${lost.length} buyers answered 200 on a join later read NOT_JOINED: ${listed(lost, (l) => `${l.buyer} (${describe(l.joined)}, then ${describe(l.read)})`)}`,
      lost.flatMap((l) => [l.joined.id, l.read.id]),
      lost[0].read.sentMs,
    );
  }
  if (missing.length > 0) {
    violate(
      `${missing.length} buyers answered 200 on a join are not in the MySQL journal (seckill_queue_join): ${listed(missing, (e) => `${e.buyer} (${describe(e)})`)}`,
      missing.map((e) => e.id),
    );
  }
  if (misplaced.length > 0) {
    violate(
      `${misplaced.length} buyers are in the journal on another line than they joined (the pre-queue before the start at ${sale.startMs} ms, behind it after): ${listed(misplaced, (m) => m)}`,
      [],
    );
  }
}

/** No ADMITTED after an EXPIRED (final), nor after a PURCHASED once the buyer's order is in MySQL. */
function checkAdmissionStates(
  input: QueueCheckInput,
  sale: QueueSaleFacts,
  theirs: Map<number, HistoryEntry[]>,
  judge: Judge,
  violate: Violate,
): void {
  const orderedAt = new Map<number, number>();
  const snapshot = input.sales.find((s) => s.goodsId === sale.goodsId);
  for (const order of snapshot?.orders ?? []) {
    const at = (order.createdAtEpochMs ?? Infinity) - input.startedAtEpochMs;
    orderedAt.set(order.userId, Math.min(at, orderedAt.get(order.userId) ?? Infinity));
  }
  const revived: string[] = [];
  const ids: number[] = [];
  for (const [buyer, own] of theirs) {
    const ordered = orderedAt.get(buyer) ?? Infinity;
    const settled = own.find(
      (e) =>
        e.queueState === 'EXPIRED' ||
        (e.queueState === 'PURCHASED' && ordered + CLOCK_SLACK_MS <= e.sentMs),
    );
    if (!settled) continue;
    const after = own.filter((e) => e.sentMs >= settled.answeredMs);
    if (after.length > 0) judge.checked('queue-places-kept');
    const admitted = after.find((e) => e.queueState === 'ADMITTED');
    if (!admitted) continue;
    revived.push(`${buyer} (${describe(settled)}, then ${describe(admitted)})`);
    ids.push(settled.id, admitted.id);
  }
  if (revived.length > 0) {
    violate(
      `${revived.length} buyers read ADMITTED after a lapse (EXPIRED) or after their order was in MySQL (PURCHASED): ${listed(revived, (r) => r)}`,
      ids,
    );
  }
}

/** Every seed Redis was sampled holding is the one MySQL drew, and it never changes. */
function checkSeedKept(
  queue: QueueFacts,
  sale: QueueSaleFacts,
  journal: QueueJournalSnapshot | undefined,
  losses: readonly FaultSpan[],
  startedAtEpochMs: number,
  judge: Judge,
  violate: Violate,
): void {
  const samples = queue.roomSamples.filter((s) => s.goodsId === sale.goodsId && s.seed !== null);
  if (samples.length === 0) return;
  const first = samples[0];
  // Exercised by a sampling after a loss that followed a seed already drawn.
  const again = samples.filter((s) =>
    losses.some(
      (f) => first.atEpochMs - startedAtEpochMs < f.from && s.atEpochMs - startedAtEpochMs > f.to,
    ),
  );
  judge.checked('queue-places-kept', again.length);
  const kept = journal?.seed ?? first.seed;
  const other = samples.filter((s) => s.seed !== kept);
  if (other.length === 0 && (journal === undefined || journal.seed !== null)) return;
  const at = (s: RoomSample) => `${s.seed} at ${Math.round(s.atEpochMs - startedAtEpochMs)} ms`;
  violate(
    journal?.seed === null
      ? `Redis held a seed MySQL never drew (seckill_queue_room.seed is null): ${at(first)}`
      : `the seed changed: ${journal ? `MySQL kept ${kept}` : `first sampled ${at(first)}`}, Redis was sampled with ${other.length} other: ${listed(other, at)}`,
    [],
    Math.round((other[0] ?? first).atEpochMs - startedAtEpochMs),
  );
}

/**
 * Where the head may have moved without an admission logged: around a sampling of the room not
 * the journal's (being restored, by a rebuild that no Redis loss needs to precede: the fallback's
 * return), and before one whose head is not the one last known (the log's latest admission, or
 * the sampling before: a restore wrote the journal's head, or the log lost an entry with Redis).
 */
function unloggedHeads(
  queue: QueueFacts,
  sale: QueueSaleFacts,
  startedAtEpochMs: number,
): { from: number; to: number }[] {
  const log = queue.admissions
    .filter((a) => a.goodsId === sale.goodsId)
    .map((a) => ({ at: a.atEpochMs, head: Number(a.member.split(':')[0]) + a.count }));
  const samples = queue.roomSamples.filter((s) => s.goodsId === sale.goodsId);
  const cuts: { from: number; to: number }[] = [];
  const cut = (from: number | undefined, to: number | undefined) =>
    cuts.push({
      from: (from ?? -Infinity) - CLOCK_SLACK_MS - startedAtEpochMs,
      to: (to ?? Infinity) + CLOCK_SLACK_MS - startedAtEpochMs,
    });
  let known = { at: -Infinity, head: 0 };
  const knownAt = (at: number) => {
    const logged = log.filter((a) => a.at <= at).at(-1);
    return logged && logged.at >= known.at ? logged.head : known.head;
  };
  for (const [i, sample] of samples.entries()) {
    const at = sample.atEpochMs;
    const before = samples[i - 1]?.atEpochMs;
    if (!sample.journal) cut(before, samples[i + 1]?.atEpochMs);
    const head = sample.head ?? 0;
    // A tick may land while the sampling reads the room.
    const expected = [knownAt(at - CLOCK_SLACK_MS), knownAt(at), knownAt(at + LOG_SLACK_MS)];
    if (sample.journal && !expected.includes(head)) cut(before, at);
    known = { at, head };
  }
  return cuts;
}

interface Told {
  buyer: number;
  position: number;
  read: HistoryEntry;
}

/**
 * The places told: standings that share a head (no admission logged and no Redis loss between
 * them) tell each buyer one position and the buyers their order, which agrees with the journal's
 * and with every other such window's.
 */
function checkOrderTold(
  input: QueueCheckInput,
  sale: QueueSaleFacts,
  reads: readonly HistoryEntry[],
  journal: QueueJournalSnapshot | undefined,
  losses: readonly FaultSpan[],
  judge: Judge,
  violate: Violate,
): void {
  const { queue, startedAtEpochMs } = input;
  const admitted = queue.admissions
    .filter((a) => a.goodsId === sale.goodsId)
    .map((a) => a.atEpochMs - startedAtEpochMs);
  const cuts = [
    ...losses.map((f) => ({
      from: f.from - LOG_SAMPLED_EVERY_MS - LOG_SLACK_MS,
      to: f.to + RESTORE_SLACK_MS,
    })),
    ...unloggedHeads(queue, sale, startedAtEpochMs),
  ];
  const marks = [...admitted, ...cuts.flatMap((c) => [c.from, c.to])].sort((a, b) => a - b);
  const windows = new Map<number, Told[]>();
  for (const read of reads) {
    if (read.queueState !== 'WAITING' || read.position === undefined) continue;
    const from = read.sentMs - CLOCK_SLACK_MS;
    const to = read.answeredMs + CLOCK_SLACK_MS;
    if (cuts.some((c) => c.from <= to && from <= c.to)) continue;
    if (admitted.some((at) => at >= from && at <= to)) continue;
    const key = marks.filter((at) => at < from).length;
    windows.set(key, [
      ...(windows.get(key) ?? []),
      { buyer: read.buyer, position: read.position, read },
    ]);
  }
  const places = journalPlaces(journal);
  const order = new Map<string, { before: number; told: [Told, Told] }>();
  const moved: string[] = [];
  const shared: string[] = [];
  const inverted: string[] = [];
  const unlike: string[] = [];
  const ids = new Set<number>();
  const compared = new Set<number>();
  for (const told of windows.values()) {
    const byBuyer = new Map<number, Told>();
    for (const t of told) {
      const known = byBuyer.get(t.buyer);
      if (!known) {
        byBuyer.set(t.buyer, t);
        continue;
      }
      compared.add(t.buyer);
      if (known.position === t.position) continue;
      moved.push(
        `${t.buyer} (${describe(known.read)} position ${known.position}, then ${describe(t.read)} position ${t.position})`,
      );
      ids.add(known.read.id).add(t.read.id);
    }
    const line = [...byBuyer.values()].sort((a, b) => a.position - b.position);
    for (const [i, a] of line.entries()) {
      for (const b of line.slice(i + 1)) {
        // Position 1 is also every place the head passed (ahead is never below 0).
        if (b.position === 1) continue;
        if (a.position === b.position) {
          shared.push(
            `${a.buyer} and ${b.buyer} both at position ${a.position} (${describe(a.read)}; ${describe(b.read)})`,
          );
          ids.add(a.read.id).add(b.read.id);
          continue;
        }
        const [low, high] = a.buyer < b.buyer ? [a, b] : [b, a];
        const key = `${low.buyer}:${high.buyer}`;
        const before = a === low ? 1 : -1;
        const seen = order.get(key);
        if (!seen) {
          order.set(key, { before, told: [a, b] });
        } else {
          compared.add(a.buyer).add(b.buyer);
          if (seen.before !== before) {
            inverted.push(
              `${seen.told[0].buyer} before ${seen.told[1].buyer} (positions ${seen.told[0].position} and ${seen.told[1].position}, at ${seen.told[0].read.sentMs} ms), then after (positions ${b.position} and ${a.position}, at ${a.read.sentMs} ms)`,
            );
            for (const t of [...seen.told, a, b]) ids.add(t.read.id);
            // One inversion a pair: the next window compares with the newest order.
            order.set(key, { before, told: [a, b] });
          }
        }
      }
    }
    for (const [i, a] of line.entries()) {
      const b = line[i + 1];
      if (!b || b.position === 1) continue;
      const pa = places.get(a.buyer);
      const pb = places.get(b.buyer);
      if (pa === undefined || pb === undefined || pa < pb) continue;
      unlike.push(
        `${a.buyer} told position ${a.position} ahead of ${b.buyer} at ${b.position} (${describe(a.read)}), the journal places them ${pa} and ${pb}`,
      );
      ids.add(a.read.id).add(b.read.id);
    }
  }
  judge.checked('queue-places-kept', compared.size);
  const problems = [
    [moved, 'buyers told two positions with no admission and no restore between'],
    [shared, 'pairs of buyers told one position at once'],
    [inverted, 'pairs of buyers told in one order, then in the other'],
    [
      unlike,
      "pairs of buyers told in another order than the MySQL journal's (its seed's shuffle, then arrival)",
    ],
  ] as const;
  for (const [found, what] of problems) {
    if (found.length === 0) continue;
    violate(`${found.length} ${what}: ${listed(found, (f) => f)}`, [...ids]);
  }
}
