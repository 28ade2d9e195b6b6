import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { MerchantDeliveryService } from './merchant-delivery.service.js';

/** How often a worker looks for due events: an order event reaches the shop within this. */
const EVERY_MS = 250;
/** How often a worker drops the events delivered long ago. */
const PRUNE_EVERY_MS = 600_000;
/** The same failure (MySQL down) is logged once per this. */
const FAILURE_LOG_MS = 10_000;

/**
 * Schedules only: on every working instance (not a singleton job: the events' leases share them
 * out, and the delivery does not wait for Redis), a pass every EVERY_MS, none overlapping, and
 * the prune of old deliveries every PRUNE_EVERY_MS. MerchantDeliveryService does the work. Off while MERCHANT_WEBHOOK_URL is unset.
 */
@Injectable()
export class MerchantEventsCron implements OnApplicationBootstrap {
  private readonly logger = new Logger(MerchantEventsCron.name);
  private running = false;
  private failedAt = 0;
  private prunedAt = 0;

  constructor(
    private readonly registry: SchedulerRegistry,
    private readonly delivery: MerchantDeliveryService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.delivery.enabled) return;
    this.registry.addInterval(
      'merchant-events',
      setInterval(() => void this.tick(), EVERY_MS),
    );
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.delivery.deliverDue();
      if (Date.now() - this.prunedAt > PRUNE_EVERY_MS) {
        this.prunedAt = Date.now();
        await this.delivery.prune();
      }
    } catch (error) {
      if (Date.now() - this.failedAt > FAILURE_LOG_MS) {
        this.failedAt = Date.now();
        this.logger.error(`merchant event delivery pass failed: ${(error as Error).message}`);
      }
    } finally {
      this.running = false;
    }
  }
}
