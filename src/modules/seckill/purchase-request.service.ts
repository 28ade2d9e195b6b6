import { Injectable } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { isFinalRefusal } from '../sale-store/deduct-refusals.js';
import { IdempotencyService } from './idempotency.service.js';
import { PurchaseTokenService } from './purchase-token.service.js';
import { PurchaseService } from './purchase.service.js';
import type { PurchaseAccepted, PurchaseCredentials } from './purchase.types.js';

/**
 * The purchase route's steps around the purchase itself: an Idempotency-Key replay first (it
 * needs no fresh token), then the one-time token when required. Rate limits ran before this.
 */
@Injectable()
export class PurchaseRequestService {
  constructor(
    private readonly purchases: PurchaseService,
    private readonly tokens: PurchaseTokenService,
    private readonly idempotency: IdempotencyService,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
  ) {}

  submit(
    goodsId: number,
    userId: number,
    quantity: number,
    credentials: PurchaseCredentials,
  ): Promise<PurchaseAccepted> {
    const attempt = () =>
      this.seckill.requireToken
        ? this.withToken(goodsId, userId, credentials.token, () =>
            this.purchases.purchase(goodsId, userId, quantity, credentials.trace),
          )
        : this.purchases.purchase(goodsId, userId, quantity, credentials.trace);
    return credentials.idempotencyKey
      ? this.idempotency.run(userId, goodsId, quantity, credentials.idempotencyKey, attempt)
      : attempt();
  }

  /**
   * The token is checked before the purchase and spent only by a final answer (accepted, sold
   * out, already purchased, sale ended): a 503 or a concurrent click's DUPLICATE_REQUEST is not
   * the buyer's fault, and the same request retried must still carry a good token.
   */
  private async withToken(
    goodsId: number,
    userId: number,
    token: string | undefined,
    purchase: () => Promise<PurchaseAccepted>,
  ): Promise<PurchaseAccepted> {
    await this.tokens.check(goodsId, userId, token);
    const spend = () => this.tokens.spend(goodsId, userId, token!);
    try {
      const accepted = await purchase();
      await spend();
      return accepted;
    } catch (error) {
      if (isFinalRefusal(error)) await spend();
      throw error;
    }
  }
}
