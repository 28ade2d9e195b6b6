import type { GoodsStatus } from '../goods/goods.dto.js';
import type { MerchantEventCounts } from '../merchant-events/merchant-event.repository.js';
import type { QueueRole } from '../messaging/order.publisher.js';
import type { LatePaymentCounts } from '../payments/payment-event.repository.js';
import type { SaleVerdict } from '../reconcile/reconcile-verdicts.store.js';
import type { DrawBoard, QueueBoard } from '../waiting-room/queue-control.service.js';

/** Per order status: pending payment, paid, cancelled, paid after its cancel with nothing left. */
export interface ByStatus {
  pendingPayment: number;
  paid: number;
  cancelled: number;
  refundRequired: number;
}

/** One sale as the dashboard shows it: the sale's figures, whichever instance built them. */
export interface SaleFigures {
  id: number;
  name: string;
  totalStock: number;
  startAt: string;
  endAt: string;
  status: GoodsStatus;
  /** Units left: Redis's stock, or MySQL's when Redis does not hold the sale (`preheated` false). */
  remaining: number;
  preheated: boolean;
  /** Units in active orders (pending or paid) plus in flight: what the contract calls sold. */
  sold: number;
  /** Units accepted (202) and not yet written to MySQL, and the purchases they are. */
  inFlight: number;
  inFlightPurchases: number;
  /** MySQL's remaining stock. */
  dbStock: number;
  /** Orders, and units, by status (MySQL). */
  orders: ByStatus;
  units: ByStatus;
  /** The last confirmed reconcile verdict; null until one was taken. */
  verdict: SaleVerdict | null;
  /**
   * Purchase answers per second by outcome (ACCEPTED or the refusal's code), summed over every
   * instance: `codes[code][i]` is the count in second `start + i` (unix seconds).
   */
  rates: { start: number; codes: Record<string, number[]> };
  /** A queue sale's waiting room (null for an open sale, or when Redis was not read). */
  queue: QueueBoard | null;
  /** A draw sale's entries and rights (null for any other sale, or when Redis was not read). */
  draw: DrawBoard | null;
  /** Payments that landed after their order's cancel: taken again, or left to refund. */
  latePayments: LatePaymentCounts;
  /** The merchant's order events of the sale; null while MERCHANT_WEBHOOK_URL is unset. */
  merchantEvents: MerchantEventCounts | null;
}

export interface QueueFigures {
  role: QueueRole;
  queue: string;
  /** Messages ready, not yet delivered to a consumer (for the orders queue: consumer lag). */
  messages: number;
  consumers: number;
}

/** What the feed sends about once a second. */
export interface DashboardSnapshot {
  /** Epoch ms when it was built. */
  at: number;
  sales: SaleFigures[];
  /** null when the broker could not be asked (see `problems`). */
  queues: QueueFigures[] | null;
  /** What could not be read this time (the rest of the snapshot stands). */
  problems: string[];
}
