// Liveness during the run, per instance: an instance that stops deciding a sale's purchases while
// another instance goes on deciding them is stuck on something of its own (a connection gone
// silent, a client that never reconnects), which the end-of-run reopen can miss when a later fault
// happens to unstick it, or when it is stuck on one sale of several.
import type { HistoryEntry } from './history.js';
import type { FaultSpan } from './queue-checks.js';
import { decided } from './settle.js';

/** An instance may decide none of a sale's purchases for this long beside a peer that does. */
export const KEEP_UP_BOUND_MS = 20_000;
/**
 * After a fault on the instance itself (its process, its links, its slow steps) ends: its
 * reconnects, a restarted process's boot, its sales identified again. Past this it must keep up.
 */
export const OWN_FAULT_GRACE_MS = 20_000;
/** A peer deciding throughout: no gap between its decided answers longer than this. */
const PEER_GAP_MS = 5_000;
const STEP_MS = 1_000;

/** An instance that decided none of a sale's purchases from `fromMs` to `toMs` while a peer did. */
export interface Lag {
  instance: string;
  goodsId: number;
  /** The peer that decided that sale's purchases throughout. */
  peer: string;
  fromMs: number;
  toMs: number;
  /** The instance's purchases of that sale sent meanwhile: none decided. */
  asked: number;
  /** The last of them, as answered. */
  lastAnswer: string;
  historyIds: number[];
}

interface Track {
  decidedAt: number[];
  /** The purchases not decided, by when they were sent. */
  asked: HistoryEntry[];
  askedAt: number[];
}

/** Sorted numbers: how many are below `value`. */
function below(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle] < value) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Decided answers from `from` to `to` with no gap (the ends included) longer than the peer gap. */
function decidingThroughout(decidedAt: readonly number[], from: number, to: number): boolean {
  let last = from;
  for (let index = below(decidedAt, from); index < decidedAt.length; index++) {
    const at = decidedAt[index];
    if (at > to) break;
    if (at - last > PEER_GAP_MS) return false;
    last = at;
  }
  return to - last <= PEER_GAP_MS;
}

const describe = (entry: HistoryEntry) =>
  `#${entry.id} ${entry.status || 'no answer'}${entry.code ? ` ${entry.code}` : ''} at ${entry.sentMs} ms`;

/**
 * Every stretch of at least the bound in which an instance, asked to buy a sale, decided none of
 * its purchases while a peer decided that sale's throughout, away from the faults on the instance
 * itself (or on every instance) and their grace. A fault on a shared engine (Redis, the broker,
 * the database) is no excuse there: the peer shows the engine answering.
 */
export function lagsBehindPeers(
  history: readonly HistoryEntry[],
  faults: readonly FaultSpan[],
): Lag[] {
  const tracks = new Map<number, Map<string, Track>>();
  for (const entry of history) {
    if (entry.op !== 'purchase') continue;
    const bySale = tracks.get(entry.goodsId) ?? new Map<string, Track>();
    tracks.set(entry.goodsId, bySale);
    const track = bySale.get(entry.instance) ?? { decidedAt: [], asked: [], askedAt: [] };
    bySale.set(entry.instance, track);
    if (decided(entry)) track.decidedAt.push(entry.answeredMs);
    else track.asked.push(entry);
  }
  const lags: Lag[] = [];
  for (const [goodsId, bySale] of tracks) {
    for (const track of bySale.values()) {
      track.decidedAt.sort((a, b) => a - b);
      track.asked.sort((a, b) => a.sentMs - b.sentMs);
      track.askedAt = track.asked.map((entry) => entry.sentMs);
    }
    for (const [instance, track] of bySale) {
      const excused = faults
        .filter((fault) => fault.instance === instance || fault.instance === 'all')
        .map((fault) => [fault.from, fault.to + OWN_FAULT_GRACE_MS] as const);
      const peers = [...bySale].filter(([name]) => name !== instance);
      const end = Math.max(track.askedAt.at(-1) ?? 0, track.decidedAt.at(-1) ?? 0);
      let open: Lag | undefined;
      for (let to = KEEP_UP_BOUND_MS; to <= end; to += STEP_MS) {
        const from = to - KEEP_UP_BOUND_MS;
        const lagging =
          below(track.decidedAt, to + 1) === below(track.decidedAt, from) &&
          !excused.some(([start, stop]) => start <= to && from <= stop) &&
          below(track.askedAt, to + 1) > below(track.askedAt, from);
        const peer = lagging
          ? peers.find(([, other]) => decidingThroughout(other.decidedAt, from, to))
          : undefined;
        if (peer && open && from <= open.toMs) {
          open.toMs = to;
          continue;
        }
        if (open) lags.push(open);
        open = peer
          ? {
              instance,
              goodsId,
              peer: peer[0],
              fromMs: from,
              toMs: to,
              asked: 0,
              lastAnswer: '',
              historyIds: [],
            }
          : undefined;
      }
      if (open) lags.push(open);
    }
  }
  for (const lag of lags) {
    const track = tracks.get(lag.goodsId)!.get(lag.instance)!;
    const asked = track.asked.slice(
      below(track.askedAt, lag.fromMs),
      below(track.askedAt, lag.toMs + 1),
    );
    lag.asked = asked.length;
    lag.lastAnswer = asked.length > 0 ? describe(asked.at(-1)!) : 'none';
    lag.historyIds = asked.slice(-5).map((entry) => entry.id);
  }
  return lags.sort((a, b) => a.fromMs - b.fromMs);
}
