import { randomUUID } from 'node:crypto';
import { signatureHeader } from '../../src/common/webhook-signature.js';
import { amountInMinorUnits } from '../../src/modules/payments/payment-event.js';

export type PaymentEventType = 'payment.started' | 'payment.succeeded' | 'payment.failed';

/** A payment of one order, as the provider knows it once its checkout is made. */
export interface Checkout {
  orderNo: string;
  /** Minor units: the order's price × quantity × 100. */
  amount: number;
  currency: string;
}

export interface ProviderEvent {
  id: string;
  type: PaymentEventType;
  data: Checkout;
}

/** The shop's answer to one delivery of an event. */
export interface WebhookAnswer {
  event: ProviderEvent;
  /** HTTP status; 0 when the request failed. */
  status: number;
  /** The order status the shop answered with (200), or the error code. */
  outcome: string;
  /** True for a second (or later) delivery of an event the provider had sent before. */
  repeat: boolean;
}

/** How `pay` delivers a payment's events. */
export interface PayOptions {
  /** Every event sent twice, as providers do on a lost acknowledgement. */
  duplicate?: boolean;
  /** `payment.succeeded` before `payment.started`, as a provider's queue may deliver them. */
  reorder?: boolean;
  /** Without `payment.started` (a payment that needs no extra step). */
  skipStart?: boolean;
}

/**
 * A small payment provider for the demo and the tests (docs/payments.md): it makes a checkout for
 * an order (its amount in minor units), and sends the order's payment events to the shop's
 * webhook, signed as a real provider does (`Seckill-Signature`, HMAC-SHA256 of "t.body"), with
 * duplicates and reordering on demand. It keeps every answer, so that a run can say how many
 * repeats the shop recognised.
 */
export class FakeProvider {
  readonly answers: WebhookAnswer[] = [];
  private readonly sent = new Set<string>();

  constructor(private readonly options: { baseUrl: string; secret: string; currency?: string }) {}

  /** The checkout of `quantity` units at `unitPrice` (the catalogue's price, in major units). */
  checkout(orderNo: string, unitPrice: number | string, quantity = 1): Checkout {
    return {
      orderNo,
      amount: amountInMinorUnits(String(unitPrice), quantity),
      currency: this.options.currency ?? 'CNY',
    };
  }

  event(type: PaymentEventType, checkout: Checkout): ProviderEvent {
    return { id: `evt_${randomUUID()}`, type, data: checkout };
  }

  /** Sends one delivery of `event`, signed now. */
  async send(event: ProviderEvent): Promise<WebhookAnswer> {
    const body = JSON.stringify(event);
    const repeat = this.sent.has(event.id);
    this.sent.add(event.id);
    let answer: WebhookAnswer;
    try {
      const response = await fetch(`${this.options.baseUrl}/api/v1/payments/webhook`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'seckill-signature': signatureHeader([this.options.secret], body),
        },
        body,
      });
      const json = (await response.json().catch(() => ({}))) as { status?: string; code?: string };
      answer = {
        event,
        status: response.status,
        outcome: (response.ok ? json.status : json.code) ?? String(response.status),
        repeat,
      };
    } catch (error) {
      answer = { event, status: 0, outcome: (error as Error).message, repeat };
    }
    this.answers.push(answer);
    return answer;
  }

  /** A payment: started then succeeded (or as `options` say); the answers in sending order. */
  async pay(checkout: Checkout, options: PayOptions = {}): Promise<WebhookAnswer[]> {
    const started = this.event('payment.started', checkout);
    const succeeded = this.event('payment.succeeded', checkout);
    let events = options.skipStart ? [succeeded] : [started, succeeded];
    if (options.reorder) events = events.reverse();
    const answers: WebhookAnswer[] = [];
    for (const event of events) {
      answers.push(await this.send(event));
      if (options.duplicate) answers.push(await this.send(event));
    }
    return answers;
  }

  /** Repeats that the shop answered as it answered the first delivery of the same event. */
  repeatsAnsweredSame(): { repeats: number; same: number } {
    const first = new Map<string, WebhookAnswer>();
    let repeats = 0;
    let same = 0;
    for (const answer of this.answers) {
      const original = first.get(answer.event.id);
      if (!original) {
        first.set(answer.event.id, answer);
        continue;
      }
      repeats++;
      if (original.status === answer.status && original.outcome === answer.outcome) same++;
    }
    return { repeats, same };
  }
}
