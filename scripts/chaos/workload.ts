// The workload for the whole run: buyers who double-click, retry after a 503 or a timeout (with
// the same Idempotency-Key when they use one), poll their result, then pay, cancel or let the
// order expire; and an operator who repairs a sale now and then. Every request and its answer
// go into the history.
import { setTimeout as sleep } from 'node:timers/promises';

import { randomUUID } from 'node:crypto';
import { signatureHeader } from '../../src/common/webhook-signature.js';
import { RETRY_EARLY_MESSAGE } from '../../src/modules/overload/shed-overload.hook.js';
import { isRecord } from '../lib/http.js';
import { signToken } from '../lib/jwt.js';
import { buyerAddress, describeError } from '../lib/load.js';
import { createGoods, preheatGoods } from '../lib/sale.js';
import { purchaseOutcome, requestIdOf, type History, type HistoryEntry } from './history.js';
import type { Rng } from './random.js';

/** Longer than any wait the service itself allows (publish confirm, Redis command timeout). */
export const CLIENT_TIMEOUT_MS = 10_000;
/**
 * Some buyers give up sooner than the service answers under a fault: their purchases are the
 * unknown outcomes (the server may still take them) that the checker has to account for.
 */
const IMPATIENT_TIMEOUT_MS = 2_500;
const IMPATIENT_SHARE = 0.3;
const RESULT_POLL_MS = 300;
const RESULT_POLLS = 20;
const RETRIES = 2;
/**
 * Buyers who arrive whatever the others are doing (an open crowd, beside the lanes that wait for
 * their own results): when the consumer is slow the lanes all sit polling, and without these the
 * purchases would stop exactly while a slow batch is in flight.
 */
const ARRIVALS_PER_SECOND = 6;
const MAX_ARRIVING = 40;
/** A queue sale's buyer asks where they stand every 250–500 ms, for this long at most. */
const STANDING_POLL_MS: readonly [number, number] = [250, 500];
const STANDING_WAIT_MS = 60_000;
/** The share of a queue sale's sessions that try to buy without ever joining. */
const OUTSIDER_SHARE = 0.15;
/** Joined buyers who try to buy before their turn (403 NOT_ADMITTED, or not started yet). */
const EAGER_SHARE = 0.25;
/** Admitted buyers who never buy (their admissions lapse), and who think past their admission. */
const WALK_AWAY_SHARE = 0.2;
const SLOW_SHARE = 0.15;
/**
 * Of those who walk away, the share who come back once the admission has lapsed, this long past
 * it: they read the standing (EXPIRED, final) and try to buy all the same, as a script would.
 */
const COME_BACK_SHARE = 0.75;
const COME_BACK_AFTER_MS: readonly [number, number] = [2_000, 6_000];
/**
 * A queue sale's buyers arrive in a stream of their own: each may wait most of the run for a
 * turn, and would otherwise take the places of the lanes and of the crowd.
 */
const QUEUE_ARRIVALS_PER_SECOND = 2.5;
/** After the end, most of them stay away: a few still join or buy (refused SALE_ENDED). */
const AFTER_END_SHARE = 0.15;
const MAX_QUEUE_ARRIVING = 60;
/** From a queue sale's end, its joined buyers are asked this often until each standing is final. */
const END_WATCH_POLL_MS = 500;
/** Joins answered a little after the end: once none is untold this long after it, done. */
const END_WATCH_SETTLED_MS = 3_000;
/** After the heal, how long each joined buyer who was told nothing final yet is asked again. */
const TELL_WAIT_MS = 20_000;
const TELL_POLL_MS = 500;
const TELLING_AT_ONCE = 8;
/**
 * From the heal, for this long at most (within the quiet's wait, which takes longer), each joined
 * buyer still waiting is asked until answered once: a room Redis lost is restored by then, and
 * the places it tells are compared with those told before the loss (queue-places-kept).
 */
const AFTER_HEAL_WAIT_MS = 10_000;
/** After the quiet, a purchase or a result read is tried this often while it answers 503. */
const AFTER_QUIET_TRIES = 5;
const AFTER_QUIET_RETRY_MS = 500;

/**
 * A queue sale's waiting room, its times after the run's start (the queue opens at it). With
 * `draw`, a draw sale on the same room: entries (its joins) until the start, when it draws and
 * hands out the purchase rights (its admissions, unpaced, one per unit), each lasting
 * admissionTtlSeconds (its claimSeconds); a lapsed right or a returned unit passes down the list.
 */
export interface QueueProfile {
  admitPerSecond: number;
  admissionTtlSeconds: number;
  draw?: true;
  startInMs: number;
  /** null: an hour after the start, past the run. */
  endInMs: number | null;
}

/** One kind of sale and how its buyers behave. */
export interface SaleProfile {
  name: 'big' | 'small' | 'returning' | 'late' | 'queued' | 'drawn';
  stock: number;
  stockShards: number;
  /** The most one buyer may buy: its buyers ask for more than one unit now and then. */
  perUserLimit: number;
  /** A queue sale: its buyers join, wait to be admitted, then buy. */
  queue?: QueueProfile;
  /** How often a session picks this sale, against the others. */
  weight: number;
  /** What an accepted buyer does: pay, cancel, or (the rest) leave it to expire. */
  pay: number;
  cancel: number;
  /** Of the orders left to expire, the share the provider pays late (LATE_SHARE otherwise). */
  lateShare?: number;
}

export interface Sale extends SaleProfile {
  goodsId: number;
  startAtEpochMs: number;
  endAtEpochMs: number;
}

/**
 * Five sales at once: a big one, a small one that sells out early, one restocked by cancels, one
 * whose expired orders are paid late across buckets, and a queue sale whose buyers wait to be
 * admitted (some lapse, some try to buy around the queue).
 * The big one's stock is drawn: lasting the whole run, or selling out part way (a fault near its
 * last units is where stores that disagree turn an accepted purchase into a FAILED one). The
 * queue sale opens its waiting room at the run's start and starts 20–40 % into it, among the
 * faults, with buyers joining before and after; one seed in two it also ends inside the run
 * (its end among the faults too), so that every standing turning final at endAt is exercised.
 */
export function saleProfiles(minutes: number, rng: Rng): SaleProfile[] {
  const bigShare = rng.pick([0.25, 0.5, 1]);
  const durationMs = minutes * 60_000;
  const startInMs = Math.round(durationMs * rng.pick([0.2, 0.3, 0.4]));
  const endInMs = rng.chance(0.5)
    ? Math.round(startInMs + durationMs * rng.pick([0.3, 0.4, 0.45]))
    : null;
  return [
    {
      name: 'big',
      stock: Math.round((150 + 250 * minutes) * bigShare),
      stockShards: 2,
      perUserLimit: 2,
      weight: 6,
      pay: 0.4,
      cancel: 0.2,
    },
    {
      name: 'small',
      stock: 12,
      stockShards: 1,
      perUserLimit: 1,
      weight: 1.5,
      pay: 0.9,
      cancel: 0.05,
    },
    {
      name: 'returning',
      stock: 10,
      stockShards: 1,
      perUserLimit: 2,
      weight: 2.5,
      pay: 0.1,
      cancel: 0.6,
    },
    {
      // Orders left to expire and paid late, one unit per bucket: the units come back to their
      // buyers' home buckets and are bought again, so that a late payment often finds its home
      // bucket sold while another still has a unit.
      name: 'late',
      stock: 4,
      stockShards: 4,
      perUserLimit: 1,
      weight: 1.5,
      pay: 0.1,
      cancel: 0.1,
      lateShare: 0.8,
    },
    {
      name: 'queued',
      stock: 15,
      stockShards: 1,
      perUserLimit: 2,
      // Drawn by its own stream of arrivals (QUEUE_ARRIVALS_PER_SECOND), not against the others.
      weight: 0,
      pay: 0.5,
      cancel: 0.3,
      queue: { admitPerSecond: 4, admissionTtlSeconds: 3, startInMs, endInMs },
    },
    {
      // A draw: entries from the run's start until the queue sale's start, then the rights.
      name: 'drawn',
      stock: 8,
      stockShards: 1,
      perUserLimit: 1,
      weight: 0,
      pay: 0.4,
      cancel: 0.4,
      queue: { admitPerSecond: 0, admissionTtlSeconds: 4, startInMs, endInMs, draw: true },
    },
  ];
}

/** Where requests go: an instance that serves the API. */
export interface Endpoint {
  name: string;
  baseUrl: string;
}

interface HttpCall {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  timeoutMs?: number;
  body?: string;
}

interface Answer {
  status: number;
  body: unknown;
  code?: string;
  /** A 429's or 503's Retry-After, in seconds. */
  retryAfterS?: number;
}

export async function openSales(
  endpoint: Endpoint,
  adminToken: string,
  profiles: SaleProfile[],
): Promise<Sale[]> {
  const sales: Sale[] = [];
  // The run starts once the sales are open: a queue sale's times are counted from about then.
  const runStart = Date.now();
  for (const profile of profiles) {
    const { queue } = profile;
    const startAt = new Date(queue ? runStart + queue.startInMs : Date.now() - 1_000);
    const endAt = new Date(
      queue?.endInMs != null ? runStart + queue.endInMs : startAt.getTime() + 3_600_000,
    );
    const goodsId = await createGoods(endpoint.baseUrl, adminToken, {
      name: `chaos ${profile.name}`,
      price: 1,
      stock: profile.stock,
      stockShards: profile.stockShards,
      perUserLimit: profile.perUserLimit,
      startAt,
      endAt,
      ...(queue?.draw
        ? {
            admission: 'draw' as const,
            entriesOpenAt: new Date(runStart - 1_000),
            entriesCloseAt: startAt,
            claimSeconds: queue.admissionTtlSeconds,
            winnersFactor: 1,
          }
        : queue
          ? {
              admission: 'queue' as const,
              admitPerSecond: queue.admitPerSecond,
              admissionTtlSeconds: queue.admissionTtlSeconds,
              queueOpensAt: new Date(runStart - 1_000),
            }
          : {}),
    });
    await preheatGoods(endpoint.baseUrl, adminToken, goodsId);
    sales.push({
      ...profile,
      goodsId,
      startAtEpochMs: startAt.getTime(),
      endAtEpochMs: endAt.getTime(),
    });
  }
  return sales;
}

export interface WorkloadOptions {
  sales: Sale[];
  endpoints: Endpoint[];
  jwtSecret: string;
  rng: Rng;
  history: History;
  now: () => number;
  /** The wall clock at now() = 0. */
  startedAtEpochMs: number;
  /**
   * The provider's signing secret and the instances' payment timeout: most payments then come as
   * the provider's signed webhooks, some late. Without it the owners pay through their route.
   */
  payments?: { secret: string; paymentTimeoutMs: number };
}

/** Of the payments, the share the provider makes (the rest by the owner's route). */
const PROVIDER_SHARE = 0.7;
/** Of the orders left to expire, the share whose payment lands after the deadline. */
const LATE_SHARE = 0.35;
/** The price every chaos sale is created at (openSales), in minor units. */
const UNIT_AMOUNT = 100;

export class Workload {
  private stopping = false;
  private nextBuyer = 10_000;
  private readonly buyers = new Map<number, number[]>();
  private readonly tokens = new Map<number, string>();
  private sessions = 0;
  /** Per queue sale: the buyers a join answered in line (not NOT_JOINED), and those told a final standing. */
  private readonly joined = new Map<number, Set<number>>();
  private readonly toldFinal = new Map<number, Set<number>>();
  /** Late payments waiting for their order's deadline to pass. */
  private readonly late = new Set<Promise<void>>();

  /** The come-backs' own draws (COME_BACK_SHARE), apart from the run's stream. */
  private readonly lapseRng: Rng;

  constructor(private readonly options: WorkloadOptions) {
    this.lapseRng = options.rng.fork('come-back');
  }

  /** `lanes` buyers at a time, the arriving crowd and the operator, until `stop()`. */
  async run(lanes: number, repairEveryMs: readonly [number, number]): Promise<void> {
    const lane = async () => {
      while (!this.stopping) await this.session();
    };
    const queued = this.options.sales.filter((sale) => sale.queue);
    await Promise.all([
      ...Array.from({ length: lanes }, lane),
      this.arrivals(ARRIVALS_PER_SECOND, MAX_ARRIVING, () => this.session()),
      ...queued.map((sale) =>
        this.arrivals(QUEUE_ARRIVALS_PER_SECOND, MAX_QUEUE_ARRIVING, () => this.queueSession(sale)),
      ),
      ...queued.map((sale) => this.watchEnd(sale)),
      this.operator(repairEveryMs),
    ]);
    await Promise.all(this.late);
  }

  /** New sessions at random times (a Poisson stream), up to `most` at once. */
  private async arrivals(
    perSecond: number,
    most: number,
    session: () => Promise<void>,
  ): Promise<void> {
    const arriving = new Set<Promise<void>>();
    while (!this.stopping) {
      await sleep((-Math.log(1 - this.rng.next()) * 1000) / perSecond);
      if (this.stopping || arriving.size >= most) continue;
      const started = session().finally(() => arriving.delete(started));
      arriving.add(started);
    }
    await Promise.all(arriving);
  }

  /** A queue sale's run-relative end, when it falls inside the run. */
  private endInRunMs(sale: Sale): number | undefined {
    return sale.queue?.endInMs == null
      ? undefined
      : sale.endAtEpochMs - this.options.startedAtEpochMs;
  }

  /**
   * From a queue sale's end, asks every buyer who joined where they stand until each is told a
   * final standing (the checker's queue-final-at-end judges how soon).
   */
  private async watchEnd(sale: Sale): Promise<void> {
    const endMs = this.endInRunMs(sale);
    if (endMs === undefined || !(await this.pause(endMs - this.options.now()))) return;
    // Until the run stops: a fault may hold the standings back well past the end.
    while (!this.stopping) {
      const untold = await this.askUntold(sale);
      if (untold === 0 && this.options.now() > endMs + END_WATCH_SETTLED_MS) return;
      if (!(await this.pause(END_WATCH_POLL_MS))) return;
    }
  }

  /**
   * One standing read for each joined buyer not told a final one yet; with `rejoin`, a join for
   * one the room lost; with `buyLapsed`, a purchase by one told EXPIRED before the sale's end.
   */
  private async askUntold(sale: Sale, { rejoin = false, buyLapsed = false } = {}): Promise<number> {
    const told = this.toldFinal.get(sale.goodsId) ?? new Set<number>();
    const untold = [...(this.joined.get(sale.goodsId) ?? [])].filter((b) => !told.has(b));
    for (let i = 0; i < untold.length; i += TELLING_AT_ONCE) {
      await Promise.all(
        untold.slice(i, i + TELLING_AT_ONCE).map(async (buyer) => {
          const standing = await this.standing(sale, buyer, 'queue');
          // A Redis restarted empty lost the room: the buyer joins again to be told.
          if (rejoin && standing.queueState === 'NOT_JOINED' && standing.final !== true) {
            await this.standing(sale, buyer, 'join');
          }
          if (buyLapsed && standing.queueState === 'EXPIRED' && Date.now() < sale.endAtEpochMs) {
            await this.purchase(sale, buyer, this.endpoint(), {});
          }
        }),
      );
    }
    return untold.length;
  }

  /**
   * After the heal and the quiet: every buyer of a queue sale who joined and was told nothing
   * final is asked again, for a while, until told (every-waiting-told judges the sales that ended
   * or sold out for good; a sale still selling keeps its buyers waiting). One told EXPIRED while
   * the sale goes on tries to buy all the same, as a script would, with no fault left to excuse
   * a 202 (queue-admitted-purchase).
   */
  async tellEveryone(): Promise<void> {
    const until = this.options.now() + TELL_WAIT_MS;
    await Promise.all(
      this.options.sales
        .filter((sale) => sale.queue)
        .map(async (sale) => {
          while (
            this.options.now() < until &&
            (await this.askUntold(sale, { rejoin: true, buyLapsed: true })) > 0
          ) {
            await sleep(TELL_POLL_MS);
          }
        }),
    );
  }

  /**
   * From the heal, alongside the reopen's probes and the quiet's wait: every buyer of a queue sale
   * who joined and was told nothing final is asked where they stand until answered once (a room
   * being restored answers 503), for AFTER_HEAL_WAIT_MS at most.
   */
  async askAfterHeal(): Promise<void> {
    const until = this.options.now() + AFTER_HEAL_WAIT_MS;
    await Promise.all(
      this.options.sales
        .filter((sale) => sale.queue)
        .map(async (sale) => {
          const answered = new Set<number>();
          while (this.options.now() < until) {
            const told = this.toldFinal.get(sale.goodsId) ?? new Set<number>();
            const left = [...(this.joined.get(sale.goodsId) ?? [])].filter(
              (buyer) => !told.has(buyer) && !answered.has(buyer),
            );
            if (left.length === 0) return;
            for (let i = 0; i < left.length && this.options.now() < until; i += TELLING_AT_ONCE) {
              await Promise.all(
                left.slice(i, i + TELLING_AT_ONCE).map(async (buyer) => {
                  const standing = await this.standing(sale, buyer, 'queue');
                  if (standing.status === 200) answered.add(buyer);
                }),
              );
            }
            await sleep(TELL_POLL_MS);
          }
        }),
    );
  }

  /** A join or standing read: a draw sale's entry (its route), recorded as the queue's. */
  private standing(sale: Sale, buyer: number, op: 'join' | 'queue'): Promise<HistoryEntry> {
    return this.send(op, buyer, sale.goodsId, this.endpoint(), {
      method: op === 'join' ? 'POST' : 'GET',
      path: `/api/v1/seckill/${sale.goodsId}/${sale.queue?.draw ? 'entry' : 'queue'}`,
      headers: this.headers(buyer),
    });
  }

  stop(): void {
    this.stopping = true;
  }

  /** A purchase by a buyer of its own after the heal; true once the answer is a decided one. */
  async probe(sale: Sale, endpoint: Endpoint): Promise<HistoryEntry> {
    // A queue sale's probe never joins: its decided answer is NOT_ADMITTED (or SOLD_OUT).
    if (sale.queue)
      return this.purchase(sale, this.nextBuyer++, endpoint, { probe: true, outsider: true });
    return this.purchase(sale, this.newBuyer(sale), endpoint, { probe: true });
  }

  /**
   * After the quiet: a buyer of its own tries a sale both stores say has units (an open sale:
   * a queue sale sells only to the admitted), once per instance, retrying a 503 or no answer a
   * few times; what it bought is paid (no unit goes back to move the stores again).
   */
  async undersellProbe(
    sale: Sale,
    endpoint: Endpoint,
    units: { mysqlStock: number; redisStock: number },
    untilMs: number,
  ): Promise<HistoryEntry> {
    const buyer = this.newBuyer(sale);
    let answer: HistoryEntry | undefined;
    for (let attempt = 0; attempt < AFTER_QUIET_TRIES; attempt++) {
      if (attempt > 0 && this.options.now() >= untilMs) break;
      answer = await this.purchase(sale, buyer, endpoint, { undersell: units });
      if (answer.status !== 503 && answer.status !== 0) break;
      await sleep(AFTER_QUIET_RETRY_MS);
    }
    if (answer?.outcome !== 'refused') {
      const result = await this.pollResult(sale, buyer, false, untilMs);
      if (result?.resultStatus === 'SUCCESS' && result.orderNo) {
        await this.orderAction('pay', sale, buyer, result.orderNo);
      }
    }
    return answer!;
  }

  /**
   * After the quiet: for each buyer whose latest purchase of a sale was left unknown (no answer,
   * a 503 that carried its request id, a 5xx), the result is read until it answers (a few tries,
   * none started past `untilMs`): the checker's result-tells-truth judges it against the orders.
   */
  async readUnknownOutcomes(untilMs: number): Promise<number> {
    // The result tells of the latest purchase the stores heard of: one answered 202 or left
    // unknown (a refusal never reached them).
    const latest = new Map<string, HistoryEntry>();
    for (const entry of this.options.history.entries) {
      if (entry.op === 'purchase' && entry.outcome !== 'refused' && !entry.probe) {
        latest.set(`${entry.goodsId}:${entry.buyer}`, entry);
      }
    }
    const unknown = [...latest.values()].filter((entry) => entry.outcome === 'unknown');
    for (let i = 0; i < unknown.length; i += TELLING_AT_ONCE) {
      await Promise.all(
        unknown.slice(i, i + TELLING_AT_ONCE).map(async (purchase) => {
          for (let attempt = 0; attempt < AFTER_QUIET_TRIES; attempt++) {
            if (this.options.now() >= untilMs) return;
            const read = await this.send(
              'result',
              purchase.buyer,
              purchase.goodsId,
              this.endpoint(),
              {
                method: 'GET',
                path: `/api/v1/seckill/${purchase.goodsId}/result`,
                headers: this.headers(purchase.buyer),
              },
              (entry) => (entry.truthOf = purchase.id),
            );
            if (read.status === 200) return;
            await sleep(AFTER_QUIET_RETRY_MS);
          }
        }),
      );
    }
    return unknown.length;
  }

  /**
   * Once the stores were read: the operator repairs every sale once more. Redis and MySQL agree
   * by then unless a path lost or doubled a unit (repairs-find-no-drift judges what it found).
   */
  async repairEverySale(): Promise<void> {
    for (const sale of this.options.sales) await this.repair(sale);
  }

  private repair(sale: Sale): Promise<HistoryEntry> {
    return this.send('repair', 1, sale.goodsId, this.endpoint(), {
      method: 'POST',
      path: `/api/v1/admin/goods/${sale.goodsId}/reconcile/repair`,
      headers: { authorization: `Bearer ${this.adminToken}` },
    });
  }

  private get adminToken(): string {
    return signToken({ userId: 1, admin: true, secret: this.options.jwtSecret });
  }

  private get rng(): Rng {
    return this.options.rng;
  }

  private newBuyer(sale: Sale): number {
    const buyer = this.nextBuyer++;
    const known = this.buyers.get(sale.goodsId) ?? [];
    known.push(buyer);
    this.buyers.set(sale.goodsId, known);
    return buyer;
  }

  private endpoint(): Endpoint {
    return this.rng.pick(this.options.endpoints);
  }

  /** A buyer of an open sale (the queue sale has sessions of its own: queueSession). */
  private async session(): Promise<void> {
    this.sessions++;
    const open = this.options.sales.filter((s) => s.weight > 0);
    const sale = this.rng.weighted(open.map((s) => [s, s.weight] as const));
    await this.buy(sale, this.returningOrNew(sale));
    await sleep(this.rng.int(20, 200));
  }

  /** Now and then a buyer comes back: after a cancel to buy again, or to try a second time. */
  private returningOrNew(sale: Sale): number {
    const known = this.buyers.get(sale.goodsId) ?? [];
    return known.length > 0 && this.rng.chance(0.2) ? this.rng.pick(known) : this.newBuyer(sale);
  }

  /**
   * A queue sale's buyer: some never join and buy all the same (must never be sold to), the others
   * join (before the start: the pre-queue; after it: the line) and wait for their turn; some try
   * to buy before it, some walk away once admitted (the admission lapses; most of them come back
   * later, read EXPIRED and try all the same), some think past it and look at the page again.
   */
  private async queueSession(sale: Sale): Promise<void> {
    this.sessions++;
    const endMs = this.endInRunMs(sale);
    if (endMs !== undefined && this.options.now() > endMs && !this.rng.chance(AFTER_END_SHARE)) {
      return;
    }
    // A draw's entries close at its start: past it, the few who still come are refused
    // ENTRIES_CLOSED (or, having entered, read their standing and buy when they hold a right).
    if (
      sale.queue?.draw &&
      Date.now() >= sale.startAtEpochMs &&
      !this.rng.chance(AFTER_END_SHARE)
    ) {
      return;
    }
    if (this.rng.chance(OUTSIDER_SHARE)) {
      // Never joins (and is never reused by a session that does): must never be sold to.
      await this.purchase(sale, this.nextBuyer++, this.endpoint(), { outsider: true });
      return;
    }
    const buyer = this.returningOrNew(sale);
    const eager = this.rng.chance(EAGER_SHARE);
    if (!(await this.waitForAdmission(sale, buyer, eager))) return;
    const ttlMs = (sale.queue?.admissionTtlSeconds ?? 0) * 1000;
    if (this.rng.chance(WALK_AWAY_SHARE)) {
      // Drawn apart from the run's stream, so that the workload's other choices stay as they were.
      if (!this.lapseRng.chance(COME_BACK_SHARE)) return;
      const [from, to] = COME_BACK_AFTER_MS;
      await sleep(this.lapseRng.int(ttlMs + from, ttlMs + to));
      if (this.stopping) return;
      await this.standing(sale, buyer, 'queue');
      if (!this.stopping) await this.buy(sale, buyer);
      return;
    }
    const slow = this.rng.chance(SLOW_SHARE);
    await sleep(slow ? this.rng.int(ttlMs + 200, ttlMs + 2_000) : this.rng.int(50, 1_200));
    // The slow look at the page again first (its countdown may have run out), and click anyway.
    if (slow && !this.stopping) await this.standing(sale, buyer, 'queue');
    if (!this.stopping) await this.buy(sale, buyer);
  }

  /** One or two clicks, retries after a 503 or a timeout, the result polled, then pay or cancel. */
  private async buy(sale: Sale, buyer: number): Promise<void> {
    const key = this.rng.chance(0.4) ? `chaos-${buyer}-${this.sessions}` : undefined;
    // More than one unit now and then, where the sale allows it (the same on every retry: a key
    // is for one purchase).
    const quantity =
      sale.perUserLimit > 1 && this.rng.chance(0.3) ? this.rng.int(2, sale.perUserLimit) : 1;
    const timeoutMs = this.rng.chance(IMPATIENT_SHARE) ? IMPATIENT_TIMEOUT_MS : CLIENT_TIMEOUT_MS;
    let orderNo: string | undefined;
    for (let attempt = 0; attempt <= RETRIES && !this.stopping; attempt++) {
      const clicks = this.rng.chance(0.3) ? 2 : 1;
      const answers = await Promise.all(
        Array.from({ length: clicks }, () =>
          this.purchase(sale, buyer, this.endpoint(), { key, timeoutMs, quantity }),
        ),
      );
      const taken = answers.find((answer) => answer.outcome === 'taken');
      const unknown = answers.find((answer) => answer.outcome === 'unknown');
      if (taken || unknown) {
        // Ask what became of it (a 503 with a request id says to): the latest purchase's result.
        const result = await this.pollResult(sale, buyer);
        if (result?.resultStatus === 'SUCCESS') orderNo = result.orderNo;
        if (taken || orderNo) break;
      } else if (!answers.some((answer) => answer.status === 503 || answer.status === 0)) {
        break;
      }
      await sleep(this.rng.int(100, 500));
    }
    if (orderNo !== undefined && !this.stopping) await this.settle(sale, buyer, orderNo, quantity);
  }

  /**
   * Joins the queue sale's waiting room and waits to be admitted: true once ADMITTED, false on a
   * final standing, PURCHASED (the buyer holds one), a refused join (SALE_ENDED) or when the wait
   * runs out; a SOLD_OUT for now stays in line. A standing of NOT_JOINED after a join (the
   * waiting room lost with a Redis restart) joins again. An eager buyer tries to buy once or
   * twice while waiting: the deduct must refuse it (queue-admitted-purchase).
   */
  private async waitForAdmission(sale: Sale, buyer: number, eager: boolean): Promise<boolean> {
    let joined = false;
    let tries = eager ? this.rng.int(1, 2) : 0;
    const until = this.options.now() + STANDING_WAIT_MS;
    while (!this.stopping && this.options.now() < until) {
      const standing = await this.standing(sale, buyer, joined ? 'queue' : 'join');
      if (standing.status === 200) joined = standing.queueState !== 'NOT_JOINED';
      if (standing.queueState === 'ADMITTED') return true;
      if (standing.final === true || standing.queueState === 'PURCHASED') return false;
      if (standing.op === 'join' && standing.status === 409) return false;
      // Mostly once the sale has started (before it, the answer is SALE_NOT_STARTED).
      const started = Date.now() >= sale.startAtEpochMs;
      if (joined && tries > 0 && this.rng.chance(started ? 0.5 : 0.1)) {
        tries--;
        const attempt = await this.purchase(sale, buyer, this.endpoint(), {});
        // Admitted in between after all: it bought (the order is left to expire).
        if (attempt.status === 202) return false;
      }
      await sleep(this.rng.int(...STANDING_POLL_MS));
    }
    return false;
  }

  /** Pays, cancels or leaves the order to expire; now and then tries the other one after. */
  private async settle(sale: Sale, buyer: number, orderNo: string, quantity = 1): Promise<void> {
    await sleep(this.rng.int(0, 500));
    const draw = this.rng.next();
    const first = draw < sale.pay ? 'pay' : draw < sale.pay + sale.cancel ? 'cancel' : undefined;
    if (first === undefined) {
      if (this.options.payments && this.rng.chance(sale.lateShare ?? LATE_SHARE)) {
        this.payLate(sale, buyer, orderNo, quantity);
      }
      return;
    }
    await this.payOrCancel(first, sale, buyer, orderNo, quantity);
    if (this.rng.chance(0.05)) {
      await this.payOrCancel(first === 'pay' ? 'cancel' : 'pay', sale, buyer, orderNo, quantity);
    }
  }

  /** A payment by the provider's webhooks (mostly) or the owner's route; a cancel by the owner. */
  private async payOrCancel(
    action: 'pay' | 'cancel',
    sale: Sale,
    buyer: number,
    orderNo: string,
    quantity: number,
  ): Promise<void> {
    if (action === 'pay' && this.options.payments && this.rng.chance(PROVIDER_SHARE)) {
      await this.providerPay(sale, buyer, orderNo, quantity, false);
    } else {
      await this.orderAction(action, sale, buyer, orderNo);
    }
  }

  /** After the order's deadline (and a little), the provider's payment lands: a late one. */
  private payLate(sale: Sale, buyer: number, orderNo: string, quantity: number): void {
    const waitMs = this.options.payments!.paymentTimeoutMs + this.rng.int(0, 3_000);
    const task = (async () => {
      if (!(await this.pause(waitMs))) return;
      await this.providerPay(sale, buyer, orderNo, quantity, true);
    })().finally(() => this.late.delete(task));
    this.late.add(task);
  }

  /**
   * The provider's events for one payment: started (mostly) then succeeded, now and then in the
   * other order, now and then each sent twice (a lost acknowledgement).
   */
  private async providerPay(
    sale: Sale,
    buyer: number,
    orderNo: string,
    quantity: number,
    late: boolean,
  ) {
    const data = { orderNo, amount: UNIT_AMOUNT * quantity, currency: 'CNY' };
    const succeeded = { id: `evt_${randomUUID()}`, type: 'payment.succeeded' as const, data };
    const started = { id: `evt_${randomUUID()}`, type: 'payment.started' as const, data };
    let events = late || this.rng.chance(0.3) ? [succeeded] : [started, succeeded];
    if (this.rng.chance(0.2)) events = events.reverse();
    const twice = this.rng.chance(0.3);
    const sent = new Set<string>();
    for (const event of events) {
      // Each copy, as a provider does, sent again after a 503 or no answer (a few times).
      for (let copy = 0, tries = 0; copy < (twice ? 2 : 1) && tries < 6; tries++) {
        const body = JSON.stringify(event);
        const repeat = sent.has(event.id);
        sent.add(event.id);
        const answer = await this.send(
          'webhook',
          buyer,
          sale.goodsId,
          this.endpoint(),
          {
            method: 'POST',
            path: '/api/v1/payments/webhook',
            headers: {
              'content-type': 'application/json',
              'seckill-signature': signatureHeader([this.options.payments!.secret], body),
            },
            body,
          },
          (entry, answerBody) => {
            entry.orderNo = orderNo;
            const answered =
              entry.status === 200 && isRecord(answerBody) && typeof answerBody.status === 'string'
                ? answerBody.status
                : undefined;
            entry.webhook = {
              eventId: event.id,
              type: event.type,
              late,
              repeat,
              ...(answered === undefined ? {} : { answered }),
            };
          },
        );
        if (answer.status === 0 || answer.status >= 500) await sleep(1_000);
        else copy++;
      }
    }
  }

  private async operator(everyMs: readonly [number, number]): Promise<void> {
    while (!this.stopping) {
      if (!(await this.pause(this.rng.int(...everyMs)))) return;
      await this.repair(this.rng.pick(this.options.sales));
    }
  }

  /** Sleeps up to `ms`, waking early on stop; false when stopped. */
  private async pause(ms: number): Promise<boolean> {
    const until = this.options.now() + ms;
    while (!this.stopping && this.options.now() < until) await sleep(Math.min(250, ms));
    return !this.stopping;
  }

  private headers(buyer: number): Record<string, string> {
    let token = this.tokens.get(buyer);
    if (token === undefined) {
      token = signToken({ userId: buyer, secret: this.options.jwtSecret });
      this.tokens.set(buyer, token);
    }
    // An address per buyer, as behind a load balancer: the per-IP limit sees buyers apart.
    return { authorization: `Bearer ${token}`, 'x-forwarded-for': buyerAddress(buyer) };
  }

  private purchase(
    sale: Sale,
    buyer: number,
    endpoint: Endpoint,
    options: {
      key?: string | undefined;
      timeoutMs?: number;
      probe?: boolean;
      outsider?: boolean;
      quantity?: number;
      undersell?: { mysqlStock: number; redisStock: number };
    },
  ): Promise<HistoryEntry> {
    const { key, probe, outsider, undersell, quantity = 1 } = options;
    const headers = this.headers(buyer);
    if (key !== undefined) headers['idempotency-key'] = key;
    if (quantity > 1) headers['content-type'] = 'application/json';
    return this.send(
      'purchase',
      buyer,
      sale.goodsId,
      endpoint,
      {
        method: 'POST',
        path: `/api/v1/seckill/${sale.goodsId}`,
        headers,
        timeoutMs: options.timeoutMs ?? CLIENT_TIMEOUT_MS,
        ...(quantity > 1 ? { body: JSON.stringify({ quantity }) } : {}),
      },
      (entry) => {
        if (key !== undefined) entry.idempotencyKey = key;
        if (quantity > 1) entry.quantity = quantity;
        if (probe) entry.probe = true;
        if (outsider) entry.outsider = true;
        if (undersell) entry.undersell = undersell;
      },
    );
  }

  /** Polls the buyer's result until it is final (SUCCESS or FAILED) or the polls run out. */
  private async pollResult(
    sale: Sale,
    buyer: number,
    untilStopped = true,
    untilMs = Number.POSITIVE_INFINITY,
  ): Promise<HistoryEntry | undefined> {
    let last: HistoryEntry | undefined;
    for (let poll = 0; poll < RESULT_POLLS && !(untilStopped && this.stopping); poll++) {
      if (poll > 0 && this.options.now() >= untilMs) break;
      last = await this.send('result', buyer, sale.goodsId, this.endpoint(), {
        method: 'GET',
        path: `/api/v1/seckill/${sale.goodsId}/result`,
        headers: this.headers(buyer),
      });
      if (last.resultStatus === 'SUCCESS' || last.resultStatus === 'FAILED') return last;
      if (last.resultStatus === 'NONE') return last;
      await sleep(RESULT_POLL_MS);
    }
    return last;
  }

  private orderAction(
    action: 'pay' | 'cancel',
    sale: Sale,
    buyer: number,
    orderNo: string,
  ): Promise<HistoryEntry> {
    return this.send(
      action,
      buyer,
      sale.goodsId,
      this.endpoint(),
      { method: 'POST', path: `/api/v1/orders/${orderNo}/${action}`, headers: this.headers(buyer) },
      (entry) => (entry.orderNo = orderNo),
    );
  }

  private async send(
    op: HistoryEntry['op'],
    buyer: number,
    goodsId: number,
    endpoint: Endpoint,
    request: HttpCall,
    annotate?: (entry: HistoryEntry, body: unknown) => void,
  ): Promise<HistoryEntry> {
    const id = this.options.history.take();
    const sentMs = this.options.now();
    const answer = await call(endpoint, request);
    const entry: HistoryEntry = {
      id,
      op,
      buyer,
      goodsId,
      instance: endpoint.name,
      sentMs: Math.round(sentMs),
      answeredMs: Math.round(this.options.now()),
      status: answer.status,
      outcome:
        op === 'purchase'
          ? purchaseOutcome(answer.status, answer.code, answer.body)
          : answer.status === 200
            ? 'taken'
            : answer.status === 0 || answer.status >= 500
              ? 'unknown'
              : 'refused',
    };
    if (answer.code !== undefined) entry.code = answer.code;
    // A new wait only: a buyer back early is told the time left of the first, rounded up.
    if (
      op === 'purchase' &&
      answer.code === 'OVERLOADED' &&
      answer.retryAfterS !== undefined &&
      !(isRecord(answer.body) && answer.body.message === RETRY_EARLY_MESSAGE)
    ) {
      entry.retryAfterS = answer.retryAfterS;
    }
    const requestId = requestIdOf(answer.body);
    if (requestId !== undefined) entry.requestId = requestId;
    if (op === 'result' && answer.status === 200 && isRecord(answer.body)) {
      if (typeof answer.body.status === 'string') entry.resultStatus = answer.body.status;
      if (typeof answer.body.orderNo === 'string') entry.orderNo = answer.body.orderNo;
      if (typeof answer.body.reason === 'string') entry.reason = answer.body.reason;
    }
    if (op === 'repair' && answer.status === 200 && isRecord(answer.body)) {
      const found = answer.body.found;
      if (isRecord(found) && typeof found.drifted === 'boolean') entry.drifted = found.drifted;
    }
    if ((op === 'join' || op === 'queue') && answer.status === 200 && isRecord(answer.body)) {
      const body = this.isDraw(goodsId) ? asQueueAnswer(answer.body) : answer.body;
      if (typeof body.state === 'string') entry.queueState = body.state;
      if (typeof body.final === 'boolean') entry.final = body.final;
      if (typeof body.position === 'number') entry.position = body.position;
      const until = typeof body.admittedUntil === 'string' ? Date.parse(body.admittedUntil) : NaN;
      if (Number.isFinite(until)) entry.admittedUntilEpochMs = until;
      const receipt = body.receipt;
      if (
        op === 'join' &&
        isRecord(receipt) &&
        typeof receipt.pseudonym === 'string' &&
        typeof receipt.seedCommitment === 'string'
      ) {
        entry.receipt = {
          joinIndex: typeof receipt.joinIndex === 'number' ? receipt.joinIndex : null,
          pseudonym: receipt.pseudonym,
          seedCommitment: receipt.seedCommitment,
        };
      }
      if (op === 'join' && entry.queueState !== 'NOT_JOINED') this.noteOf(this.joined, entry);
      if (entry.final === true) this.noteOf(this.toldFinal, entry);
    }
    annotate?.(entry, answer.body);
    this.options.history.record(entry);
    return entry;
  }

  private isDraw(goodsId: number): boolean {
    return this.options.sales.some((sale) => sale.goodsId === goodsId && sale.queue?.draw);
  }

  private noteOf(sets: Map<number, Set<number>>, entry: HistoryEntry): void {
    const set = sets.get(entry.goodsId) ?? new Set<number>();
    set.add(entry.buyer);
    sets.set(entry.goodsId, set);
  }
}

/** A draw entry's state as the waiting room's (the draw's room is the queue's engine). */
const QUEUE_STATE_OF_ENTRY: Record<string, string> = {
  NOT_ENTERED: 'NOT_JOINED',
  ENTERED: 'WAITING',
  WAITLISTED: 'WAITING',
  SELECTED: 'ADMITTED',
  NOT_SELECTED: 'SOLD_OUT',
  PURCHASED: 'PURCHASED',
  EXPIRED: 'EXPIRED',
};

/**
 * An entry's answer as a queue standing, so that every waiting-room invariant judges the draw
 * too: SELECTED is an admission in force (rightUntil its end), WAITLISTED a place in line (its
 * position the entries ahead plus one), NOT_SELECTED a final SOLD_OUT. The entry's own state is
 * kept beside it.
 */
export function asQueueAnswer(body: Record<string, unknown>): Record<string, unknown> {
  const state = typeof body.state === 'string' ? body.state : undefined;
  return {
    ...body,
    entryState: state,
    state: state === undefined ? undefined : (QUEUE_STATE_OF_ENTRY[state] ?? state),
    position: typeof body.ahead === 'number' ? body.ahead + 1 : null,
    admittedUntil: body.rightUntil,
  };
}

async function call(endpoint: Endpoint, request: HttpCall): Promise<Answer> {
  try {
    const response = await fetch(`${endpoint.baseUrl}${request.path}`, {
      method: request.method,
      headers: request.headers,
      ...(request.body === undefined ? {} : { body: request.body }),
      signal: AbortSignal.timeout(request.timeoutMs ?? CLIENT_TIMEOUT_MS),
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = text;
    }
    const code = isRecord(body) && typeof body.code === 'string' ? body.code : undefined;
    const retryAfterS = Number(response.headers.get('retry-after') ?? NaN);
    return {
      status: response.status,
      body,
      ...(code === undefined ? {} : { code }),
      ...(Number.isFinite(retryAfterS) ? { retryAfterS } : {}),
    };
  } catch (error) {
    return { status: 0, body: undefined, code: describeError(error) };
  }
}
