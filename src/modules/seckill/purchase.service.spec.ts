import { describe, expect, it, vi } from 'vitest';
import { UnavailableError } from '../../common/errors/domain-error.js';
import type { AppConfig } from '../../config/env.validation.js';
import type { FaultInjector } from '../../config/fault-injector.js';
import type { RedisLocks } from '../../infra/redis/redis-locks.js';
import type { DatabasePurchase } from '../fallback/database-purchase.service.js';
import type { GoodsService } from '../goods/goods.service.js';
import type { OrderPublisher } from '../messaging/order-publisher.service.js';
import type { MetricsService } from '../metrics/metrics.service.js';
import type { SaleRecovery } from '../preheat/sale-recovery.service.js';
import { DeductCode, type StockService } from '../stock/stock.service.js';
import { PurchaseService } from './purchase.service.js';

/**
 * A purchase Redis accepted, whose publish the broker did not confirm and whose void then failed
 * (Redis went down between the two): the message is in Redis's outbox only, as far as anyone knows.
 */
function unconfirmedAndNotVoided(redisDownMode: AppConfig['redisDownMode']) {
  const stock = {
    homeKeys: vi.fn(async () => ({})),
    deduct: vi.fn(async () => ({ code: DeductCode.Accepted })),
    release: vi.fn(async () => {
      throw new Error('Connection is closed.');
    }),
  };
  return new PurchaseService(
    stock as unknown as StockService,
    { tryLockPurchase: vi.fn(async () => ({ release: vi.fn() })) } as unknown as RedisLocks,
    { isReady: () => true, publish: vi.fn(async () => false) } as unknown as OrderPublisher,
    {} as GoodsService,
    { countPurchase: vi.fn() } as unknown as MetricsService,
    { crashPoint: vi.fn() } as unknown as FaultInjector,
    { closed: () => false } as unknown as SaleRecovery,
    { redisDownMode, purchaseLockTtlMs: 5_000 } as AppConfig,
    { takes: () => false } as unknown as DatabasePurchase,
  );
}

describe('PurchaseService, publish not confirmed and void failed', () => {
  it('should answer 503 with REDIS_DOWN_MODE=database: the fallback would not count the outbox message', async () => {
    await expect(unconfirmedAndNotVoided('database').purchase(1, 2, 1)).rejects.toBeInstanceOf(
      UnavailableError,
    );
  });

  it('should answer 202 with REDIS_DOWN_MODE=closed, leaving the message to the outbox sweeper', async () => {
    await expect(unconfirmedAndNotVoided('closed').purchase(1, 2, 1)).resolves.toMatchObject({
      status: 'QUEUED',
    });
  });
});
