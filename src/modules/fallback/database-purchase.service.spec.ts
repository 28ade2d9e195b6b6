import type { DataSource } from 'typeorm';
import { describe, expect, it, vi } from 'vitest';
import { UnavailableError, UnknownOutcomeError } from '../../common/errors/domain-error.js';
import type { AppConfig } from '../../config/env.validation.js';
import type { OrderPublisher } from '../messaging/order-publisher.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { DatabasePurchase } from './database-purchase.service.js';
import type { FallbackGate } from './fallback-gate.service.js';

describe('DatabasePurchase', () => {
  /** A database whose transactions hang until released, and that counts every call. */
  function setup(maxInflight: number) {
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
      {
        redisDownMode: 'database',
        fallbackMaxInflight: maxInflight,
        orderPaymentTimeoutMs: 60_000,
      } as AppConfig,
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

  it('should answer a goods found sold out from memory, without a query', async () => {
    const { db, purchases } = setup(8);
    const sold = {
      stock: 0,
      fallback_open: 1,
      start_at: new Date(Date.now() - 60_000),
      end_at: new Date(Date.now() + 60_000),
      per_user_limit: 1,
    };
    // The conditional UPDATE takes nothing; the goods row says why.
    db.transaction.mockImplementationOnce(((work: (manager: unknown) => Promise<void>) =>
      work({ queryRunner: { query: async () => ({ affected: 0 }) } })) as never);
    db.query.mockResolvedValueOnce([sold]);
    await expect(purchases.purchase(1, 1, 1)).rejects.toMatchObject({ code: 'SOLD_OUT' });
    const calls = db.transaction.mock.calls.length + db.query.mock.calls.length;

    await expect(purchases.purchase(1, 2, 1)).rejects.toMatchObject({ code: 'SOLD_OUT' });
    expect(db.transaction.mock.calls.length + db.query.mock.calls.length).toBe(calls);
  });

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
