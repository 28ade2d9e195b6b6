import { PurchaseTicket } from '../availability/purchase-ticket.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { UnavailableError, UnknownOutcomeError } from '../../common/errors/domain-error.js';
import type { RabbitMqConfig } from '../../config/rabbitmq.config.js';
import type { SeckillConfig } from '../../config/seckill.config.js';
import type { TransactionsService, Tx } from '../../infra/database/transactions.service.js';
import type { FallbackSaleState, GoodsRepository } from '../goods/goods.repository.js';
import type { OrderPublisher } from '../messaging/order.publisher.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { MerchantOutboxRepository } from '../orders/merchant-outbox.repository.js';
import type { OrderRepository } from '../orders/order.repository.js';
import { DatabasePurchaseService } from './database-purchase.service.js';
import type { FallbackGateService } from '../fallback/fallback-gate.service.js';

/** A ticket whose route is MySQL, as PurchaseAvailabilityService cuts one while Redis cannot sell. */
function databaseTicket(goodsId: number): PurchaseTicket {
  return new PurchaseTicket(goodsId, { closed: () => false }, { route: () => 'database' });
}

describe('DatabasePurchaseService', () => {
  /** Repositories whose transactions hang until released, and that count every call. */
  function setup(maxInflight: number, soldOutMemoMs = 1_000) {
    const release: (() => void)[] = [];
    const db = {
      transactions: {
        run: vi.fn<(work: (tx: Tx) => Promise<void>) => Promise<void>>(
          () => new Promise<void>((resolve) => release.push(resolve)),
        ),
      },
      goods: {
        takeStockThroughFallback: vi.fn<GoodsRepository['takeStockThroughFallback']>(),
        fallbackSaleState: vi.fn<GoodsRepository['fallbackSaleState']>(),
        holdFromRedis: vi.fn<GoodsRepository['holdFromRedis']>(),
        fallbackHold: vi.fn<GoodsRepository['fallbackHold']>(),
        openToFallback: vi.fn<GoodsRepository['openToFallback']>(),
      },
      orders: { insertPending: vi.fn<OrderRepository['insertPending']>() },
    };
    const purchases = new DatabasePurchaseService(
      db.transactions as unknown as TransactionsService,
      db.goods as unknown as GoodsRepository,
      db.orders as unknown as OrderRepository,
      { append: vi.fn(async () => undefined) } as unknown as MerchantOutboxRepository,
      { redisDown: () => true, fenceOpenedAt: () => null } as unknown as FallbackGateService,
      { publishTimeouts: vi.fn(async () => true) } as unknown as OrderPublisher,
      new MetricsService(),
      { redisDownMode: 'database', fallbackMaxInflight: maxInflight },
      { orderPaymentTimeoutMs: 60_000, soldOutMemoMs } as SeckillConfig,
      {} as RabbitMqConfig,
    );
    return { db, purchases, release };
  }

  it('should refuse purchases over FALLBACK_MAX_INFLIGHT with 503 without touching MySQL', async () => {
    const { db, purchases, release } = setup(2);
    const held = [
      purchases.purchase(databaseTicket(1), 1, 1),
      purchases.purchase(databaseTicket(1), 2, 1),
    ];
    await vi.waitFor(() => expect(db.transactions.run).toHaveBeenCalledTimes(2));

    await expect(purchases.purchase(databaseTicket(1), 3, 1)).rejects.toMatchObject({
      code: 'UNAVAILABLE',
    });
    expect(db.transactions.run).toHaveBeenCalledTimes(2);
    expect(queries(db)).toBe(2);

    for (const resolve of release) resolve();
    await Promise.all(held);
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** The goods row as the refused UPDATE's follow-up read finds it: open, in its window. */
  const soldOutRow: FallbackSaleState = {
    stock: 0,
    fallbackOpen: true,
    notStarted: false,
    ended: false,
    perUserLimit: 1,
    queue: false,
  };

  /** Each transaction runs its statements, then commits (or fails to). */
  function transactions(
    db: ReturnType<typeof setup>['db'],
    commit: () => Promise<void> = async () => undefined,
  ) {
    db.transactions.run.mockImplementation(async (work) => {
      await work({} as Tx);
      await commit();
    });
  }

  /** A sold-out answer from MySQL (the UPDATE took nothing; the row says why). */
  function soldOutInMysql(db: ReturnType<typeof setup>['db']) {
    transactions(db);
    db.goods.takeStockThroughFallback.mockResolvedValue(false);
    db.goods.fallbackSaleState.mockResolvedValue(soldOutRow);
  }

  /** TransactionsService begun and statements run, in them or not. */
  const queries = (db: ReturnType<typeof setup>['db']) =>
    [db.transactions, db.goods, db.orders]
      .flatMap((fakes) => Object.values(fakes))
      .reduce((sum, fake) => sum + fake.mock.calls.length, 0);

  it('should answer a goods found sold out from memory, without a query', async () => {
    const { db, purchases } = setup(8);
    soldOutInMysql(db);
    await expect(purchases.purchase(databaseTicket(1), 1, 1)).rejects.toMatchObject({
      code: 'SOLD_OUT',
    });
    const calls = queries(db);

    await expect(purchases.purchase(databaseTicket(1), 2, 1)).rejects.toMatchObject({
      code: 'SOLD_OUT',
    });
    expect(queries(db)).toBe(calls);
  });

  it('should ask MySQL again for every purchase with SOLD_OUT_MEMO_MS=0 (the memo off)', async () => {
    const { db, purchases } = setup(8, 0);
    soldOutInMysql(db);
    await expect(purchases.purchase(databaseTicket(1), 1, 1)).rejects.toMatchObject({
      code: 'SOLD_OUT',
    });
    const calls = queries(db);

    await expect(purchases.purchase(databaseTicket(1), 2, 1)).rejects.toMatchObject({
      code: 'SOLD_OUT',
    });
    expect(queries(db)).toBe(2 * calls);
  });

  it('should remember a sold-out goods for SOLD_OUT_MEMO_MS, not a fixed second', async () => {
    const { db, purchases } = setup(8, 200);
    soldOutInMysql(db);
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now);
    await expect(purchases.purchase(databaseTicket(1), 1, 1)).rejects.toMatchObject({
      code: 'SOLD_OUT',
    });
    const calls = queries(db);

    vi.spyOn(Date, 'now').mockReturnValue(now + 199);
    await expect(purchases.purchase(databaseTicket(1), 2, 1)).rejects.toMatchObject({
      code: 'SOLD_OUT',
    });
    expect(queries(db)).toBe(calls);
    vi.spyOn(Date, 'now').mockReturnValue(now + 200);
    await expect(purchases.purchase(databaseTicket(1), 3, 1)).rejects.toMatchObject({
      code: 'SOLD_OUT',
    });
    expect(queries(db)).toBe(2 * calls);
  });

  it('should answer 503 with the requestId when the COMMIT got no answer: the order may exist', async () => {
    const { db, purchases } = setup(8);
    db.goods.takeStockThroughFallback.mockResolvedValue(true);
    transactions(db, async () => {
      throw Object.assign(new Error('Connection lost'), { code: 'PROTOCOL_CONNECTION_LOST' });
    });

    const error = await purchases.purchase(databaseTicket(1), 1, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownOutcomeError);
    expect((error as UnknownOutcomeError).requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('should answer a plain 503 when the connection dropped before the COMMIT: nothing was taken', async () => {
    const { db, purchases } = setup(8);
    transactions(db);
    db.goods.takeStockThroughFallback.mockResolvedValue(true);
    db.orders.insertPending.mockRejectedValue(
      Object.assign(new Error('Connection lost'), { code: 'PROTOCOL_CONNECTION_LOST' }),
    );

    const error = await purchases.purchase(databaseTicket(1), 1, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error).not.toBeInstanceOf(UnknownOutcomeError);
  });
});
