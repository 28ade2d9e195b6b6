import type { LoadMonitorService } from '../overload/load-monitor.service.js';
import { describe, expect, it, vi } from 'vitest';
import { UnavailableError, UnknownOutcomeError } from '../../common/errors/domain-error.js';
import { toErrorBody } from '../../common/errors/error-body.js';
import type { FaultInjectorService } from '../../config/fault-injector.service.js';
import type { GoodsService } from '../goods/goods.service.js';
import type { OrderPublisher } from '../messaging/order.publisher.js';
import type { MetricsService } from '../metrics/metrics.service.js';
import type { VoidedRequestsService } from '../orders/voided-requests.service.js';
import type { PurchaseAvailabilityService } from '../availability/purchase-availability.service.js';
import { PurchaseTicket } from '../availability/purchase-ticket.js';
import type { DatabasePurchaseService } from './database-purchase.service.js';
import {
  DeductCode,
  ReleaseCode,
  type PurchaseLedgerStore,
} from '../sale-store/purchase-ledger.store.js';
import { PurchaseSettlementService } from './purchase-settlement.service.js';
import type { PurchaseLocksService } from './purchase-locks.service.js';
import { PurchaseService } from './purchase.service.js';
import { RedisPurchaseService } from './redis-purchase.service.js';

const redisGone = () => new Error('Connection is closed.');
const mysqlGone = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

/** The last purchase service's MySQL void and Redis release. */
const voids = { record: vi.fn<VoidedRequestsService['record']>() };
let releases: ReturnType<typeof vi.fn>;
let publishes: ReturnType<typeof vi.fn>;

/**
 * A purchase service whose Redis steps, publish and MySQL void behave as given; the Redis
 * release always fails, the MySQL void records unless told otherwise.
 */
function purchases(steps: {
  deduct: () => Promise<{ code: DeductCode }>;
  published?: boolean;
  recordVoid?: () => Promise<'voided' | 'ordered'>;
  /** The goods is held from the Redis path from the deduct on (another instance opens it to MySQL). */
  heldAfterDeduct?: boolean;
  release?: () => Promise<ReleaseCode>;
}) {
  let deducted = false;
  const stock = {
    homeKeys: vi.fn(async () => ({})),
    deduct: vi.fn(async () => {
      deducted = true;
      return steps.deduct();
    }),
    release: vi.fn(
      steps.release ??
        (async () => {
          throw redisGone();
        }),
    ),
  };
  voids.record = vi.fn<VoidedRequestsService['record']>(
    steps.recordVoid ?? (async () => 'voided' as const),
  );
  releases = stock.release;
  publishes = vi.fn(async () => steps.published ?? false);
  const metrics = {
    countPurchase: vi.fn(),
    fallbackRefusals: { inc: vi.fn() },
    purchaseStages: { observe: vi.fn() },
  } as unknown as MetricsService;
  const ledger = stock as unknown as PurchaseLedgerStore;
  const availability = {
    // The Redis route throughout; held from it after the deduct when the step says so.
    ticket: (goodsId: number) =>
      new PurchaseTicket(
        goodsId,
        { closed: () => false },
        {
          route: (_goodsId: number, redisClosed: boolean) =>
            !redisClosed && (steps.heldAfterDeduct ?? false) && deducted ? 'database' : 'redis',
        },
      ),
  } as unknown as PurchaseAvailabilityService;
  const viaRedis = new RedisPurchaseService(
    ledger,
    { tryLock: vi.fn(async () => ({ release: vi.fn() })) } as unknown as PurchaseLocksService,
    { isReady: () => true, publish: publishes } as unknown as OrderPublisher,
    new PurchaseSettlementService(
      ledger,
      voids as unknown as VoidedRequestsService,
      {} as GoodsService,
      metrics,
    ),
    { crashPoint: vi.fn() } as unknown as FaultInjectorService,
    metrics,
    { confirmStarted: () => () => undefined } as unknown as LoadMonitorService,
  );
  const viaDatabase = { backOnRedis: vi.fn() } as unknown as DatabasePurchaseService;
  return new PurchaseService(availability, viaRedis, viaDatabase, metrics);
}

const accepted = async () => ({ code: DeductCode.Accepted });

describe('PurchaseService, an outcome Redis did not let it settle', () => {
  it('should answer 503 with the requestId, not 202, when the publish was not confirmed and MySQL did not record the void, and leave Redis alone', async () => {
    const error = await purchases({
      deduct: accepted,
      recordVoid: async () => {
        throw mysqlGone();
      },
    })
      .purchase(1, 2, 1)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownOutcomeError);
    expect(toErrorBody(error)).toMatchObject({
      statusCode: 503,
      code: 'UNAVAILABLE',
      requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    // Still in flight in Redis: its message (or the sweeper's copy) makes it an order.
    expect(releases).not.toHaveBeenCalled();
  });

  it('should answer a plain 503 (nothing taken) once MySQL recorded the void, even when Redis then fails to give the stock back', async () => {
    const error = await purchases({ deduct: accepted })
      .purchase(1, 2, 1)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error).not.toBeInstanceOf(UnknownOutcomeError);
    expect(toErrorBody(error)).not.toHaveProperty('requestId');
    const [[requestId, goodsId]] = voids.record.mock.calls;
    expect(goodsId).toBe(1);
    expect(releases).toHaveBeenCalledExactlyOnceWith(1, requestId, 'UNAVAILABLE', false, 2);
  });

  it('should answer 202 when MySQL finds the order a consumer wrote before the void, and not release it', async () => {
    await expect(
      purchases({ deduct: accepted, recordVoid: async () => 'ordered' }).purchase(1, 2, 1),
    ).resolves.toMatchObject({ status: 'QUEUED' });
    expect(releases).not.toHaveBeenCalled();
  });

  it('should answer 503 with the requestId when the deduct reply was lost and the void failed', async () => {
    const error = await purchases({
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
    const error = await purchases({
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

  it('should answer 202 when the broker confirmed, with no void asked of MySQL or Redis', async () => {
    await expect(
      purchases({ deduct: accepted, published: true }).purchase(1, 2, 1),
    ).resolves.toMatchObject({ status: 'QUEUED' });
    expect(voids.record).not.toHaveBeenCalled();
    expect(releases).not.toHaveBeenCalled();
  });
});

describe('PurchaseService, a purchase Redis took while its goods was being held from the Redis path', () => {
  it('should give it back in Redis before any publish and answer 503, nothing taken', async () => {
    const error = await purchases({
      deduct: accepted,
      heldAfterDeduct: true,
      published: true,
      release: async () => ReleaseCode.Released,
    })
      .purchase(1, 2, 1)
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(UnavailableError);
    expect(toErrorBody(error)).toMatchObject({ statusCode: 503, code: 'UNAVAILABLE' });
    expect(toErrorBody(error)).not.toHaveProperty('requestId');
    expect(releases).toHaveBeenCalledWith(1, expect.any(String), 'UNAVAILABLE', false, 2);
    expect(publishes).not.toHaveBeenCalled();
  });

  it('should answer 503 with the requestId when Redis does not answer that release', async () => {
    const error = await purchases({
      deduct: accepted,
      heldAfterDeduct: true,
      published: true,
    })
      .purchase(1, 2, 1)
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(UnknownOutcomeError);
    expect(toErrorBody(error)).toMatchObject({ statusCode: 503, requestId: expect.any(String) });
    expect(publishes).not.toHaveBeenCalled();
  });
});
