// The checker: after the heal, is the history of answers allowed by the promises, given what the
// stores hold? Pure: a history and a snapshot in, each invariant's verdict out, every violation
// named with the request ids it is about.
import { LAST_ORDER_EVENT, ORDER_EVENT_PATHS } from '../fake-provider/order-events.js';
import type { HistoryEntry } from './history.js';
import { lagsBehindPeers } from './keep-up.js';
import { checkQueues, type FaultSpan, type QueueFacts } from './queue-checks.js';

export type OrderStatus = 'PENDING_PAYMENT' | 'PAID' | 'CANCELLED' | 'REFUND_REQUIRED';

/** A provider event the shop recorded (seckill_payment_event). */
export interface PaymentEventRow {
  orderNo: string;
  type: string;
  outcome: string;
}

/** A merchant event in the outbox (seckill_merchant_event), in the order it was written. */
export interface MerchantEventRow {
  eventId: string;
  orderNo: string;
  type: string;
  delivered: boolean;
  parked: boolean;
  /** When the change it tells committed (the app's clock, the machine's). */
  atEpochMs?: number;
}

export interface OrderRow {
  orderNo: string;
  requestId: string;
  userId: number;
  quantity: number;
  status: OrderStatus;
  /** When its row was written (MySQL's clock, the machine's). */
  createdAtEpochMs: number;
  /** When its row last changed: for a CANCELLED order, when it was cancelled. */
  updatedAtEpochMs: number;
}

/**
 * A point, as an app instance logged it, after which MySQL is trusted to hold every order
 * accepted before: a sale opened to the database fallback (for that goods, every 202 answered
 * before the opening), or an order barrier passed for a rebuild from MySQL (for every goods,
 * every 202 answered before the barrier opened).
 */
export interface OrdersWrittenPoint {
  kind: 'fallback' | 'rebuild';
  instance: string;
  /** The fallback's goods; a barrier covers every goods. */
  goodsId?: number;
  /** 202s answered before this are covered. */
  coversEpochMs: number;
  /** When MySQL was trusted: their orders must be written by then. */
  atEpochMs: number;
}

/** One sale's state once the run went quiet, read straight from MySQL and Redis. */
export interface SaleSnapshot {
  goodsId: number;
  name: string;
  totalStock: number;
  mysqlStock: number;
  orders: OrderRow[];
  /** Over every bucket; null when Redis does not hold the sale. */
  redisStock: number | null;
  /** userId -> quantity Redis holds as bought, over every bucket. */
  redisBuyers: Record<string, number>;
  /** Order numbers Redis has given back (every bucket's restocked set). */
  restocked: string[];
  /** Order numbers paid late whose unit Redis took again (every bucket's retaken hash). */
  retaken?: string[];
  /** The provider's events the shop recorded for the sale. */
  paymentEvents?: PaymentEventRow[];
  /** The sale's order events in the merchant's outbox. */
  merchantEvents?: MerchantEventRow[];
  /** The reconcile route's answer (no repair run before it); null when it could not be read. */
  reconcile: { consistent: boolean } | null;
  /** The sale's endAt had passed when the stores were read. */
  ended?: boolean;
}

export interface StoreSnapshot {
  sales: SaleSnapshot[];
  /** Messages in the dead-letter queue: the run poisons none. */
  deadLetters: number;
  /** Whether queues, outbox and in-flight emptied and every order settled after the heal. */
  quiet: { reached: boolean; waitedMs: number; last: string };
}

/** How long after the heal a sale answered a purchase on an instance with a decided answer. */
export interface Reopen {
  goodsId: number;
  instance: string;
  /** null: not within the bound. */
  ms: number | null;
  answer: string;
}

export interface Liveness {
  boundMs: number;
  reopens: Reopen[];
}

/** A channel of an app instance the broker closed, other than the ones the nemesis broke. */
export interface BrokerChannelClose {
  atMs: number;
  instance: string;
  channel: number;
  code: number;
  text: string;
}

export interface CheckInput {
  history: readonly HistoryEntry[];
  snapshot: StoreSnapshot;
  liveness: Liveness;
  brokerCloses: readonly BrokerChannelClose[];
  /** The wall clock at the run's start: order numbers carry their acceptance time on it. */
  startedAtEpochMs: number;
  writtenPoints: readonly OrdersWrittenPoint[];
  /** The queue sales' times, admissions log and rooms (scripts/chaos/queue-checks.ts). */
  queue?: QueueFacts;
  /** The faults as played (ms since the start): what may explain a repair's finding. */
  faults?: readonly FaultSpan[];
  /** The order events the run's shop received (each once, by id); absent: no shop in the run. */
  merchantReceived?: readonly { id: string; orderNo: string; type: string }[];
}

export const INVARIANTS = {
  'accepted-is-one-order':
    'every 202 and every SUCCESS result has exactly one order with its request id (the order the result named)',
  'accepted-never-failed':
    'no purchase answered 202 ends FAILED, and no FAILED result is for a purchase that became an order',
  'refused-took-nothing':
    'every order comes from a purchase answered 202 or left unknown (a timeout, a 503 with a request id): none from one answered "nothing taken" (503, 409, 429, 403…)',
  'shed-retry-after-kept':
    'no instance takes (202) a purchase from a buyer it shed before the Retry-After it told them had passed (unless it was killed and started again in between: the wait is held in its memory)',
  'written-before-fallback':
    'a sale opens to the database fallback only once every order it accepted before is written (its barrier passed on them)',
  'written-before-rebuild':
    'an order barrier a rebuild waits on passes only once every order accepted before it opened is written',
  'no-oversell':
    "a sale's active orders hold at most its stock, and at no moment were more units told taken (202, until the order's cancel) than its stock",
  'no-sale-around-the-queue':
    'a queue sale sells to nobody who never joined its waiting room (no 202, no order)',
  'queue-admitted-purchase':
    'a queue sale accepts (202) only a buyer it admitted: the last standing read before said ADMITTED, or the room holds an admission given before the answer; none after the buyer read EXPIRED, nor well past the admittedUntil it read',
  'queue-final-at-end':
    "at a queue sale's end every buyer who joined is told a final standing within 5 s (plus the faults held then); after it no standing is ADMITTED or otherwise not final, no purchase is accepted, and no admission read before it lasts past it",
  'queue-pace':
    "no 1,000 ms holds more than a queue sale's admitPerSecond admissions (its admissions log, sampled)",
  'queue-admission-order':
    "a queue sale admits its places in the drawn order: every buyer the room admitted (in force, used or lapsed) comes before, in the journal's permutation, every placed buyer it has not",
  'every-waiting-told':
    'once a queue sale ended or sold out for good, every buyer who joined and bought nothing was told a final standing by the end of the settle phase',
  'queue-places-kept':
    "no joiner's place is lost or changed, across a Redis restart too: a buyer answered 200 on a join never reads NOT_JOINED and is in the MySQL journal, the order the buyers are told never inverts and is the journal's, Redis's seed is always MySQL's, and no ADMITTED follows an EXPIRED or an order",
  'queue-draw-verifiable':
    "a queue sale's draw checks out from the outside: the revealed secret is the one every join receipt was told the commitment of, the operator's export hashes to the published digest and holds every receipt's join at its index, and every admission in it was given at the place the seed draws (npm run verify-draw's arithmetic)",
  'one-active-order-per-buyer':
    'no buyer holds two active orders of one sale, and none is answered 202 while holding an active order of it',
  'mysql-stock-balances': 'MySQL stock + active quantity = total stock',
  'redis-matches-mysql':
    "Redis remaining = MySQL stock, and Redis's buyers are exactly the active orders' buyers",
  'reconcile-consistent': 'the reconcile route says consistent, without a repair run first',
  'repairs-find-no-drift':
    "an operator's repair finds Redis agreeing with MySQL (its confirmed reading, before it rewrites Redis), unless a fault on Redis or its links, or one that stops a purchase between its writes, explains the drift",
  'no-undersell':
    'once quiet, a sale both stores say has units sells one to a new buyer on every instance (202, never SOLD_OUT)',
  'result-tells-truth':
    "once quiet, the result of a buyer's latest purchase left unknown (no answer, a 503 with its request id, a 5xx) tells the truth: SUCCESS naming the order it became, or, with none, never QUEUED nor SUCCESS for its request",
  'paid-stays-paid':
    "an order paid (200) stays PAID; one cancelled (200) stays CANCELLED unless a payment landed late after it (taken again, or to refund); a provider's event answered 200 leaves its order in the status it answered, or a later one",
  'paid-only-by-payment':
    "no order is PAID without a payment.succeeded the shop applied (or its owner's pay route), none REFUND_REQUIRED without a late one; every repeat of an event is answered as its first delivery",
  'late-payment-never-oversold':
    'a payment after the cancel takes a unit again only where one was left: every retaken order is PAID and counted in Redis as taken (never given back), every refunded one holds nothing',
  'late-payment-refunded-only-when-none-left':
    'a late payment is refunded only when its buyer held another purchase or no bucket of the sale had a unit for it: never while units stood free, counting every order from its acceptance to a while after its cancel and every purchase that became none as held',
  'merchant-events-delivered':
    "once quiet, every order event in the outbox reached the shop once (by id), each order's in the order written, on a path the state machine allows, the last one its final status",
  'stock-back-once':
    'every cancelled, expired or refunded order is given back in Redis (once: its number marked), no active one is unless a late payment took its unit again',
  'sales-reopen': 'after the heal, every sale answers purchases on every instance within the bound',
  'instances-keep-up':
    "while one instance decides a sale's purchases, every instance asked to does too: none decides none of them for 20 s beside a peer deciding them throughout, away from the faults on itself (and 20 s after them)",
  'no-dead-letters': 'no message waits in the dead-letter queue (the run poisons none)',
  'sales-quiet': 'after the heal, queues, outbox and in-flight empty and every order settles',
  'no-channel-errors':
    'the broker closed no channel of the app but those the run broke (a 406 is a delivery settled twice)',
} as const;

export type InvariantName = keyof typeof INVARIANTS;

export interface Violation {
  invariant: InvariantName;
  message: string;
  /** The purchases' server-made ids it is about. */
  requestIds: string[];
  /** The history entries it is about. */
  historyIds: number[];
  goodsId?: number;
  /** When it happened (ms since the start), where known: the report shows the faults around it. */
  atMs?: number;
}

export interface InvariantResult {
  name: InvariantName;
  description: string;
  checked: number;
  violations: Violation[];
}

export interface CheckReport {
  invariants: InvariantResult[];
  /** Purchases of unknown outcome (timeouts, resets, 503 with a request id), and how they ended. */
  unknown: { total: number; taken: number; notTaken: number };
  ok: boolean;
}

/** An order accepted on the wall clock may show up to this much before its request was sent. */
const CLOCK_SLACK_MS = 50;
const ACTIVE: ReadonlySet<OrderStatus> = new Set(['PENDING_PAYMENT', 'PAID']);
const MAX_LISTED = 10;

/** The acceptance time an order number carries (`SK<epoch ms><hex>`). */
export function acceptedAtEpochMs(orderNo: string): number | undefined {
  const match = /^SK(\d{13})/.exec(orderNo);
  return match ? Number(match[1]) : undefined;
}

class Tally {
  readonly results = new Map<InvariantName, InvariantResult>();

  constructor() {
    for (const [name, description] of Object.entries(INVARIANTS) as [InvariantName, string][]) {
      this.results.set(name, { name, description, checked: 0, violations: [] });
    }
  }

  checked(name: InvariantName, count = 1): void {
    this.results.get(name)!.checked += count;
  }

  violate(violation: Violation): void {
    this.results.get(violation.invariant)!.violations.push(violation);
  }
}

const describeAnswer = (entry: HistoryEntry) =>
  `#${entry.id} ${entry.status || 'no answer'}${entry.code ? ` ${entry.code}` : ''} at ${entry.sentMs} ms on ${entry.instance}`;

export function check(input: CheckInput): CheckReport {
  const tally = new Tally();
  const unknown = checkPurchases(input, tally);
  for (const sale of input.snapshot.sales) checkSale(sale, tally);
  checkOrderActions(input, tally);
  checkPayments(input, tally);
  checkMerchantEvents(input, tally);
  checkRefunds(input, tally);
  checkQueueOutsiders(input, tally);
  if (input.queue) {
    checkQueues(
      {
        history: input.history,
        queue: input.queue,
        sales: input.snapshot.sales,
        quietReached: input.snapshot.quiet.reached,
        startedAtEpochMs: input.startedAtEpochMs,
      },
      tally,
    );
  }
  checkWrittenPoints(input, tally);
  checkToldTaken(input, tally);
  checkRepairs(input, tally);
  checkAfterQuiet(input, tally);
  checkLiveness(input, tally);
  checkChannels(input, tally);
  const invariants = [...tally.results.values()];
  return {
    invariants,
    unknown,
    ok: invariants.every((invariant) => invariant.violations.length === 0),
  };
}

/** The answers against the orders: nothing promised is lost, nothing refused was taken. */
function checkPurchases(input: CheckInput, tally: Tally): CheckReport['unknown'] {
  const orders = new Map<string, OrderRow[]>();
  for (const sale of input.snapshot.sales) {
    for (const order of sale.orders) {
      orders.set(order.requestId, [...(orders.get(order.requestId) ?? []), order]);
    }
  }
  const purchases = input.history.filter((entry) => entry.op === 'purchase');
  const promised = new Map<string, HistoryEntry>();
  for (const entry of purchases) {
    if (entry.outcome === 'taken' && entry.requestId && !promised.has(entry.requestId)) {
      promised.set(entry.requestId, entry);
    }
  }

  for (const [requestId, entry] of promised) {
    tally.checked('accepted-is-one-order');
    const found = orders.get(requestId) ?? [];
    if (found.length !== 1) {
      tally.violate({
        invariant: 'accepted-is-one-order',
        message: `purchase ${describeAnswer(entry)} by buyer ${entry.buyer} was answered 202 and has ${found.length} orders`,
        requestIds: [requestId],
        historyIds: [entry.id],
        goodsId: entry.goodsId,
        atMs: entry.sentMs,
      });
    }
  }
  for (const entry of purchases) {
    if (entry.outcome !== 'refused' || !entry.requestId) continue;
    tally.checked('refused-took-nothing');
    if (!orders.has(entry.requestId)) continue;
    tally.violate({
      invariant: 'refused-took-nothing',
      message: `purchase ${describeAnswer(entry)} by buyer ${entry.buyer} said nothing was taken, and its request has an order`,
      requestIds: [entry.requestId],
      historyIds: [entry.id],
      goodsId: entry.goodsId,
      atMs: entry.sentMs,
    });
  }
  checkRetryAfterKept(input, tally);
  // A 202 whose result was read SUCCESS is one that did not end FAILED (a FAILED result is
  // judged below).
  const readFinal = new Set(
    input.history
      .filter((e) => e.op === 'result' && e.requestId && e.resultStatus === 'SUCCESS')
      .map((e) => e.requestId),
  );
  tally.checked(
    'accepted-never-failed',
    [...promised.keys()].filter((requestId) => readFinal.has(requestId)).length,
  );
  for (const entry of input.history) {
    if (entry.op !== 'result' || !entry.requestId) continue;
    const order = orders.get(entry.requestId)?.[0];
    if (entry.resultStatus === 'SUCCESS') {
      tally.checked('accepted-is-one-order');
      if (!order || order.orderNo !== entry.orderNo) {
        tally.violate({
          invariant: 'accepted-is-one-order',
          message: `result ${describeAnswer(entry)} said SUCCESS, order ${entry.orderNo}, for buyer ${entry.buyer}; the stores have ${order ? `order ${order.orderNo}` : 'no order'} for that request`,
          requestIds: [entry.requestId],
          historyIds: [entry.id],
          goodsId: entry.goodsId,
          atMs: entry.sentMs,
        });
      }
    } else if (entry.resultStatus === 'FAILED') {
      tally.checked('accepted-never-failed');
      const accepted = promised.get(entry.requestId);
      if (accepted || order) {
        tally.violate({
          invariant: 'accepted-never-failed',
          message: `result ${describeAnswer(entry)} said FAILED (${entry.reason ?? 'no reason'}) for buyer ${entry.buyer}, whose purchase ${accepted ? `was answered 202 (#${accepted.id})` : `has order ${order?.orderNo}`}`,
          requestIds: [entry.requestId],
          historyIds: accepted ? [accepted.id, entry.id] : [entry.id],
          goodsId: entry.goodsId,
          atMs: entry.sentMs,
        });
      }
    }
  }

  const unknownWithId = new Set(
    purchases.filter((e) => e.outcome === 'unknown' && e.requestId).map((e) => e.requestId),
  );
  const blind = purchases.filter((e) => e.outcome === 'unknown' && !e.requestId);
  const used = new Set<number>();
  let taken = 0;
  for (const sale of input.snapshot.sales) {
    for (const order of sale.orders) {
      tally.checked('refused-took-nothing');
      if (promised.has(order.requestId)) continue;
      if (unknownWithId.has(order.requestId)) {
        taken++;
        continue;
      }
      const epoch = acceptedAtEpochMs(order.orderNo);
      const at = epoch === undefined ? Infinity : epoch - input.startedAtEpochMs;
      // A purchase that got no answer may have been taken: one order for each such purchase,
      // sent before the order was accepted.
      const explains = blind.find(
        (e) =>
          !used.has(e.id) &&
          e.buyer === order.userId &&
          e.goodsId === sale.goodsId &&
          e.sentMs <= at + CLOCK_SLACK_MS,
      );
      if (explains) {
        used.add(explains.id);
        taken++;
        continue;
      }
      const theirs = purchases.filter(
        (e) => e.buyer === order.userId && e.goodsId === sale.goodsId,
      );
      tally.violate({
        invariant: 'refused-took-nothing',
        message: `order ${order.orderNo} (${order.status}) of buyer ${order.userId} in ${sale.name} was never promised: ${
          theirs.length === 0
            ? 'the buyer made no purchase'
            : `every purchase of theirs said nothing was taken: ${theirs.map(describeAnswer).join('; ')}`
        }`,
        requestIds: [order.requestId],
        historyIds: theirs.map((e) => e.id),
        goodsId: sale.goodsId,
        ...(Number.isFinite(at) ? { atMs: at } : {}),
      });
    }
  }
  const total = purchases.filter((e) => e.outcome === 'unknown').length;
  return { total, taken, notTaken: total - taken };
}

/** One sale's stores against each other once quiet. */
function checkSale(sale: SaleSnapshot, tally: Tally): void {
  const on = { goodsId: sale.goodsId, historyIds: [] as number[] };
  const active = sale.orders.filter((order) => ACTIVE.has(order.status));
  const activeQuantity = active.reduce((sum, order) => sum + order.quantity, 0);

  tally.checked('no-oversell');
  if (activeQuantity > sale.totalStock) {
    tally.violate({
      ...on,
      invariant: 'no-oversell',
      message: `${sale.name}: active orders hold ${activeQuantity} of a stock of ${sale.totalStock}`,
      requestIds: active.map((order) => order.requestId),
    });
  }

  const byBuyer = new Map<number, OrderRow[]>();
  for (const order of active)
    byBuyer.set(order.userId, [...(byBuyer.get(order.userId) ?? []), order]);
  tally.checked('one-active-order-per-buyer', byBuyer.size);
  for (const [buyer, held] of byBuyer) {
    if (held.length < 2) continue;
    tally.violate({
      ...on,
      invariant: 'one-active-order-per-buyer',
      message: `${sale.name}: buyer ${buyer} holds ${held.length} active orders: ${held.map((o) => o.orderNo).join(', ')}`,
      requestIds: held.map((order) => order.requestId),
    });
  }

  tally.checked('mysql-stock-balances');
  if (sale.mysqlStock + activeQuantity !== sale.totalStock) {
    tally.violate({
      ...on,
      invariant: 'mysql-stock-balances',
      message: `${sale.name}: MySQL stock ${sale.mysqlStock} + active ${activeQuantity} = ${sale.mysqlStock + activeQuantity}, not the total ${sale.totalStock}`,
      requestIds: [],
    });
  }

  // A sale over is not loaded again into a Redis restarted after its end (a rebuild loads the
  // sales still on): with no copy in Redis, only its MySQL side is judged.
  if (sale.ended && sale.redisStock === null) return;

  tally.checked('redis-matches-mysql');
  if (sale.redisStock !== sale.mysqlStock) {
    tally.violate({
      ...on,
      invariant: 'redis-matches-mysql',
      message: `${sale.name}: Redis remaining ${sale.redisStock ?? '(no sale in Redis)'}, MySQL stock ${sale.mysqlStock}`,
      requestIds: [],
    });
  }
  const activeByBuyer = new Map<string, number>();
  for (const order of active) {
    const key = String(order.userId);
    activeByBuyer.set(key, (activeByBuyer.get(key) ?? 0) + order.quantity);
  }
  const buyers = new Set([...activeByBuyer.keys(), ...Object.keys(sale.redisBuyers)]);
  const differ = [...buyers].filter(
    (buyer) => (activeByBuyer.get(buyer) ?? 0) !== (sale.redisBuyers[buyer] ?? 0),
  );
  if (differ.length > 0) {
    const listed = differ
      .slice(0, MAX_LISTED)
      .map((b) => `${b}: Redis ${sale.redisBuyers[b] ?? 0}, active ${activeByBuyer.get(b) ?? 0}`);
    tally.violate({
      ...on,
      invariant: 'redis-matches-mysql',
      message: `${sale.name}: ${differ.length} buyers differ between Redis and the active orders (${listed.join('; ')}${differ.length > MAX_LISTED ? '; …' : ''})`,
      requestIds: active.filter((o) => differ.includes(String(o.userId))).map((o) => o.requestId),
    });
  }

  tally.checked('reconcile-consistent');
  if (sale.reconcile?.consistent !== true) {
    tally.violate({
      ...on,
      invariant: 'reconcile-consistent',
      message: `${sale.name}: reconcile ${sale.reconcile === null ? 'could not be read' : `says inconsistent: ${JSON.stringify(sale.reconcile)}`}`,
      requestIds: [],
    });
  }

  const restocked = new Set(sale.restocked);
  const retaken = new Set(sale.retaken ?? []);
  tally.checked('stock-back-once', sale.orders.length);
  const notBack = sale.orders.filter(
    (o) =>
      (o.status === 'CANCELLED' || o.status === 'REFUND_REQUIRED') &&
      (!restocked.has(o.orderNo) || retaken.has(o.orderNo)),
  );
  const backActive = active.filter(
    (order) => restocked.has(order.orderNo) && !retaken.has(order.orderNo),
  );
  for (const [orders, what] of [
    [notBack, 'cancelled, and Redis never got their stock back'],
    [backActive, 'active, yet Redis counts their stock as given back'],
  ] as const) {
    if (orders.length === 0) continue;
    tally.violate({
      ...on,
      invariant: 'stock-back-once',
      message: `${sale.name}: ${orders.length} orders ${what}: ${orders
        .slice(0, MAX_LISTED)
        .map((o) => o.orderNo)
        .join(', ')}${orders.length > MAX_LISTED ? ', …' : ''}`,
      requestIds: orders.map((order) => order.requestId),
    });
  }
}

/**
 * The promise the fallback and the rebuild make to the buyers Redis accepted: MySQL sells or is
 * counted only after every order accepted before is written. An order written later was missing
 * meanwhile: the fallback may have sold its unit, a rebuild counted the stock without it; either
 * shows elsewhere only when the sale runs out or a repair hides it.
 */
function checkWrittenPoints(input: CheckInput, tally: Tally): void {
  const orders = new Map(
    input.snapshot.sales.flatMap((sale) => sale.orders.map((order) => [order.requestId, order])),
  );
  const accepted = input.history.filter(
    (entry) => entry.op === 'purchase' && entry.status === 202 && entry.requestId,
  );
  for (const point of input.writtenPoints) {
    const invariant =
      point.kind === 'fallback' ? 'written-before-fallback' : 'written-before-rebuild';
    const before = accepted.filter(
      (entry) =>
        (point.goodsId === undefined || entry.goodsId === point.goodsId) &&
        input.startedAtEpochMs + entry.answeredMs < point.coversEpochMs - CLOCK_SLACK_MS,
    );
    tally.checked(invariant, before.length);
    const writtenAfter = (entry: HistoryEntry) =>
      orders.get(entry.requestId!)!.createdAtEpochMs - point.atEpochMs;
    const late = before.filter(
      (entry) => orders.has(entry.requestId!) && writtenAfter(entry) > CLOCK_SLACK_MS,
    );
    if (late.length === 0) continue;
    const at = point.atEpochMs - input.startedAtEpochMs;
    const what =
      point.kind === 'fallback'
        ? `goods ${point.goodsId} opened to the database fallback`
        : `an order barrier opened at ${point.coversEpochMs - input.startedAtEpochMs} ms passed`;
    tally.violate({
      invariant,
      message: `${what} on ${point.instance} at ${at} ms while ${late.length} orders accepted before it were unwritten (${late
        .slice(0, MAX_LISTED)
        .map((entry) => `${describeAnswer(entry)}: written ${writtenAfter(entry)} ms after`)
        .join('; ')}${late.length > MAX_LISTED ? '; …' : ''})`,
      requestIds: late.map((entry) => entry.requestId!),
      historyIds: late.map((entry) => entry.id),
      ...(point.goodsId === undefined ? {} : { goodsId: point.goodsId }),
      atMs: at,
    });
  }
}

/**
 * A pay or cancel the buyer was told succeeded still holds at the end; only a payment that landed
 * after it (the shop applied it late: taken again, or to refund) moves a cancelled order on.
 */
function checkOrderActions(input: CheckInput, tally: Tally): void {
  const byNo = new Map(
    input.snapshot.sales.flatMap((sale) => sale.orders.map((order) => [order.orderNo, order])),
  );
  const late = new Map<string, Set<string>>();
  for (const sale of input.snapshot.sales) {
    for (const event of sale.paymentEvents ?? []) {
      const set = late.get(event.orderNo) ?? new Set<string>();
      set.add(event.outcome);
      late.set(event.orderNo, set);
    }
  }
  const lateOutcome: Partial<Record<OrderStatus, string>> = {
    PAID: 'retaken',
    REFUND_REQUIRED: 'refund_required',
  };
  for (const entry of input.history) {
    if ((entry.op !== 'pay' && entry.op !== 'cancel') || entry.status !== 200 || !entry.orderNo) {
      continue;
    }
    tally.checked('paid-stays-paid');
    const order = byNo.get(entry.orderNo);
    const expected: OrderStatus = entry.op === 'pay' ? 'PAID' : 'CANCELLED';
    if (order?.status === expected) continue;
    const movedOn = order && entry.op === 'cancel' ? lateOutcome[order.status] : undefined;
    if (movedOn && late.get(order!.orderNo)?.has(movedOn)) continue;
    tally.violate({
      invariant: 'paid-stays-paid',
      message: `${entry.op} ${describeAnswer(entry)} of order ${entry.orderNo} by buyer ${entry.buyer} was answered 200, and the order is ${order?.status ?? 'missing'}`,
      requestIds: order ? [order.requestId] : [],
      historyIds: [entry.id],
      goodsId: entry.goodsId,
      atMs: entry.sentMs,
    });
  }
}

/** Where an order may go from a status (a late payment leaves CANCELLED). */
const LATER: Record<OrderStatus, readonly OrderStatus[]> = {
  PENDING_PAYMENT: ['PENDING_PAYMENT', 'PAID', 'CANCELLED', 'REFUND_REQUIRED'],
  PAID: ['PAID'],
  CANCELLED: ['CANCELLED', 'PAID', 'REFUND_REQUIRED'],
  REFUND_REQUIRED: ['REFUND_REQUIRED'],
};

/**
 * The provider's events against the orders: PAID only by a payment, REFUND_REQUIRED only by a late
 * one, a repeat answered as the first, an answer never undone; a late payment's unit taken once.
 */
function checkPayments(input: CheckInput, tally: Tally): void {
  const sales = input.snapshot.sales.filter((sale) => sale.paymentEvents !== undefined);
  if (sales.length === 0) return;
  const byNo = new Map(sales.flatMap((sale) => sale.orders.map((order) => [order.orderNo, order])));
  const ownerPaid = new Set(
    input.history.filter((e) => e.op === 'pay' && e.orderNo).map((e) => e.orderNo!),
  );
  for (const sale of sales) {
    const outcomes = new Map<string, Set<string>>();
    for (const event of sale.paymentEvents ?? []) {
      if (event.type !== 'payment.succeeded') continue;
      const set = outcomes.get(event.orderNo) ?? new Set<string>();
      set.add(event.outcome);
      outcomes.set(event.orderNo, set);
    }
    const retakenInRedis = new Set(sale.retaken ?? []);
    const restocked = new Set(sale.restocked);
    for (const order of sale.orders) {
      const of = outcomes.get(order.orderNo) ?? new Set<string>();
      const on = { goodsId: sale.goodsId, requestIds: [order.requestId], historyIds: [] };
      if (order.status === 'PAID') {
        tally.checked('paid-only-by-payment');
        if (!of.has('paid') && !of.has('retaken') && !ownerPaid.has(order.orderNo)) {
          tally.violate({
            ...on,
            invariant: 'paid-only-by-payment',
            message: `${sale.name}: order ${order.orderNo} is PAID with no payment applied (events: ${[...of].join(', ') || 'none'}) and no pay by its owner`,
          });
        }
      }
      if (order.status === 'REFUND_REQUIRED') {
        tally.checked('paid-only-by-payment');
        if (!of.has('refund_required')) {
          tally.violate({
            ...on,
            invariant: 'paid-only-by-payment',
            message: `${sale.name}: order ${order.orderNo} is REFUND_REQUIRED with no late payment recorded`,
          });
        }
      }
      if (of.has('retaken')) {
        tally.checked('late-payment-never-oversold');
        // Taken again: PAID, and its unit held in Redis (never restocked, or marked retaken).
        const held = !restocked.has(order.orderNo) || retakenInRedis.has(order.orderNo);
        if (order.status !== 'PAID' || !held) {
          tally.violate({
            ...on,
            invariant: 'late-payment-never-oversold',
            message: `${sale.name}: order ${order.orderNo}, paid late and taken again, is ${order.status}${held ? '' : ' and Redis counts its unit as given back'}`,
          });
        }
      }
      if (of.has('refund_required')) {
        tally.checked('late-payment-never-oversold');
        if (order.status !== 'REFUND_REQUIRED' || retakenInRedis.has(order.orderNo)) {
          tally.violate({
            ...on,
            invariant: 'late-payment-never-oversold',
            message: `${sale.name}: order ${order.orderNo}, paid late with no unit left, is ${order.status}${retakenInRedis.has(order.orderNo) ? ' and Redis holds a unit for it' : ''}`,
          });
        }
      }
    }
  }
  const first = new Map<string, HistoryEntry>();
  for (const entry of input.history) {
    if (entry.op !== 'webhook' || !entry.webhook || !entry.orderNo) continue;
    const order = byNo.get(entry.orderNo);
    const answered = entry.status === 200 ? entry.webhook.answered : undefined;
    if (answered !== undefined) {
      tally.checked('paid-stays-paid');
      const allowed = LATER[answered as OrderStatus] ?? [];
      if (!order || !allowed.includes(order.status)) {
        tally.violate({
          invariant: 'paid-stays-paid',
          message: `${entry.webhook.type} ${describeAnswer(entry)} of order ${entry.orderNo} was answered ${answered}, and the order is ${order?.status ?? 'missing'}`,
          requestIds: order ? [order.requestId] : [],
          historyIds: [entry.id],
          goodsId: entry.goodsId,
          atMs: entry.sentMs,
        });
      }
    }
    if (entry.status !== 200) continue;
    const earlier = first.get(entry.webhook.eventId);
    if (!earlier) {
      first.set(entry.webhook.eventId, entry);
      continue;
    }
    tally.checked('paid-only-by-payment');
    if (earlier.webhook?.answered !== entry.webhook.answered) {
      tally.violate({
        invariant: 'paid-only-by-payment',
        message: `event ${entry.webhook.eventId} of order ${entry.orderNo} was answered ${earlier.webhook?.answered} (#${earlier.id}), then ${entry.webhook.answered} (${describeAnswer(entry)})`,
        requestIds: order ? [order.requestId] : [],
        historyIds: [earlier.id, entry.id],
        goodsId: entry.goodsId,
        atMs: entry.sentMs,
      });
    }
  }
}

/** How long after an order's cancel Redis may not have its unit back yet, with no fault about. */
const RESTOCK_LAG_MS = 1_000;
/**
 * A cancel around a fault that may leave Redis behind MySQL (explainsDrift) has its unit back in
 * Redis by this long after the fault's end: the reconcile (every 15 s in the run) restocks it.
 */
const RESTOCK_AFTER_FAULT_MS = 20_000;
/** How long a purchase left with no answer that became no order may have held its units. */
const UNANSWERED_HOLD_MS = 30_000;

/**
 * A late payment refunded while units stood free: the sale had one in some bucket and the order
 * did not take it (the retake looked at one bucket only, say). Judged against a count of the
 * units held at the refund that errs on the side of "held", so that only a refund with units
 * surely free is named. Every other order holds from its acceptance (its number's time) until
 * its cancel's unit is surely back in Redis (RESTOCK_LAG_MS after it, or RESTOCK_AFTER_FAULT_MS
 * after a fault around it ends); one still cancelled after a late payment was tried for it holds
 * for good (a retake Redis made whose MySQL commit never came holds a unit until a repair), and
 * a refunded one until its refund. A purchase that became no order holds from its sending until
 * its FAILED result was read (for good if never), one with no answer for UNANSWERED_HOLD_MS. A
 * refund whose buyer may have held anything else of the goods then is not judged (the buyer's
 * one purchase is the rule). Judged from the order events' times (the snapshot's).
 */
function checkRefunds(input: CheckInput, tally: Tally): void {
  const start = input.startedAtEpochMs;
  const latePaid = new Set(
    input.history.filter((e) => e.webhook?.late && e.orderNo).map((e) => e.orderNo!),
  );
  const restockedBy = (cancelledAt: number) => {
    const at = cancelledAt - start;
    let by = at + RESTOCK_LAG_MS;
    for (const fault of input.faults ?? []) {
      const around = fault.from <= at + RESTOCK_LAG_MS && fault.to >= at - RESTOCK_LAG_MS;
      if (around && explainsDrift(fault) !== undefined) {
        by = Math.max(by, fault.to + RESTOCK_AFTER_FAULT_MS);
      }
    }
    return start + by;
  };
  const failedAt = new Map<string, number>();
  for (const e of input.history) {
    if (e.op === 'result' && e.resultStatus === 'FAILED' && e.requestId) {
      failedAt.set(
        e.requestId,
        Math.min(failedAt.get(e.requestId) ?? Infinity, start + e.answeredMs),
      );
    }
  }
  for (const sale of input.snapshot.sales) {
    const refunds = sale.orders.filter((order) => order.status === 'REFUND_REQUIRED');
    if (refunds.length === 0 || !sale.merchantEvents) continue;
    const at = (orderNo: string, types: string[]) =>
      sale.merchantEvents!.find((e) => e.orderNo === orderNo && types.includes(e.type))?.atEpochMs;
    const ordered = new Set(sale.orders.map((order) => order.requestId));
    const orderHeldUntil = (order: OrderRow) => {
      if (ACTIVE.has(order.status)) return Infinity;
      const back = restockedBy(
        at(order.orderNo, ['order.cancelled', 'order.expired']) ?? order.updatedAtEpochMs,
      );
      if (!latePaid.has(order.orderNo)) return back;
      if (order.status !== 'REFUND_REQUIRED') return Infinity;
      return Math.max(back, at(order.orderNo, ['order.refund_required']) ?? Infinity);
    };
    const holds = [
      ...sale.orders.map((order) => ({
        order,
        buyer: order.userId,
        units: order.quantity,
        from: (acceptedAtEpochMs(order.orderNo) ?? order.createdAtEpochMs) - CLOCK_SLACK_MS,
        until: orderHeldUntil(order),
      })),
      ...input.history
        .filter(
          (e) =>
            e.op === 'purchase' &&
            e.goodsId === sale.goodsId &&
            e.outcome !== 'refused' &&
            !(e.requestId && ordered.has(e.requestId)),
        )
        .map((e) => ({
          order: undefined,
          buyer: e.buyer,
          units: e.quantity ?? 1,
          from: start + e.sentMs - CLOCK_SLACK_MS,
          until: e.requestId
            ? (failedAt.get(e.requestId) ?? Infinity)
            : start + e.sentMs + UNANSWERED_HOLD_MS,
        })),
    ];
    for (const refund of refunds) {
      const refundedAt = at(refund.orderNo, ['order.refund_required']);
      if (refundedAt === undefined) continue;
      const held = holds.filter(
        (hold) => hold.order !== refund && hold.from <= refundedAt && refundedAt <= hold.until,
      );
      tally.checked('late-payment-refunded-only-when-none-left');
      if (held.some((hold) => hold.buyer === refund.userId)) continue;
      const free = sale.totalStock - held.reduce((sum, hold) => sum + hold.units, 0);
      if (free < refund.quantity) continue;
      tally.violate({
        invariant: 'late-payment-refunded-only-when-none-left',
        message: `${sale.name}: order ${refund.orderNo} of buyer ${refund.userId}, paid late, was refunded at ${refundedAt - start} ms while at least ${free} of ${sale.totalStock} units stood free`,
        requestIds: [refund.requestId],
        historyIds: [],
        goodsId: sale.goodsId,
        atMs: refundedAt - start,
      });
    }
  }
}

/** Every order event delivered once after the quiet, in order, on an allowed path. */
function checkMerchantEvents(input: CheckInput, tally: Tally): void {
  const received = input.merchantReceived;
  if (received === undefined) return;
  const receivedIds = new Set(received.map((event) => event.id));
  const arrivedByOrder = new Map<string, string[]>();
  for (const event of received) {
    arrivedByOrder.set(event.orderNo, [...(arrivedByOrder.get(event.orderNo) ?? []), event.id]);
  }
  for (const sale of input.snapshot.sales) {
    const outbox = sale.merchantEvents;
    if (outbox === undefined) continue;
    const written = new Map<string, { ids: string[]; types: string[] }>();
    for (const event of outbox) {
      const entry = written.get(event.orderNo) ?? { ids: [], types: [] };
      entry.ids.push(event.eventId);
      entry.types.push(event.type);
      written.set(event.orderNo, entry);
    }
    for (const order of sale.orders) {
      tally.checked('merchant-events-delivered');
      const mine = written.get(order.orderNo) ?? { ids: [], types: [] };
      const missing = mine.ids.filter((id) => !receivedIds.has(id));
      const arrived = arrivedByOrder.get(order.orderNo) ?? [];
      const path = mine.types.join(' ');
      const problem =
        missing.length > 0
          ? `${missing.length} of its ${mine.ids.length} events never reached the shop`
          : arrived.join() !== mine.ids.join()
            ? 'its events reached the shop out of the order written'
            : !ORDER_EVENT_PATHS.has(path)
              ? `its events (${path || 'none'}) are not a path an order takes`
              : !LAST_ORDER_EVENT[order.status].includes(mine.types.at(-1)!)
                ? `its last event is ${mine.types.at(-1)} and it is ${order.status}`
                : undefined;
      if (!problem) continue;
      tally.violate({
        invariant: 'merchant-events-delivered',
        message: `${sale.name}: order ${order.orderNo}: ${problem}`,
        requestIds: [order.requestId],
        historyIds: [],
        goodsId: sale.goodsId,
      });
    }
  }
}

/** The buyers who tried a queue sale without joining: none has a 202 or an order. */
function checkQueueOutsiders(input: CheckInput, tally: Tally): void {
  const outsiders = input.history.filter((entry) => entry.op === 'purchase' && entry.outsider);
  const orders = new Map(
    input.snapshot.sales.flatMap((sale) =>
      sale.orders.map((order) => [`${sale.goodsId}:${order.userId}`, order] as const),
    ),
  );
  for (const entry of outsiders) {
    tally.checked('no-sale-around-the-queue');
    const order = orders.get(`${entry.goodsId}:${entry.buyer}`);
    if (entry.status !== 202 && !order) continue;
    tally.violate({
      invariant: 'no-sale-around-the-queue',
      message: `buyer ${entry.buyer}, who never joined the waiting room, was ${order ? `sold order ${order.orderNo}` : 'answered 202'} (${describeAnswer(entry)})`,
      requestIds: order ? [order.requestId] : entry.requestId ? [entry.requestId] : [],
      historyIds: [entry.id],
      goodsId: entry.goodsId,
      atMs: entry.sentMs,
    });
  }
}

/**
 * A shed buyer is held to the Retry-After they were told on the instance that shed them: a 202
 * there for them is a violation when it was answered before the earliest moment that wait can
 * have ended (the shed's sending plus the Retry-After, less the server's 100 ms of rounding),
 * unless the instance was killed in between (the wait lives in its memory).
 */
function checkRetryAfterKept(input: CheckInput, tally: Tally): void {
  const dueOf = (shed: HistoryEntry) => shed.sentMs + (shed.retryAfterS ?? 0) * 1_000 - 100;
  const killed = (input.faults ?? []).filter((fault) => fault.kind === 'app-kill');
  const lastShed = new Map<string, HistoryEntry>();
  const purchases = input.history
    .filter((entry) => entry.op === 'purchase')
    .sort((a, b) => a.sentMs - b.sentMs);
  for (const entry of purchases) {
    const key = `${entry.instance}:${entry.buyer}`;
    if (entry.retryAfterS !== undefined) {
      // The wait that ends last is the one every later purchase is held to.
      const before = lastShed.get(key);
      if (before === undefined || dueOf(entry) > dueOf(before)) lastShed.set(key, entry);
      continue;
    }
    const shed = lastShed.get(key);
    if (entry.status !== 202 || shed === undefined || shed.answeredMs > entry.sentMs) continue;
    const restarted = killed.some(
      (fault) =>
        (fault.instance === entry.instance || fault.instance === 'all') &&
        fault.from < entry.answeredMs &&
        fault.to > shed.sentMs,
    );
    if (restarted) continue;
    tally.checked('shed-retry-after-kept');
    const due = dueOf(shed);
    if (entry.answeredMs >= due) continue;
    tally.violate({
      invariant: 'shed-retry-after-kept',
      message: `buyer ${entry.buyer} was shed by ${entry.instance} at ${shed.sentMs} ms with Retry-After ${shed.retryAfterS} s, and taken there by ${describeAnswer(entry)} answered at ${entry.answeredMs} ms, ${due - entry.answeredMs} ms before that wait ended`,
      requestIds: entry.requestId ? [entry.requestId] : [],
      historyIds: [shed.id, entry.id],
      goodsId: entry.goodsId,
      atMs: entry.sentMs,
    });
  }
}

function checkLiveness(input: CheckInput, tally: Tally): void {
  const { liveness, snapshot } = input;
  tally.checked(
    'instances-keep-up',
    new Set(
      input.history
        .filter((entry) => entry.op === 'purchase')
        .map((entry) => `${entry.goodsId}:${entry.instance}`),
    ).size,
  );
  for (const lag of lagsBehindPeers(input.history, input.faults ?? [])) {
    tally.violate({
      invariant: 'instances-keep-up',
      message: `goods ${lag.goodsId} on ${lag.instance}: no decided answer from ${lag.fromMs} to ${lag.toMs} ms (${lag.asked} purchases asked, last ${lag.lastAnswer}) while ${lag.peer} decided them throughout`,
      requestIds: [],
      historyIds: lag.historyIds,
      goodsId: lag.goodsId,
      atMs: lag.fromMs,
    });
  }
  for (const reopen of liveness.reopens) {
    tally.checked('sales-reopen');
    if (reopen.ms !== null && reopen.ms <= liveness.boundMs) continue;
    tally.violate({
      invariant: 'sales-reopen',
      message: `goods ${reopen.goodsId} on ${reopen.instance}: no decided answer within ${liveness.boundMs} ms of the heal (last: ${reopen.answer})`,
      requestIds: [],
      historyIds: [],
      goodsId: reopen.goodsId,
    });
  }
  tally.checked('no-dead-letters');
  if (snapshot.deadLetters > 0) {
    tally.violate({
      invariant: 'no-dead-letters',
      message: `${snapshot.deadLetters} messages in the dead-letter queue`,
      requestIds: [],
      historyIds: [],
    });
  }
  tally.checked('sales-quiet');
  if (!snapshot.quiet.reached) {
    tally.violate({
      invariant: 'sales-quiet',
      message: `not quiet after ${snapshot.quiet.waitedMs} ms: ${snapshot.quiet.last}`,
      requestIds: [],
      historyIds: [],
    });
  }
}

/**
 * The broker closes a channel for a protocol error of the app: a delivery acked or rejected twice
 * (406 unknown delivery tag), a declaration that contradicts the queue's (406), a queue that is
 * not there (404). The consumer survives it (the channel re-opens, the window is redelivered),
 * so no other invariant may see it, but each one burns a delivery of every unacked message.
 */
function checkChannels(input: CheckInput, tally: Tally): void {
  tally.checked('no-channel-errors');
  for (const close of input.brokerCloses) {
    tally.violate({
      invariant: 'no-channel-errors',
      message: `the broker closed channel ${close.channel} of ${close.instance} at ${close.atMs} ms: ${close.code} ${close.text}`,
      requestIds: [],
      historyIds: [],
      atMs: close.atMs,
    });
  }
}

/** How long after a fault its effect may still show in a repair's reading. */
export const REDIS_FAULT_EXPLAINS_MS = 30_000;
const OTHER_FAULT_EXPLAINS_MS = 5_000;
/**
 * Faults that may leave Redis and MySQL apart for a while, legitimately: Redis lost its data, was
 * down (the database fallback sold meanwhile) or cut off an instance; an instance killed, paused
 * or slowed between a purchase's two writes (its order in MySQL while its in-flight record is
 * still in Redis, until redelivery); MySQL's link cut under a commit of unknown outcome.
 */
function explainsDrift(fault: FaultSpan): number | undefined {
  if (fault.redisData || fault.kind.startsWith('redis-') || fault.service === 'redis') {
    return REDIS_FAULT_EXPLAINS_MS;
  }
  if (fault.kind.startsWith('app-') || fault.kind === 'slow-steps' || fault.service === 'mysql') {
    return OTHER_FAULT_EXPLAINS_MS;
  }
  return undefined;
}

/**
 * A repair rewrites Redis from MySQL, so drift it found is gone by the end: each repair's own
 * finding is judged instead. Drift no fault explains is a path that lost or doubled a unit.
 */
function checkRepairs(input: CheckInput, tally: Tally): void {
  const faults = input.faults ?? [];
  for (const entry of input.history) {
    if (entry.op !== 'repair' || entry.status !== 200 || entry.drifted === undefined) continue;
    const explained = faults.find((fault) => {
      const within = explainsDrift(fault);
      return (
        within !== undefined && fault.from <= entry.answeredMs && fault.to >= entry.sentMs - within
      );
    });
    if (explained) continue;
    tally.checked('repairs-find-no-drift');
    if (!entry.drifted) continue;
    tally.violate({
      invariant: 'repairs-find-no-drift',
      message: `repair ${describeAnswer(entry)} of goods ${entry.goodsId} found Redis drifted from MySQL, with no fault on Redis, its links or an instance in the time before it`,
      requestIds: [],
      historyIds: [entry.id],
      goodsId: entry.goodsId,
      atMs: entry.sentMs,
    });
  }
}

/**
 * What the buyers were told against the stock, over time: a 202 holds its units from its answer
 * until its order is cancelled (its row's last change), or for good; at no moment do the units so
 * held exceed the stock. And no buyer is answered 202 while an order of theirs is active.
 */
function checkToldTaken(input: CheckInput, tally: Tally): void {
  const start = input.startedAtEpochMs;
  for (const sale of input.snapshot.sales) {
    const byRequest = new Map(sale.orders.map((order) => [order.requestId, order]));
    const told = new Map<string, HistoryEntry>();
    for (const entry of input.history) {
      if (entry.op !== 'purchase' || entry.goodsId !== sale.goodsId) continue;
      if (entry.status === 202 && entry.requestId && !told.has(entry.requestId)) {
        told.set(entry.requestId, entry);
      }
    }
    // Each 202 holds its units from its answer (an order nobody was told of, from its write)
    // until its order's cancel, taken a moment earlier than its row says, so that the clocks
    // never invent an overlap.
    const holds = [
      ...[...told].map(([requestId, entry]) => {
        const order = byRequest.get(requestId);
        return {
          fromEpochMs: start + entry.answeredMs,
          order,
          units: order?.quantity ?? entry.quantity ?? 1,
        };
      }),
      ...sale.orders
        .filter((order) => !told.has(order.requestId))
        .map((order) => ({ fromEpochMs: order.createdAtEpochMs, order, units: order.quantity })),
    ];
    // An order's cancel gives its units back, and a late payment may take them again: the
    // order events say when (a refund's row changed after its cancel). Without them, a cancelled
    // or refunded order is taken as given back when its row last changed.
    const changes = new Map<string, { type: string; atEpochMs: number }[]>();
    for (const event of sale.merchantEvents ?? []) {
      if (event.atEpochMs === undefined) continue;
      changes.set(event.orderNo, [
        ...(changes.get(event.orderNo) ?? []),
        { type: event.type, atEpochMs: event.atEpochMs },
      ]);
    }
    const steps = holds.flatMap(({ fromEpochMs, order, units }) => {
      const start = { atEpochMs: fromEpochMs, units };
      const events = order ? changes.get(order.orderNo) : undefined;
      const cancel = events?.some(
        (e) => e.type === 'order.cancelled' || e.type === 'order.expired',
      );
      // Events that do not tell the cancel of a cancelled order are no timeline of it.
      if (order && events && (cancel || ACTIVE.has(order.status))) {
        const later = events.flatMap((event) =>
          event.type === 'order.cancelled' || event.type === 'order.expired'
            ? [{ atEpochMs: event.atEpochMs - CLOCK_SLACK_MS, units: -units }]
            : event.type === 'order.paid' &&
                events.some((e) => e.type === 'order.cancelled' || e.type === 'order.expired')
              ? [{ atEpochMs: event.atEpochMs, units }]
              : [],
        );
        return [start, ...later];
      }
      return [
        start,
        ...(order?.status === 'CANCELLED' || order?.status === 'REFUND_REQUIRED'
          ? [{ atEpochMs: order.updatedAtEpochMs - CLOCK_SLACK_MS, units: -units }]
          : []),
      ];
    });
    steps.sort((a, b) => a.atEpochMs - b.atEpochMs || a.units - b.units);
    let held = 0;
    let worst: { held: number; atEpochMs: number } | undefined;
    for (const step of steps) {
      held += step.units;
      if (held > sale.totalStock && (!worst || held > worst.held)) {
        worst = { held, atEpochMs: step.atEpochMs };
      }
    }
    tally.checked('no-oversell', told.size);
    if (worst) {
      tally.violate({
        invariant: 'no-oversell',
        message: `${sale.name}: ${worst.held} units were held by buyers told 202 (and orders) at ${worst.atEpochMs - start} ms, of a stock of ${sale.totalStock}`,
        requestIds: [],
        historyIds: [],
        goodsId: sale.goodsId,
        atMs: worst.atEpochMs - start,
      });
    }

    const ordersOf = new Map<number, OrderRow[]>();
    for (const order of sale.orders) {
      ordersOf.set(order.userId, [...(ordersOf.get(order.userId) ?? []), order]);
    }
    // From the order events, when an order's cancel gave its unit back and when a late payment
    // took it again (the row's own times say neither for an order paid after its cancel).
    const cancelAt = (order: OrderRow) =>
      changes
        .get(order.orderNo)
        ?.find((e) => e.type === 'order.cancelled' || e.type === 'order.expired')?.atEpochMs;
    const retakenAt = (order: OrderRow) =>
      cancelAt(order) === undefined
        ? undefined
        : changes.get(order.orderNo)?.find((e) => e.type === 'order.paid')?.atEpochMs;
    for (const [requestId, entry] of told) {
      tally.checked('one-active-order-per-buyer');
      const mine = byRequest.get(requestId);
      // The purchase's own order holds until its cancel (or for good).
      const mineEnd = (mine && cancelAt(mine)) ?? Infinity;
      const holding = (ordersOf.get(entry.buyer) ?? []).find((order) => {
        if (order.requestId === requestId) return false;
        if (order.createdAtEpochMs >= start + entry.sentMs - CLOCK_SLACK_MS) return false;
        const cancelled = cancelAt(order);
        if (cancelled === undefined) {
          return (
            ACTIVE.has(order.status) ||
            order.updatedAtEpochMs > start + entry.answeredMs + CLOCK_SLACK_MS
          );
        }
        // Held past the 202, or taken again by a late payment while this purchase held a unit.
        const retaken = retakenAt(order);
        return (
          cancelled > start + entry.answeredMs + CLOCK_SLACK_MS ||
          (retaken !== undefined && retaken < mineEnd)
        );
      });
      if (!holding) continue;
      tally.violate({
        invariant: 'one-active-order-per-buyer',
        message: `purchase ${describeAnswer(entry)} by buyer ${entry.buyer} in ${sale.name} was answered 202 while the buyer held active order ${holding.orderNo}`,
        requestIds: [requestId, holding.requestId],
        historyIds: [entry.id],
        goodsId: sale.goodsId,
        atMs: entry.sentMs,
      });
    }
  }
}

/** The reads made once quiet: the under-sell probes and the results of unknown outcomes. */
function checkAfterQuiet(input: CheckInput, tally: Tally): void {
  for (const entry of input.history) {
    if (entry.op !== 'purchase' || !entry.undersell) continue;
    tally.checked('no-undersell');
    if (entry.status === 202) continue;
    tally.violate({
      invariant: 'no-undersell',
      message: `purchase ${describeAnswer(entry)} by new buyer ${entry.buyer} of goods ${entry.goodsId} did not sell while MySQL held ${entry.undersell.mysqlStock} and Redis ${entry.undersell.redisStock} units`,
      requestIds: entry.requestId ? [entry.requestId] : [],
      historyIds: [entry.id],
      goodsId: entry.goodsId,
      atMs: entry.sentMs,
    });
  }
  const byId = new Map(input.history.map((entry) => [entry.id, entry]));
  const lastRead = new Map<number, HistoryEntry>();
  for (const entry of input.history) {
    if (entry.op === 'result' && entry.truthOf !== undefined) lastRead.set(entry.truthOf, entry);
  }
  // The purchases whose answers gave their request id: an order with one of them is theirs
  // (or a retry's with the same Idempotency-Key), no other purchase's.
  const answered = input.history.filter((e) => e.op === 'purchase' && e.requestId);
  const anothers = (purchase: HistoryEntry, requestId: string) =>
    answered.some(
      (e) =>
        e.requestId === requestId &&
        e.id !== purchase.id &&
        !(purchase.idempotencyKey !== undefined && e.idempotencyKey === purchase.idempotencyKey),
    );
  for (const [purchaseId, read] of lastRead) {
    const purchase = byId.get(purchaseId);
    if (!purchase) continue;
    tally.checked('result-tells-truth');
    // The order it became: by its request id, or (no answer gave one) the buyer's order of the
    // sale written after it was sent, the latest purchase of theirs.
    const theirs = input.snapshot.sales
      .find((sale) => sale.goodsId === purchase.goodsId)
      ?.orders.filter((order) => order.userId === purchase.buyer);
    const order = purchase.requestId
      ? theirs?.find((o) => o.requestId === purchase.requestId)
      : theirs?.find(
          (o) =>
            !anothers(purchase, o.requestId) &&
            o.createdAtEpochMs >= input.startedAtEpochMs + purchase.sentMs - CLOCK_SLACK_MS,
        );
    const told = `${read.resultStatus ?? 'no result'}${read.orderNo ? ` ${read.orderNo}` : ''}`;
    let wrong: string | undefined;
    if (read.status !== 200) wrong = `was never answered (last: ${describeAnswer(read)})`;
    else if (order && (read.resultStatus !== 'SUCCESS' || read.orderNo !== order.orderNo)) {
      wrong = `said ${told} while order ${order.orderNo} exists for it`;
    } else if (read.resultStatus === 'QUEUED') {
      wrong = 'said QUEUED once nothing was in flight';
    } else if (
      !order &&
      read.resultStatus === 'SUCCESS' &&
      purchase.requestId !== undefined &&
      read.requestId === purchase.requestId
    ) {
      wrong = `said ${told} for it, and it has no order`;
    }
    if (wrong === undefined) continue;
    tally.violate({
      invariant: 'result-tells-truth',
      message: `the result of buyer ${read.buyer}'s purchase #${purchase.id} (${describeAnswer(purchase)}), left unknown, ${wrong}`,
      requestIds: purchase.requestId ? [purchase.requestId] : [],
      historyIds: [purchase.id, read.id],
      goodsId: read.goodsId,
      atMs: read.sentMs,
    });
  }
}
