import { describe, expect, it, vi } from 'vitest';
import { UnavailableError, UnknownOutcomeError } from '../../common/errors/domain-error.js';
import { toErrorBody } from '../../common/filters/all-exceptions.filter.js';
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

const redisGone = () => new Error('Connection is closed.');

/** A purchase service whose Redis steps and publish behave as given; the void always fails. */
function purchases(
  redisDownMode: AppConfig['redisDownMode'],
  steps: { deduct: () => Promise<{ code: DeductCode }>; published?: boolean },
) {
  const stock = {
    homeKeys: vi.fn(async () => ({})),
    deduct: vi.fn(steps.deduct),
    release: vi.fn(async () => {
      throw redisGone();
    }),
  };
  return new PurchaseService(
    stock as unknown as StockService,
    { tryLockPurchase: vi.fn(async () => ({ release: vi.fn() })) } as unknown as RedisLocks,
    {
      isReady: () => true,
      publish: vi.fn(async () => steps.published ?? false),
    } as unknown as OrderPublisher,
    {} as GoodsService,
    { countPurchase: vi.fn() } as unknown as MetricsService,
    { crashPoint: vi.fn() } as unknown as FaultInjector,
    { closed: () => false } as unknown as SaleRecovery,
    { redisDownMode, purchaseLockTtlMs: 5_000 } as AppConfig,
    { takes: () => false } as unknown as DatabasePurchase,
  );
}

const accepted = async () => ({ code: DeductCode.Accepted });

describe('PurchaseService, an outcome Redis did not let it settle', () => {
  it.each(['database', 'closed'] as const)(
    'should answer 503 with the requestId, not 202, when the publish was not confirmed and the void failed (REDIS_DOWN_MODE=%s)',
    async (mode) => {
      const error = await purchases(mode, { deduct: accepted })
        .purchase(1, 2, 1)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnknownOutcomeError);
      expect(toErrorBody(error)).toMatchObject({
        statusCode: 503,
        code: 'UNAVAILABLE',
        requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      });
    },
  );

  it('should answer 503 with the requestId when the deduct reply was lost and the void failed', async () => {
    const error = await purchases('database', {
      deduct: async () => {
        throw new Error('Command timed out');
      },
    })
      .purchase(1, 2, 1)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownOutcomeError);
    expect((error as UnknownOutcomeError).requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('should answer a plain 503 (nothing taken) when the deduct never left this process', async () => {
    const error = await purchases('closed', {
      deduct: async () => {
        throw new Error("Stream isn't writeable and enableOfflineQueue options is false");
      },
    })
      .purchase(1, 2, 1)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error).not.toBeInstanceOf(UnknownOutcomeError);
    expect(toErrorBody(error)).not.toHaveProperty('requestId');
  });

  it('should answer 202 when the broker confirmed, whatever the void would do', async () => {
    await expect(
      purchases('closed', { deduct: accepted, published: true }).purchase(1, 2, 1),
    ).resolves.toMatchObject({ status: 'QUEUED' });
  });
});
