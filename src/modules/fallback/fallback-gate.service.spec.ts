import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AppSection } from '../../config/app-section.js';
import type { RabbitMqConfig } from '../../config/rabbitmq.config.js';
import type { RedisWatchdogService } from '../../infra/redis/redis-watchdog.service.js';
import type { GoodsRepository } from '../goods/goods.repository.js';
import type { BucketCountsStore } from '../sale-store/bucket-counts.store.js';
import type { SaleLoaderStore } from '../sale-store/sale-loader.store.js';
import type { DatabaseBarrierService } from './database-barrier.service.js';
import { FallbackGateService, MARKS_LEASE_MS } from './fallback-gate.service.js';

/** A gate on one Redis server, always identified, never dropped, with MySQL mocked. */
function gate() {
  const goods = { staleIds: vi.fn<GoodsRepository['staleIds']>() };
  const watchdog = {
    onDrop: vi.fn(),
    unidentified: vi.fn(() => [] as string[]),
    mastersOf: vi.fn(() => ['']),
    identifiedFor: vi.fn(() => true),
  };
  const buckets = { known: vi.fn(() => 1) };
  const loader = { isPreheated: vi.fn(async () => true) };
  const instance = new FallbackGateService(
    watchdog as unknown as RedisWatchdogService,
    goods as unknown as GoodsRepository,
    buckets as unknown as BucketCountsStore,
    loader as unknown as SaleLoaderStore,
    {} as DatabaseBarrierService,
    { role: 'all' } as AppSection,
    {} as RabbitMqConfig,
  );
  // The interval's tick, run by hand.
  const refresh = () => (instance as unknown as { refresh(): Promise<void> }).refresh();
  return { instance, goods, refresh };
}

describe('FallbackGateService', () => {
  afterEach(() => vi.useRealTimers());

  it('should hold every goods from the Redis path once the marks it read are older than the lease, and free it at the next read', async () => {
    vi.useFakeTimers();
    const { instance, goods, refresh } = gate();
    goods.staleIds.mockResolvedValue([]);
    instance.enable();
    await instance.onApplicationBootstrap();
    expect(instance.holdsRedisPath(1)).toBe(false);

    // MySQL unreachable from here: another instance may be opening goods 1 to the fallback.
    goods.staleIds.mockRejectedValue(new Error('connect ECONNREFUSED'));
    vi.advanceTimersByTime(MARKS_LEASE_MS);
    await refresh();
    expect(instance.holdsRedisPath(1)).toBe(false);
    vi.advanceTimersByTime(1);
    expect(instance.holdsRedisPath(1)).toBe(true);

    goods.staleIds.mockResolvedValue([]);
    await refresh();
    expect(instance.holdsRedisPath(1)).toBe(false);
  });

  it("should keep the Redis path open when this host's wall clock steps back and forth, the marks' lease being measured on the monotonic clock", async () => {
    vi.useFakeTimers();
    const { instance, goods, refresh } = gate();
    goods.staleIds.mockResolvedValue([]);
    instance.enable();
    await instance.onApplicationBootstrap();

    // NTP steps the clock back a minute while the marks are read, then forward again.
    const wallClock = Date.now();
    vi.setSystemTime(wallClock - 60_000);
    await refresh();
    vi.setSystemTime(wallClock);

    expect(instance.holdsRedisPath(1)).toBe(false);
  });

  it('should free the Redis path once the marks are read, when their read failed at start', async () => {
    const { instance, goods, refresh } = gate();
    goods.staleIds.mockRejectedValueOnce(new Error('connect ECONNREFUSED'));
    instance.enable();
    await instance.onApplicationBootstrap();
    expect(instance.holdsRedisPath(1)).toBe(true);

    goods.staleIds.mockResolvedValue([]);
    await refresh();

    expect(instance.holdsRedisPath(1)).toBe(false);
  });

  it('should learn on its next tick of a goods another instance opened to MySQL, having seen no drop itself', async () => {
    const { instance, goods, refresh } = gate();
    goods.staleIds.mockResolvedValue([]);
    instance.enable();
    await instance.onApplicationBootstrap();
    expect(instance.holdsRedisPath(5)).toBe(false);

    goods.staleIds.mockResolvedValue([5]);
    await refresh();

    expect(instance.holdsRedisPath(5)).toBe(true);
    expect(instance.holdsRedisPath(6)).toBe(false);
  });
});
