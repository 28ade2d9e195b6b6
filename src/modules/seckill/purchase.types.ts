import type { Trace } from '../../infra/tracing/tracing.js';
import type { PurchaseTicket } from '../availability/purchase-ticket.js';

export interface PurchaseAccepted {
  status: 'QUEUED';
  requestId: string;
}

export interface PurchaseResultView {
  status: 'NONE' | 'QUEUED' | 'SUCCESS' | 'FAILED';
  requestId?: string;
  orderNo?: string;
  reason?: string;
}

/** What the purchase route reads from its headers, besides the user. */
export interface PurchaseCredentials {
  idempotencyKey?: string;
  token?: string;
  /** The request's trace, when it is traced. */
  trace?: Trace;
}

/**
 * One way of deciding a purchase, picked by its ticket's route (PurchaseService): Redis
 * (RedisPurchaseService) or MySQL alone while Redis cannot sell the goods (DatabasePurchaseService).
 */
export interface PurchaseStrategy {
  purchase(
    ticket: PurchaseTicket,
    userId: number,
    quantity: number,
    trace?: Trace,
  ): Promise<PurchaseAccepted>;
}
