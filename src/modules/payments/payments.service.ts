import { Injectable, Logger } from '@nestjs/common';
import { DomainError, UnavailableError } from '../../common/errors/domain-error.js';
import { parseJsonBody } from '../../common/http/json-body.js';
import { verifySignature } from '../../common/webhook-signature.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { paymentsConfig, type PaymentsConfig } from '../../config/payments.config.js';
import type { OrderEntity, OrderStatus } from '../../infra/database/entities/order.entity.js';
import { GoodsRepository } from '../goods/goods.repository.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { PaymentResult, RecordPayment } from '../orders/order-payment.types.js';
import { OrderPaymentsService } from '../orders/order-payments.service.js';
import { duplicateKeyIndex } from '../orders/order-writer.service.js';
import { amountInMinorUnits, readPaymentEvent, type PaymentEvent } from './payment-event.js';
import { PaymentEventRepository } from './payment-event.repository.js';

/** The webhook's answer: the event and the status it left its order in. */
export interface WebhookAnswer {
  eventId: string;
  orderNo: string;
  status: OrderStatus;
}

/**
 * The payment provider's webhook (docs/payments.md): the signature over the raw body first, then
 * the event, its order, its amount and currency, then what it does (OrderPaymentsService), with
 * its record written in the same transaction. An event recorded before is answered as it was.
 */
@Injectable()
export class PaymentsService {
  private readonly logger = new Logger(PaymentsService.name);

  constructor(
    @InjectConfig(paymentsConfig) private readonly config: PaymentsConfig,
    private readonly events: PaymentEventRepository,
    private readonly payments: OrderPaymentsService,
    private readonly goods: GoodsRepository,
    private readonly metrics: MetricsService,
  ) {}

  async receive(rawBody: string, signature: string | undefined): Promise<WebhookAnswer> {
    if (this.config.webhookSecrets.length === 0) {
      throw new UnavailableError('Payments are not configured (PAYMENT_WEBHOOK_SECRET is unset)');
    }
    const verdict = verifySignature(
      signature,
      rawBody,
      this.config.webhookSecrets,
      this.config.toleranceSeconds,
    );
    if (verdict !== 'valid') {
      this.metrics.paymentEvents.inc({ type: 'unknown', outcome: 'bad_signature' });
      this.logger.warn(`payment webhook refused: signature ${verdict}`);
      throw new DomainError(
        'BAD_SIGNATURE',
        verdict === 'stale'
          ? `The signature's time is more than ${this.config.toleranceSeconds} s from now`
          : 'The Seckill-Signature header is missing or does not sign this body',
      );
    }
    const event = readPaymentEvent(parseJsonBody(rawBody));
    const seen = await this.events.find(event.id);
    if (seen) return this.repeated(event, seen);
    const order = await this.payments.findByOrderNo(event.data.orderNo);
    if (!order) {
      throw new DomainError('ORDER_NOT_FOUND', 'No order has this order number');
    }
    await this.checkAmount(event, order);
    let result: PaymentResult;
    try {
      result = await this.apply(event, order);
    } catch (error) {
      if (duplicateKeyIndex(error) !== 'PRIMARY') throw error;
      // The same event, delivered twice at once: the other delivery recorded it first, and this
      // one's change was undone with its record.
      const recorded = await this.events.find(event.id);
      if (!recorded) throw error;
      return this.repeated(event, recorded);
    }
    this.metrics.paymentEvents.inc({ type: event.type, outcome: result.outcome });
    this.logger.log(
      `payment event applied: event=${event.id} type=${event.type} order=${order.orderNo} goods=${order.goodsId} outcome=${result.outcome} status=${result.status}`,
    );
    return { eventId: event.id, orderNo: order.orderNo, status: result.status };
  }

  private apply(event: PaymentEvent, order: OrderEntity): Promise<PaymentResult> {
    const record: RecordPayment = (tx, result) =>
      this.events.insert(tx, {
        eventId: event.id,
        type: event.type,
        orderNo: order.orderNo,
        goodsId: order.goodsId,
        outcome: result.outcome,
        status: result.status,
      });
    switch (event.type) {
      case 'payment.succeeded':
        return this.payments.succeeded(order, record);
      case 'payment.started':
        return this.payments.started(order, this.config.graceMs, record);
      case 'payment.failed':
        return this.payments.unchanged(order, record);
    }
  }

  private async checkAmount(event: PaymentEvent, order: OrderEntity): Promise<void> {
    const goods = await this.goods.findById(order.goodsId);
    if (!goods) throw new DomainError('ORDER_NOT_FOUND', 'The goods of this order are gone');
    const expected = amountInMinorUnits(goods.price, order.quantity);
    if (event.data.amount === expected && event.data.currency === this.config.currency) return;
    this.metrics.paymentEvents.inc({ type: event.type, outcome: 'mismatch' });
    this.logger.warn(
      `payment event refused, amount or currency not the order's: event=${event.id} order=${order.orderNo} amount=${event.data.amount} ${event.data.currency} expected=${expected} ${this.config.currency}`,
    );
    throw new DomainError(
      'PAYMENT_MISMATCH',
      `The order is ${expected} ${this.config.currency} in minor units`,
    );
  }

  private repeated(
    event: PaymentEvent,
    seen: { orderNo: string; status: OrderStatus },
  ): WebhookAnswer {
    this.metrics.paymentEvents.inc({ type: event.type, outcome: 'duplicate' });
    this.logger.log(
      `payment event seen before, answered as then: event=${event.id} order=${seen.orderNo}`,
    );
    return { eventId: event.id, orderNo: seen.orderNo, status: seen.status };
  }
}
