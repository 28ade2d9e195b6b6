// The demo's payments through the fake provider (scripts/fake-provider/): the provider's signed
// webhooks for a share of the orders (some events sent twice, some out of order), late payments
// for a few orders after their deadline cancelled them, and the merchant's side receiving every
// order event.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import type { Connection, RowDataPacket } from 'mysql2/promise';

import { MerchantReceiver } from '../fake-provider/merchant-receiver.js';
import { FakeProvider, type WebhookAnswer } from '../fake-provider/provider.js';
import { onCleanup, startProgressBar } from '../lib/cleanup.js';
import { DEMO_PRICE } from './api.js';
import type { Check } from './report.js';
import { readOrders } from './store.js';

/** Every fourth payment's events are delivered twice, every fifth out of order. */
const DUPLICATE_EVERY = 4;
const REORDER_EVERY = 5;
const MERCHANT_WAIT_MS = 30_000;

/** The secrets of the server this demo starts: its own, a fresh pair each run. */
export interface DemoSecrets {
  payment: string;
  merchant: string;
}

export function demoSecrets(): DemoSecrets {
  return {
    payment: `whsec_demo_${randomBytes(16).toString('hex')}`,
    merchant: `whsec_shop_${randomBytes(16).toString('hex')}`,
  };
}

/** The shop's side of the order events, for the run. */
export async function startMerchant(secret: string): Promise<MerchantReceiver> {
  const receiver = await MerchantReceiver.start(secret);
  onCleanup(() => receiver.close());
  return receiver;
}

export interface PaymentsPhase {
  /** Orders whose payment the provider sent before their deadline. */
  onTime: number;
  /** Orders paid after their cancel. */
  lateOrders: string[];
  answers: WebhookAnswer[];
  repeats: number;
  repeatsAnsweredSame: number;
}

/** Runs `work` over `items`, `concurrency` at a time. */
async function pool<T>(
  items: T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<void>,
) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index], index);
    }
  });
  await Promise.all(lanes);
}

/** The provider pays `share` of the goods' orders: started then succeeded, as a buyer's checkout. */
export async function payThroughProvider(
  provider: FakeProvider,
  db: Connection,
  goodsId: number,
  share: number,
  concurrency: number,
): Promise<{ orders: number; paid: string[] }> {
  const orders = await readOrders(db, goodsId);
  const toPay = orders.slice(0, Math.round(orders.length * share));
  const bar = startProgressBar(
    'paying through the provider [{bar}] {percentage}% | {value}/{total} orders | {duration}s',
    toPay.length,
  );
  await pool(toPay, concurrency, async (order, index) => {
    await provider.pay(provider.checkout(order.orderNo, DEMO_PRICE), {
      duplicate: index % DUPLICATE_EVERY === 0,
      reorder: index % REORDER_EVERY === 0,
    });
    bar.increment();
  });
  bar.stop();
  return { orders: orders.length, paid: toPay.map((order) => order.orderNo) };
}

/**
 * After the expiries: the provider's payment of `count` cancelled orders lands late (each event
 * sent twice). Each takes its unit again if one is left, else is left REFUND_REQUIRED.
 */
export async function payLate(
  provider: FakeProvider,
  db: Connection,
  goodsId: number,
  count: number,
): Promise<string[]> {
  const [rows] = await db.query<RowDataPacket[]>(
    "SELECT order_no FROM seckill_order WHERE goods_id = ? AND status = 'CANCELLED' ORDER BY id LIMIT ?",
    [goodsId, count],
  );
  const late = rows.map((row) => String(row.order_no));
  await Promise.all(
    late.map((orderNo) =>
      provider.pay(provider.checkout(orderNo, DEMO_PRICE), { duplicate: true, skipStart: true }),
    ),
  );
  return late;
}

export function paymentsPhase(
  provider: FakeProvider,
  onTime: number,
  lateOrders: string[],
): PaymentsPhase {
  const { repeats, same } = provider.repeatsAnsweredSame();
  return { onTime, lateOrders, answers: provider.answers, repeats, repeatsAnsweredSame: same };
}

export interface MerchantPhase {
  /** Order events the outbox holds for the goods. */
  written: number;
  /** Of them, received by the shop (each once, after de-duplication by id). */
  received: number;
  /** Deliveries the shop saw, repeats included, and the failed ones. */
  deliveries: number;
  /** Orders whose events did not arrive in the order they were written. */
  outOfOrder: number;
}

/** Waits until the shop holds every order event of the goods, or the wait gives up. */
export async function waitForMerchant(
  db: Connection,
  receiver: MerchantReceiver,
  goodsId: number,
): Promise<MerchantPhase> {
  const giveUpAt = Date.now() + MERCHANT_WAIT_MS;
  for (;;) {
    const [rows] = await db.query<RowDataPacket[]>(
      'SELECT event_id, order_no FROM seckill_merchant_event WHERE goods_id = ? ORDER BY id',
      [goodsId],
    );
    const received = new Map(
      receiver.events.filter((e) => e.data.goodsId === goodsId).map((e) => [e.id, e]),
    );
    const done = rows.every((row) => received.has(String(row.event_id)));
    if (done || Date.now() >= giveUpAt) {
      const byOrder = new Map<string, string[]>();
      for (const row of rows) {
        const orderNo = String(row.order_no);
        byOrder.set(orderNo, [...(byOrder.get(orderNo) ?? []), String(row.event_id)]);
      }
      let outOfOrder = 0;
      for (const [orderNo, ids] of byOrder) {
        const arrived = receiver.events
          .filter((event) => event.data.orderNo === orderNo)
          .map((event) => event.id);
        if (arrived.join() !== ids.join()) outOfOrder++;
      }
      return {
        written: rows.length,
        received: rows.filter((row) => received.has(String(row.event_id))).length,
        deliveries: receiver.deliveries.length + receiver.failedAnswers,
        outOfOrder,
      };
    }
    await sleep(200);
  }
}

const answeredWith = (answers: readonly WebhookAnswer[], status: string) =>
  new Set(
    answers
      .filter((a) => a.event.type === 'payment.succeeded' && a.outcome === status)
      .map((a) => a.event.data.orderNo),
  );

export function paymentRows(payments: PaymentsPhase, merchant: MerchantPhase | undefined) {
  const succeeded = payments.answers.filter((a) => a.event.type === 'payment.succeeded');
  const paid = answeredWith(succeeded, 'PAID');
  const retaken = payments.lateOrders.filter((orderNo) => paid.has(orderNo)).length;
  const rows: [string, string | number][] = [
    ['webhooks sent (signed)', payments.answers.length],
    ['repeats answered as the first', `${payments.repeatsAnsweredSame} / ${payments.repeats}`],
    ['paid through the provider, on time', payments.onTime],
    ['late payments: unit taken again', retaken],
    ['late payments: refund required', answeredWith(succeeded, 'REFUND_REQUIRED').size],
  ];
  if (merchant) {
    rows.push(
      ['merchant events delivered', `${merchant.received} / ${merchant.written}`],
      ['merchant deliveries (with repeats, failures)', merchant.deliveries],
    );
  }
  return rows;
}

export function paymentChecks(
  payments: PaymentsPhase,
  merchant: MerchantPhase | undefined,
  paidInMysql: number,
  refundsInMysql: number,
): Check[] {
  const paid = answeredWith(payments.answers, 'PAID').size;
  const refunds = answeredWith(payments.answers, 'REFUND_REQUIRED').size;
  const failed = payments.answers.filter((a) => a.status !== 200);
  const checks: Check[] = [
    {
      name: 'every webhook answered 200',
      ok: failed.length === 0,
      detail:
        failed.length === 0
          ? `${payments.answers.length} answered`
          : `${failed.length} not: ${[...new Set(failed.map((a) => a.outcome))].join(', ')}`,
    },
    {
      name: 'every repeated event answered as the first',
      ok: payments.repeatsAnsweredSame === payments.repeats,
      detail: `${payments.repeatsAnsweredSame} of ${payments.repeats}`,
    },
    {
      name: 'paid orders == payments answered PAID',
      ok: paidInMysql === paid,
      detail: `${paidInMysql} paid in MySQL, ${paid} orders answered PAID`,
    },
    {
      name: 'refunds == late payments answered REFUND_REQUIRED',
      ok: refundsInMysql === refunds,
      detail: `${refundsInMysql} in MySQL, ${refunds} answered`,
    },
  ];
  if (merchant) {
    checks.push({
      name: 'every order event delivered to the merchant, in order',
      ok: merchant.received === merchant.written && merchant.outOfOrder === 0,
      detail: `${merchant.received} of ${merchant.written} received, ${merchant.outOfOrder} orders out of order`,
    });
  }
  return checks;
}
