// The workload for the whole run: buyers who double-click, retry after a 503 or a timeout (with
// the same Idempotency-Key when they use one), poll their result, then pay, cancel or let the
// order expire; and an operator who repairs a sale now and then. Every request and its answer
// go into the history.
import { setTimeout as sleep } from 'node:timers/promises';

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
/** A queue sale's buyer asks where they stand this often, this many times at most. */
const STANDING_POLL_MS = 250;
const STANDING_POLLS = 60;
/** The share of a queue sale's sessions that try to buy without ever joining. */
const OUTSIDER_SHARE = 0.15;

/** One kind of sale and how its buyers behave. */
export interface SaleProfile {
  name: 'big' | 'small' | 'returning' | 'queued';
  stock: number;
  stockShards: number;
  /** A queue sale: its buyers join, wait to be admitted, then buy. */
  queue?: { admitPerSecond: number; admissionTtlSeconds: number };
  /** How often a session picks this sale, against the others. */
  weight: number;
  /** What an accepted buyer does: pay, cancel, or (the rest) leave it to expire. */
  pay: number;
  cancel: number;
}

export interface Sale extends SaleProfile {
  goodsId: number;
}

/**
 * Four sales at once: a big one, a small one that sells out early, one restocked by cancels, and
 * a queue sale whose buyers wait to be admitted (some lapse, some try to buy around the queue).
 * The big one's stock is drawn: lasting the whole run, or selling out part way (a fault near its
 * last units is where stores that disagree turn an accepted purchase into a FAILED one).
 */
export function saleProfiles(minutes: number, rng: Rng): SaleProfile[] {
  const bigShare = rng.pick([0.25, 0.5, 1]);
  return [
    {
      name: 'big',
      stock: Math.round((150 + 250 * minutes) * bigShare),
      stockShards: 2,
      weight: 6,
      pay: 0.4,
      cancel: 0.2,
    },
    { name: 'small', stock: 12, stockShards: 1, weight: 1.5, pay: 0.9, cancel: 0.05 },
    { name: 'returning', stock: 10, stockShards: 1, weight: 2.5, pay: 0.1, cancel: 0.6 },
    {
      name: 'queued',
      stock: 15,
      stockShards: 1,
      weight: 2,
      pay: 0.5,
      cancel: 0.3,
      queue: { admitPerSecond: 4, admissionTtlSeconds: 5 },
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
}

interface Answer {
  status: number;
  body: unknown;
  code?: string;
}

export async function openSales(
  endpoint: Endpoint,
  adminToken: string,
  profiles: SaleProfile[],
): Promise<Sale[]> {
  const sales: Sale[] = [];
  for (const profile of profiles) {
    const goodsId = await createGoods(endpoint.baseUrl, adminToken, {
      name: `chaos ${profile.name}`,
      price: 1,
      stock: profile.stock,
      stockShards: profile.stockShards,
      ...(profile.queue ? { admission: 'queue' as const, ...profile.queue } : {}),
    });
    await preheatGoods(endpoint.baseUrl, adminToken, goodsId);
    sales.push({ ...profile, goodsId });
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
}

export class Workload {
  private stopping = false;
  private nextBuyer = 10_000;
  private readonly buyers = new Map<number, number[]>();
  private readonly tokens = new Map<number, string>();
  private sessions = 0;

  constructor(private readonly options: WorkloadOptions) {}

  /** `lanes` buyers at a time, the arriving crowd and the operator, until `stop()`. */
  async run(lanes: number, repairEveryMs: readonly [number, number]): Promise<void> {
    const lane = async () => {
      while (!this.stopping) await this.session();
    };
    await Promise.all([
      ...Array.from({ length: lanes }, lane),
      this.arrivals(),
      this.operator(repairEveryMs),
    ]);
  }

  /** New buyers at random times (a Poisson stream), up to MAX_ARRIVING at once. */
  private async arrivals(): Promise<void> {
    const arriving = new Set<Promise<void>>();
    while (!this.stopping) {
      await sleep((-Math.log(1 - this.rng.next()) * 1000) / ARRIVALS_PER_SECOND);
      if (this.stopping || arriving.size >= MAX_ARRIVING) continue;
      const session = this.session().finally(() => arriving.delete(session));
      arriving.add(session);
    }
    await Promise.all(arriving);
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

  private async session(): Promise<void> {
    this.sessions++;
    const sale = this.rng.weighted(this.options.sales.map((s) => [s, s.weight] as const));
    if (sale.queue && this.rng.chance(OUTSIDER_SHARE)) {
      // Never joins (and is never reused by a session that does): must never be sold to.
      await this.purchase(sale, this.nextBuyer++, this.endpoint(), { outsider: true });
      return;
    }
    const known = this.buyers.get(sale.goodsId) ?? [];
    // Now and then a buyer comes back: after a cancel to buy again, or to try a second time.
    const buyer =
      known.length > 0 && this.rng.chance(0.2) ? this.rng.pick(known) : this.newBuyer(sale);
    if (sale.queue && !(await this.waitForAdmission(sale, buyer))) return;
    const key = this.rng.chance(0.4) ? `chaos-${buyer}-${this.sessions}` : undefined;
    const timeoutMs = this.rng.chance(IMPATIENT_SHARE) ? IMPATIENT_TIMEOUT_MS : CLIENT_TIMEOUT_MS;
    let orderNo: string | undefined;
    for (let attempt = 0; attempt <= RETRIES && !this.stopping; attempt++) {
      const clicks = this.rng.chance(0.3) ? 2 : 1;
      const answers = await Promise.all(
        Array.from({ length: clicks }, () =>
          this.purchase(sale, buyer, this.endpoint(), { key, timeoutMs }),
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
    if (orderNo !== undefined && !this.stopping) await this.settle(sale, buyer, orderNo);
    await sleep(this.rng.int(20, 200));
  }

  /**
   * Joins the queue sale's waiting room and waits to be admitted: true once ADMITTED, false on a
   * final state (EXPIRED, SOLD_OUT, PURCHASED) or when the polls run out. A standing of
   * NOT_JOINED after a join (the waiting room lost with a Redis restart) joins again.
   */
  private async waitForAdmission(sale: Sale, buyer: number): Promise<boolean> {
    let joined = false;
    for (let poll = 0; poll < STANDING_POLLS && !this.stopping; poll++) {
      const op = joined ? 'queue' : 'join';
      const standing = await this.send(op, buyer, sale.goodsId, this.endpoint(), {
        method: joined ? 'GET' : 'POST',
        path: `/api/v1/seckill/${sale.goodsId}/queue`,
        headers: this.headers(buyer),
      });
      if (standing.status === 200) joined = standing.queueState !== 'NOT_JOINED';
      if (standing.queueState === 'ADMITTED') return true;
      if (['EXPIRED', 'SOLD_OUT', 'PURCHASED'].includes(standing.queueState ?? '')) return false;
      await sleep(STANDING_POLL_MS);
    }
    return false;
  }

  /** Pays, cancels or leaves the order to expire; now and then tries the other one after. */
  private async settle(sale: Sale, buyer: number, orderNo: string): Promise<void> {
    await sleep(this.rng.int(0, 500));
    const draw = this.rng.next();
    const first = draw < sale.pay ? 'pay' : draw < sale.pay + sale.cancel ? 'cancel' : undefined;
    if (first === undefined) return;
    await this.orderAction(first, sale, buyer, orderNo);
    if (this.rng.chance(0.05)) {
      await this.orderAction(first === 'pay' ? 'cancel' : 'pay', sale, buyer, orderNo);
    }
  }

  private async operator(everyMs: readonly [number, number]): Promise<void> {
    const admin = signToken({ userId: 1, admin: true, secret: this.options.jwtSecret });
    while (!this.stopping) {
      if (!(await this.pause(this.rng.int(...everyMs)))) return;
      const sale = this.rng.pick(this.options.sales);
      await this.send('repair', 1, sale.goodsId, this.endpoint(), {
        method: 'POST',
        path: `/api/v1/admin/goods/${sale.goodsId}/reconcile/repair`,
        headers: { authorization: `Bearer ${admin}` },
      });
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
    },
  ): Promise<HistoryEntry> {
    const { key, probe, outsider } = options;
    const headers = this.headers(buyer);
    if (key !== undefined) headers['idempotency-key'] = key;
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
      },
      (entry) => {
        if (key !== undefined) entry.idempotencyKey = key;
        if (probe) entry.probe = true;
        if (outsider) entry.outsider = true;
      },
    );
  }

  /** Polls the buyer's result until it is final (SUCCESS or FAILED) or the polls run out. */
  private async pollResult(sale: Sale, buyer: number): Promise<HistoryEntry | undefined> {
    let last: HistoryEntry | undefined;
    for (let poll = 0; poll < RESULT_POLLS && !this.stopping; poll++) {
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
    annotate?: (entry: HistoryEntry) => void,
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
    const requestId = requestIdOf(answer.body);
    if (requestId !== undefined) entry.requestId = requestId;
    if (op === 'result' && answer.status === 200 && isRecord(answer.body)) {
      if (typeof answer.body.status === 'string') entry.resultStatus = answer.body.status;
      if (typeof answer.body.orderNo === 'string') entry.orderNo = answer.body.orderNo;
      if (typeof answer.body.reason === 'string') entry.reason = answer.body.reason;
    }
    if ((op === 'join' || op === 'queue') && answer.status === 200 && isRecord(answer.body)) {
      if (typeof answer.body.state === 'string') entry.queueState = answer.body.state;
    }
    annotate?.(entry);
    this.options.history.record(entry);
    return entry;
  }
}

async function call(endpoint: Endpoint, request: HttpCall): Promise<Answer> {
  try {
    const response = await fetch(`${endpoint.baseUrl}${request.path}`, {
      method: request.method,
      headers: request.headers,
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
    return { status: response.status, body, ...(code === undefined ? {} : { code }) };
  } catch (error) {
    return { status: 0, body: undefined, code: describeError(error) };
  }
}
