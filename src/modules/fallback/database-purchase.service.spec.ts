import type { DataSource } from 'typeorm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { UnavailableError, UnknownOutcomeError } from '../../common/errors/domain-error.js';
import type { RabbitMqConfig } from '../../config/rabbitmq.config.js';
import type { SeckillConfig } from '../../config/seckill.config.js';
import type { OrderPublisher } from '../messaging/order-publisher.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { DatabasePurchase } from './database-purchase.service.js';
import type { FallbackGate } from './fallback-gate.service.js';

describe('DatabasePurchase', () => {
  /** A database whose transactions hang until released, and that counts every call. */
  function setup(maxInflight: number, soldOutMemoMs = 1_000) {
    const release: (() => void)[] = [];
    const db = {
      transaction: vi.fn(() => new Promise<void>((resolve) => release.push(resolve))),
      query: vi.fn(),
    };
    const purchases = new DatabasePurchase(
      db as unknown as DataSource,
      { redisDown: () => true, fenceOpenedAt: () => null } as unknown as FallbackGate,
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
    const held = [purchases.purchase(1, 1, 1), purchases.purchase(1, 2, 1)];
    await vi.waitFor(() => expect(db.transaction).toHaveBeenCalledTimes(2));

    await expect(purchases.purchase(1, 3, 1)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(db.transaction).toHaveBeenCalledTimes(2);
    expect(db.query).not.toHaveBeenCalled();

    for (const resolve of release) resolve();
    await Promise.all(held);
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** The goods row as the refused UPDATE's follow-up read finds it: open, in its window. */
  const soldOutRow = { stock: 0, fallback_open: 1, not_started: 0, ended: 0, per_user_limit: 1 };

  /** Each transaction runs its statements with these answers, then commits (or fails to). */
  function statements(
    db: ReturnType<typeof setup>['db'],
    answers: (() => Promise<unknown>)[],
    commit: () => Promise<void> = async () => undefined,
  ) {
    db.transaction.mockImplementation((async (work: (manager: unknown) => Promise<void>) => {
      const queue = [...answers];
      await work({ queryRunner: { query: () => queue.shift()!() } });
      await commit();
    }) as never);
  }

  /** A sold-out answer from MySQL (the UPDATE took nothing; the row says why). */
  function soldOutInMysql(db: ReturnType<typeof setup>['db']) {
    statements(db, [async () => ({ affected: 0 })]);
    db.query.mockResolvedValue([soldOutRow]);
  }

  const queries = (db: ReturnType<typeof setup>['db']) =>
    db.transaction.mock.calls.length + db.query.mock.calls.length;

  it('should answer a goods found sold out from memory, without a query', async () => {
    const { db, purchases } = setup(8);
    soldOutInMysql(db);
    await expect(purchases.purchase(1, 1, 1)).rejects.toMatchObject({ code: 'SOLD_OUT' });
    const calls = queries(db);

    await expect(purchases.purchase(1, 2, 1)).rejects.toMatchObject({ code: 'SOLD_OUT' });
    expect(queries(db)).toBe(calls);
  });

  it('should ask MySQL again for every purchase with SOLD_OUT_MEMO_MS=0 (the memo off)', async () => {
    const { db, purchases } = setup(8, 0);
    soldOutInMysql(db);
    await expect(purchases.purchase(1, 1, 1)).rejects.toMatchObject({ code: 'SOLD_OUT' });
    const calls = queries(db);

    await expect(purchases.purchase(1, 2, 1)).rejects.toMatchObject({ code: 'SOLD_OUT' });
    expect(queries(db)).toBe(2 * calls);
  });

  it('should remember a sold-out goods for SOLD_OUT_MEMO_MS, not a fixed second', async () => {
    const { db, purchases } = setup(8, 200);
    soldOutInMysql(db);
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now);
    await expect(purchases.purchase(1, 1, 1)).rejects.toMatchObject({ code: 'SOLD_OUT' });
    const calls = queries(db);

    vi.spyOn(Date, 'now').mockReturnValue(now + 199);
    await expect(purchases.purchase(1, 2, 1)).rejects.toMatchObject({ code: 'SOLD_OUT' });
    expect(queries(db)).toBe(calls);
    vi.spyOn(Date, 'now').mockReturnValue(now + 200);
    await expect(purchases.purchase(1, 3, 1)).rejects.toMatchObject({ code: 'SOLD_OUT' });
    expect(queries(db)).toBe(2 * calls);
  });

  it('should answer 503 with the requestId when the COMMIT got no answer: the order may exist', async () => {
    const { db, purchases } = setup(8);
    const taken = async () => ({ affected: 1 });
    statements(db, [taken, taken], async () => {
      throw Object.assign(new Error('Connection lost'), { code: 'PROTOCOL_CONNECTION_LOST' });
    });

    const error = await purchases.purchase(1, 1, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownOutcomeError);
    expect((error as UnknownOutcomeError).requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('should answer a plain 503 when the connection dropped before the COMMIT: nothing was taken', async () => {
    const { db, purchases } = setup(8);
    statements(db, [
      async () => ({ affected: 1 }),
      async () => {
        throw Object.assign(new Error('Connection lost'), { code: 'PROTOCOL_CONNECTION_LOST' });
      },
    ]);

    const error = await purchases.purchase(1, 1, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error).not.toBeInstanceOf(UnknownOutcomeError);
  });
});
