import { Injectable } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error.js';
import type { Trace } from '../../infra/tracing/tracing.js';
import { PurchaseAvailabilityService } from '../availability/purchase-availability.service.js';
import { MetricsService, type PurchaseMode } from '../metrics/metrics.service.js';
import { DatabasePurchaseService } from './database-purchase.service.js';
import type { PurchaseAccepted, PurchaseStrategy } from './purchase.types.js';
import { rebuilding, RedisPurchaseService } from './redis-purchase.service.js';

/**
 * A purchase, decided once: the availability cuts its ticket, and the ticket's route picks the
 * strategy (Redis, or MySQL while Redis cannot sell the goods) or answers 503 while the sale is
 * rebuilt; every outcome is counted by route.
 */
@Injectable()
export class PurchaseService {
  private readonly strategies: Record<PurchaseMode, PurchaseStrategy>;

  constructor(
    private readonly availability: PurchaseAvailabilityService,
    viaRedis: RedisPurchaseService,
    private readonly viaDatabase: DatabasePurchaseService,
    private readonly metrics: MetricsService,
  ) {
    this.strategies = { redis: viaRedis, database: viaDatabase };
  }

  async purchase(
    goodsId: number,
    userId: number,
    quantity: number,
    trace?: Trace,
  ): Promise<PurchaseAccepted> {
    const ticket = this.availability.ticket(goodsId);
    const mode: PurchaseMode = ticket.route === 'database' ? 'database' : 'redis';
    // Sold elsewhere now: what the MySQL route found sold out must not outlive it (a cancel may
    // give stock back before that route is taken again).
    if (mode !== 'database') this.viaDatabase.backOnRedis(goodsId);
    try {
      if (ticket.route === 'unavailable') throw rebuilding();
      const accepted = await this.strategies[mode].purchase(ticket, userId, quantity, trace);
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
