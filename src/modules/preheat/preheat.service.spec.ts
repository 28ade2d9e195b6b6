import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RabbitMqConfig } from '../../config/rabbitmq.config.js';
import type { GoodsService } from '../goods/goods.service.js';
import type { RedisBarrierStore } from '../messaging/redis-barrier.store.js';
import type { OrdersService, SaleHistory } from '../orders/orders.service.js';
import type { SaleStateHold, SaleStateLockService } from '../sale-store/sale-state-lock.service.js';
import type { QueueRestoreService } from '../queue-journal/queue-restore.service.js';
import type { SaleLoaderStore } from '../sale-store/sale-loader.store.js';
import { PreheatService } from './preheat.service.js';

const CONFIRM_MS = 1_000;

/**
 * A sale that has sold (MySQL has orders), or with `unsold` one MySQL has no orders of, on fakes
 * whose state the test changes.
 */
function setup({ unsold = false } = {}) {
  const state = {
    preheated: false,
    lastRebuild: null as string | null,
    rebuilds: 0,
    loadedBefore: false,
  };
  const goods = {
    markFirstLoad: vi.fn(async () => {
      const first = !state.loadedBefore;
      state.loadedBefore = true;
      return first;
    }),
    findOrThrow: vi.fn(async () => ({
      id: 1,
      stock: unsold ? 10 : 7,
      totalStock: 10,
      startAt: new Date(0),
      endAt: new Date(8.64e15),
      perUserLimit: 1,
      stockShards: 4,
    })),
  };
  const orders = {
    hasOrders: vi.fn(async () => !unsold),
    lastRebuild: vi.fn(async () => state.lastRebuild),
    history: vi.fn(async (_goodsId: number, load: (history: SaleHistory) => Promise<unknown>) => {
      state.lastRebuild = `here-${++state.rebuilds}`;
      return load({ stock: unsold ? 10 : 7, activeOrders: [], buyers: [], cancelledOrderNos: [] });
    }),
  };
  const stock = {
    isPreheated: vi.fn(async () => state.preheated),
    forget: vi.fn(async () => undefined),
    preheat: vi.fn(async (..._load: unknown[]) => {
      state.preheated = true;
      return { loaded: true, lost: false, stock: unsold ? 10 : 7 };
    }),
  };
  let barriers = 0;
  const barrier = {
    open: vi.fn(async () => ({
      id: `b${++barriers}`,
      openedAt: performance.now(),
      seen: new Set(),
    })),
    check: vi.fn(async () => 'passed' as const),
  };
  const lock = {
    hold: (goodsId: number, _path: string, work: (held: SaleStateHold) => Promise<unknown>) =>
      work({ goodsId } as SaleStateHold),
  };
  const preheat = new PreheatService(
    goods as unknown as GoodsService,
    orders as unknown as OrdersService,
    stock as unknown as SaleLoaderStore,
    barrier as unknown as RedisBarrierStore,
    lock as unknown as SaleStateLockService,
    {
      restoreHeld: vi.fn(async () => undefined),
      ensureHeld: vi.fn(async () => undefined),
    } as unknown as QueueRestoreService,
    { publishConfirmTimeoutMs: CONFIRM_MS } as RabbitMqConfig,
  );
  return { state, goods, orders, stock, barrier, preheat };
}

describe('PreheatService: the rebuild of a sale that has sold', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(100_000);
  });
  afterEach(() => vi.useRealTimers());

  const later = (ms: number) => vi.advanceTimersByTime(ms);

  it('should wipe first and count MySQL only after a barrier opened once every purchase of the wiped copy is in the broker', async () => {
    const { orders, stock, barrier, preheat } = setup();
    await expect(preheat.preheat(1)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(stock.forget).toHaveBeenCalledTimes(1);
    expect(barrier.open).not.toHaveBeenCalled();

    later(CONFIRM_MS);
    await expect(preheat.preheat(1)).resolves.toMatchObject({ loaded: true, stock: 7 });
    // Nothing was loaded since its wipe: it is not wiped again.
    expect(stock.forget).toHaveBeenCalledTimes(1);
    expect(barrier.open).toHaveBeenCalledTimes(1);
    expect(orders.history).toHaveBeenCalledTimes(1);
  });

  it("should wait the whole confirm timeout after its wipe though this host's wall clock steps forward meanwhile", async () => {
    const { barrier, preheat } = setup();
    await expect(preheat.preheat(1)).rejects.toMatchObject({ code: 'UNAVAILABLE' });

    vi.setSystemTime(Date.now() + 10 * CONFIRM_MS);
    await expect(preheat.preheat(1)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(barrier.open).not.toHaveBeenCalled();

    later(CONFIRM_MS);
    await expect(preheat.preheat(1)).resolves.toMatchObject({ loaded: true });
  });

  it('should not reuse a barrier that passed before, once the sale was lost again', async () => {
    const { state, orders, stock, barrier, preheat } = setup();
    await preheat.preheat(1).catch(() => undefined);
    later(CONFIRM_MS);
    await preheat.preheat(1);
    expect(barrier.open).toHaveBeenCalledTimes(1);

    // The rebuilt copy sells, then Redis loses it again.
    later(5_000);
    state.preheated = false;
    await expect(preheat.preheat(1)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(stock.forget).toHaveBeenCalledTimes(2);
    expect(orders.history).toHaveBeenCalledTimes(1);
    later(CONFIRM_MS);
    await preheat.preheat(1);
    expect(barrier.open).toHaveBeenCalledTimes(2);
    expect(orders.history).toHaveBeenCalledTimes(2);
  });

  it('should begin anew, with a wipe of its own, when the goods was rebuilt elsewhere since it began', async () => {
    const { state, orders, stock, barrier, preheat } = setup();
    await preheat.preheat(1).catch(() => undefined);
    // Another instance rebuilt it (its copy may have sold), and it was lost again.
    state.lastRebuild = 'elsewhere';
    later(CONFIRM_MS);
    await expect(preheat.preheat(1)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(stock.forget).toHaveBeenCalledTimes(2);
    expect(barrier.open).not.toHaveBeenCalled();
    expect(orders.history).not.toHaveBeenCalled();
  });

  it('should leave alone a sale another path loaded while this one waited for the lock', async () => {
    const { state, orders, stock, preheat } = setup();
    await preheat.preheat(1).catch(() => undefined);
    state.preheated = true;
    later(CONFIRM_MS);
    await expect(preheat.preheat(1)).resolves.toMatchObject({ loaded: true });
    expect(stock.forget).toHaveBeenCalledTimes(1);
    expect(orders.history).not.toHaveBeenCalled();
    // Only the window and limit are refreshed, from no history. The load is told what the
    // premise read under the lock found: a Redis that restarted empty since must not have the
    // sale loaded whole, without its buyers.
    expect(stock.preheat).toHaveBeenCalledWith(1, expect.objectContaining({ stock: 7 }), 'refresh');
  });

  it('should answer UNAVAILABLE, loading nothing, when the sale it found loaded left Redis before its refresh', async () => {
    const { state, orders, stock, preheat } = setup();
    state.preheated = true;
    stock.preheat.mockResolvedValueOnce({ loaded: false, lost: true, stock: 0 });
    await expect(preheat.preheat(1)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    // Its next preheat finds it gone and rebuilds it with its history, after a wipe and a barrier.
    state.preheated = false;
    await expect(preheat.preheat(1)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(stock.forget).toHaveBeenCalledTimes(1);
    later(CONFIRM_MS);
    await expect(preheat.preheat(1)).resolves.toMatchObject({ loaded: true, stock: 7 });
    expect(orders.history).toHaveBeenCalledTimes(1);
  });
});

describe('PreheatService: a sale MySQL has no orders of', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(100_000);
  });
  afterEach(() => vi.useRealTimers());

  it('should load its full stock at once on its first load, marked in MySQL before', async () => {
    const { goods, stock, barrier, preheat } = setup({ unsold: true });
    await expect(preheat.preheat(1)).resolves.toMatchObject({ loaded: true, stock: 10 });
    expect(goods.markFirstLoad).toHaveBeenCalledTimes(1);
    expect(stock.forget).not.toHaveBeenCalled();
    expect(barrier.open).not.toHaveBeenCalled();
  });

  it('should rebuild it after a barrier once Redis lost it: its orders may all be on their way', async () => {
    const { state, stock, barrier, orders, preheat } = setup({ unsold: true });
    await preheat.preheat(1);
    // Redis sold it, then restarted empty before any order was written.
    state.preheated = false;
    await expect(preheat.preheat(1)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(stock.forget).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(CONFIRM_MS);
    await expect(preheat.preheat(1)).resolves.toMatchObject({ loaded: true });
    expect(barrier.open).toHaveBeenCalledTimes(1);
    expect(orders.history).toHaveBeenCalledTimes(1);
  });
});

describe('PreheatService: the load a rebuild asks for', () => {
  it('should be a load with the history it read, not a refresh', async () => {
    vi.useFakeTimers();
    try {
      const { stock, preheat } = setup();
      await preheat.preheat(1).catch(() => undefined);
      vi.advanceTimersByTime(CONFIRM_MS);
      await preheat.preheat(1);
      const history = stock.preheat.mock.calls[0]?.[2];
      expect(history).not.toBe('refresh');
      expect(history).toMatchObject({
        buyers: expect.any(Array),
        cancelledOrderNos: expect.any(Array),
      });
    } finally {
      vi.useRealTimers();
    }
  });
});
