import type { NewOrder } from '../messaging/order-message.js';
import type { WriteOutcome } from '../orders/order.types.js';

/** An accepted purchase handed to OrderIngestService. */
export interface IngestPurchase {
  order: NewOrder;
  /** Its message was delivered CONSUMER_MAX_DELIVERIES times already: settle it for good now. */
  exhausted: boolean;
}

/**
 * How a purchase ended, final in both stores: `written`/`duplicate` an order (its payment
 * clock started), `completed` an exhausted one found written, `rejected` (MySQL said no: sold
 * out, already bought), `refused` (MySQL refuses the row itself) and `exhausted` FAILED with
 * the stock back, `voided` released before a consumer claimed it, or its void found in MySQL
 * (dropped). `deferred`: not
 * settled, the service is stopping; its message must go to the next consumer.
 */
export type IngestOutcome =
  | WriteOutcome
  | {
      kind: 'voided' | 'refused' | 'completed' | 'exhausted' | 'deferred';
      order: NewOrder;
    };
