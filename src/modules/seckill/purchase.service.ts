import { Injectable } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error.js';
import { PurchaseAvailabilityService } from '../availability/purchase-availability.service.js';
import { MetricsService, type PurchaseMode } from '../metrics/metrics.service.js';
import type { PurchaseAccepted } from './purchase.types.js';
import { rebuilding, RedisPurchaseService } from './redis-purchase.service.js';

/**
 * A purchase, on the route the availability gives it: Redis (RedisPurchaseService), MySQL while Redis
 * is down (the database mode's fallback), or 503 while the sale is rebuilt; every outcome is
 * counted by route.
 */
@Injectable()
export class PurchaseService {
  constructor(
    private readonly availability: PurchaseAvailabilityService,
    private readonly viaRedis: RedisPurchaseService,
    private readonly metrics: MetricsService,
  ) {}

  async purchase(goodsId: number, userId: number, quantity: number): Promise<PurchaseAccepted> {
    // Redis unreachable, being rebuilt, or behind MySQL for this sale: MySQL decides (or 503).
    const route = this.availability.route(goodsId);
    const mode: PurchaseMode = route === 'database' ? 'database' : 'redis';
    try {
      if (route === 'unavailable') throw rebuilding();
      const accepted =
        mode === 'database'
          ? await this.availability.sellThroughDatabase(goodsId, userId, quantity)
          : await this.viaRedis.purchase(goodsId, userId, quantity);
      this.metrics.countPurchase(goodsId, 'ACCEPTED', mode);
      return accepted;
    } catch (error) {
      this.metrics.countPurchase(
        goodsId,
        error instanceof DomainError ? error.code : 'INTERNAL_ERROR',
        mode,
      );
      throw error;
    }
  }
}
