import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { FaultInjectorService } from '../../config/fault-injector.service.js';
import type { RedisWatchdogService } from '../../infra/redis/redis-watchdog.service.js';
import {
  CLAIM_LEASE_MS,
  ReleaseCode,
  type PurchaseLedgerStore,
} from '../sale-store/purchase-ledger.store.js';
import { IngestLedgerService } from './ingest-ledger.service.js';
import { OrderIngestService, type PaymentTimeouts } from './order-ingest.service.js';
import type { OrderWriterService } from '../orders/order-writer.service.js';
import type { NewOrder } from '../messaging/order-message.js';
import type { WriteOutcome } from '../orders/order.types.js';
import type { OrdersService } from '../orders/orders.service.js';
import type { VoidedRequestsService } from '../orders/voided-requests.service.js';
import type { FallbackGateService } from '../fallback/fallback-gate.service.js';
import {
  ClosedWhileRedisDownPolicy,
  SellThroughDatabasePolicy,
} from '../fallback/redis-down.policy.js';

const GOODS = 7;
let nextUser = 1;

function order(): NewOrder {
  const userId = nextUser++;
  return {
    requestId: randomUUID(),
    orderNo: `SK${String(userId).padStart(10, '0')}`,
    userId,
    goodsId: GOODS,
    quantity: 1,
    acceptedAt: Date.now(),
  };
}

const fresh = (...orders: NewOrder[]) => orders.map((o) => ({ order: o, exhausted: false }));
const written = (orders: NewOrder[]): WriteOutcome[] =>
  orders.map((o) => ({ kind: 'written', order: o }));
/** What mysql2 throws for a row MariaDB refuses (a failed CHECK). */
const refusedByMysql = () => Object.assign(new Error('CONSTRAINT failed'), { errno: 4025 });
/** What ioredis throws for a command once its connection is gone. */
const redisClosed = () => new Error('Connection is closed.');
/** What ioredis throws for a command past its commandTimeout, the connection still up. */
const redisTimeout = () => new Error('Command timed out');

describe('OrderIngestService', () => {
  const writer = {
    writeBatch: vi.fn<OrderWriterService['writeBatch']>(),
    markRedisStale: vi.fn<OrderWriterService['markRedisStale']>(),
  };
  const orders = { findByRequestId: vi.fn<OrdersService['findByRequestId']>() };
  const stock = {
    claim:
      vi.fn<
        (goodsId: number, purchases: { requestId: string }[], holder: string) => Promise<number[]>
      >(),
    complete: vi.fn<PurchaseLedgerStore['complete']>(),
    release: vi.fn<PurchaseLedgerStore['release']>(),
    claimedElsewhere: vi.fn<PurchaseLedgerStore['claimedElsewhere']>(),
    knownShards: vi.fn<PurchaseLedgerStore['knownShards']>(),
  };
  const voids = { record: vi.fn<VoidedRequestsService['record']>() };
  const watchdog = { identifiedFor: vi.fn<RedisWatchdogService['identifiedFor']>() };
  const timeouts = { publishTimeouts: vi.fn<PaymentTimeouts['publishTimeouts']>() };
  const ingest = new OrderIngestService(
    writer as unknown as OrderWriterService,
    orders as unknown as OrdersService,
    new IngestLedgerService(
      stock as unknown as PurchaseLedgerStore,
      new ClosedWhileRedisDownPolicy(),
      watchdog as unknown as RedisWatchdogService,
      writer as unknown as OrderWriterService,
    ),
    voids as unknown as VoidedRequestsService,
    timeouts,
    { crashPoint: vi.fn(), pausePoint: vi.fn() } as unknown as FaultInjectorService,
  );
  /** REDIS_DOWN_MODE=database: Redis steps are skipped while Redis is down (see IngestLedgerService). */
  const fallbackIngest = new OrderIngestService(
    writer as unknown as OrderWriterService,
    orders as unknown as OrdersService,
    new IngestLedgerService(
      stock as unknown as PurchaseLedgerStore,
      new SellThroughDatabasePolicy({ enable: vi.fn() } as unknown as FallbackGateService),
      watchdog as unknown as RedisWatchdogService,
      writer as unknown as OrderWriterService,
    ),
    voids as unknown as VoidedRequestsService,
    timeouts,
    { crashPoint: vi.fn(), pausePoint: vi.fn() } as unknown as FaultInjectorService,
  );

  beforeEach(() => {
    vi.resetAllMocks();
    stock.claim.mockImplementation(async (_goodsId, purchases) => purchases.map(() => 1));
    stock.complete.mockResolvedValue(0);
    stock.release.mockResolvedValue(1);
    stock.claimedElsewhere.mockResolvedValue(false);
    voids.record.mockResolvedValue('voided');
    writer.writeBatch.mockImplementation(async (_goodsId, batch) => written(batch));
    timeouts.publishTimeouts.mockResolvedValue(true);
    writer.markRedisStale.mockResolvedValue(undefined);
    stock.knownShards.mockReturnValue(1);
    watchdog.identifiedFor.mockReturnValue(true);
  });

  it('should write the claimed purchases in one batch and drop the voided one', async () => {
    const [a, voided, b] = [order(), order(), order()];
    stock.claim.mockResolvedValueOnce([1, 0, 1]);

    const outcomes = await ingest.ingest(GOODS, fresh(a, voided, b));

    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['written', 'voided', 'written']);
    expect(writer.writeBatch).toHaveBeenCalledExactlyOnceWith(GOODS, [a, b], undefined);
    expect(stock.complete).toHaveBeenCalledExactlyOnceWith(GOODS, [
      { requestId: a.requestId, userId: a.userId, orderNo: a.orderNo, quantity: 1 },
      { requestId: b.requestId, userId: b.userId, orderNo: b.orderNo, quantity: 1 },
    ]);
    expect(timeouts.publishTimeouts).toHaveBeenCalledExactlyOnceWith([a, b], undefined);
    expect(stock.release).not.toHaveBeenCalled();
  });

  it('should retry only the timeout publish when the broker did not confirm it, one outcome each', async () => {
    const [voided, a, b] = [order(), order(), order()];
    stock.claim.mockResolvedValueOnce([0, 1, 1]);
    timeouts.publishTimeouts.mockResolvedValueOnce(false).mockResolvedValueOnce(false);

    const outcomes = await ingest.ingest(GOODS, fresh(voided, a, b));

    expect(outcomes).toEqual([
      { kind: 'voided', order: voided },
      { kind: 'written', order: a },
      { kind: 'written', order: b },
    ]);
    expect(stock.claim).toHaveBeenCalledTimes(1);
    expect(writer.writeBatch).toHaveBeenCalledTimes(1);
    expect(timeouts.publishTimeouts).toHaveBeenCalledTimes(3);
  });

  it('should retry a MySQL outage with backoff and report the orders written, not failed', async () => {
    const [a, b] = [order(), order()];
    writer.writeBatch.mockRejectedValueOnce(new Error('connect ECONNREFUSED'));

    const outcomes = await ingest.ingest(GOODS, fresh(a, b));

    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['written', 'written']);
    expect(writer.writeBatch).toHaveBeenCalledTimes(2);
    expect(stock.claim).toHaveBeenCalledTimes(1);
    expect(stock.release).not.toHaveBeenCalled();
  });

  it('should give a rejected purchase its stock back, and start the payment clock of a duplicate', async () => {
    const [dup, taken] = [order(), order()];
    writer.writeBatch.mockResolvedValueOnce([
      { kind: 'duplicate', order: dup },
      { kind: 'rejected', order: taken, reason: 'ALREADY_PURCHASED' },
    ]);

    const outcomes = await ingest.ingest(GOODS, fresh(dup, taken));

    expect(outcomes).toEqual([
      { kind: 'duplicate', order: dup },
      { kind: 'rejected', order: taken, reason: 'ALREADY_PURCHASED' },
    ]);
    expect(stock.release).toHaveBeenCalledExactlyOnceWith(
      GOODS,
      taken.requestId,
      'ALREADY_PURCHASED',
      expect.any(String),
      taken.userId,
    );
    expect(timeouts.publishTimeouts).toHaveBeenCalledExactlyOnceWith([dup], undefined);
  });

  it('should drop a purchase whose void MySQL holds: its stock back through its own claim, no SUCCESS, no payment clock', async () => {
    const [a, voided] = [order(), order()];
    writer.writeBatch.mockResolvedValueOnce([
      { kind: 'voided', order: voided },
      { kind: 'written', order: a },
    ]);

    const outcomes = await ingest.ingest(GOODS, fresh(a, voided));

    expect(outcomes).toEqual([
      { kind: 'written', order: a },
      { kind: 'voided', order: voided },
    ]);
    const holder = stock.claim.mock.calls[0][2];
    expect(stock.release).toHaveBeenCalledExactlyOnceWith(
      GOODS,
      voided.requestId,
      'UNAVAILABLE',
      holder,
      voided.userId,
    );
    expect(stock.complete).toHaveBeenCalledExactlyOnceWith(GOODS, [
      { requestId: a.requestId, userId: a.userId, orderNo: a.orderNo, quantity: 1 },
    ]);
    expect(timeouts.publishTimeouts).toHaveBeenCalledExactlyOnceWith([a], undefined);
  });

  it('should settle a purchase whose void MySQL holds without Redis while it is down (database mode), the goods marked for a rebuild', async () => {
    const voided = order();
    watchdog.identifiedFor.mockReturnValue(false);
    stock.claim.mockRejectedValue(redisClosed());
    stock.release.mockRejectedValue(redisClosed());
    writer.writeBatch.mockResolvedValueOnce([{ kind: 'voided', order: voided }]);

    const outcomes = await fallbackIngest.ingest(GOODS, fresh(voided));

    expect(outcomes).toEqual([{ kind: 'voided', order: voided }]);
    expect(stock.release).toHaveBeenCalledTimes(1);
    expect(writer.markRedisStale).toHaveBeenCalledWith(GOODS);
    expect(stock.complete).not.toHaveBeenCalled();
    expect(timeouts.publishTimeouts).not.toHaveBeenCalled();
  });

  it('should release a rejected purchase once even when the timeout publish is retried', async () => {
    const [a, taken] = [order(), order()];
    writer.writeBatch.mockResolvedValueOnce([
      { kind: 'written', order: a },
      { kind: 'rejected', order: taken, reason: 'SOLD_OUT' },
    ]);
    timeouts.publishTimeouts.mockResolvedValueOnce(false);

    const outcomes = await ingest.ingest(GOODS, fresh(a, taken));

    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['written', 'rejected']);
    expect(stock.release).toHaveBeenCalledTimes(1);
  });

  it('should set aside only the row MySQL refuses and write the rest of the batch', async () => {
    const [a, refused, b] = [order(), order(), order()];
    writer.writeBatch.mockImplementation(async (_goodsId, batch) => {
      if (batch.includes(refused)) throw refusedByMysql();
      return written(batch);
    });

    const outcomes = await ingest.ingest(GOODS, fresh(a, refused, b));

    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['written', 'refused', 'written']);
    expect(stock.release).toHaveBeenCalledExactlyOnceWith(
      GOODS,
      refused.requestId,
      'REJECTED',
      expect.any(String),
      refused.userId,
    );
    expect(timeouts.publishTimeouts.mock.calls).toEqual([
      [[a], undefined],
      [[b], undefined],
    ]);
  });

  it('should complete an exhausted purchase found written, and fail one that is not, without writing either', async () => {
    const [found, lost] = [order(), order()];
    orders.findByRequestId.mockImplementation(async (requestId) =>
      requestId === found.requestId ? ({ requestId } as never) : null,
    );

    const outcomes = await ingest.ingest(GOODS, [
      { order: found, exhausted: true },
      { order: lost, exhausted: true },
    ]);

    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['completed', 'exhausted']);
    expect(stock.complete).toHaveBeenCalledExactlyOnceWith(GOODS, [
      { requestId: found.requestId, userId: found.userId, orderNo: found.orderNo, quantity: 1 },
    ]);
    expect(stock.release).toHaveBeenCalledExactlyOnceWith(
      GOODS,
      lost.requestId,
      'UNDELIVERABLE',
      expect.any(String),
      lost.userId,
    );
    expect(stock.claim).not.toHaveBeenCalled();
    expect(writer.writeBatch).not.toHaveBeenCalled();
  });

  it('should void an exhausted purchase in MySQL before it gives its stock back in Redis', async () => {
    const lost = order();
    const steps: string[] = [];
    stock.claimedElsewhere.mockImplementation(async () => (steps.push('ask'), false));
    voids.record.mockImplementation(async () => (steps.push('void in mysql'), 'voided'));
    stock.release.mockImplementation(async () => (steps.push('release'), ReleaseCode.Released));

    const outcomes = await ingest.ingest(GOODS, [{ order: lost, exhausted: true }]);

    expect(outcomes).toEqual([{ kind: 'exhausted', order: lost }]);
    expect(steps).toEqual(['ask', 'void in mysql', 'release']);
    expect(voids.record).toHaveBeenCalledExactlyOnceWith(lost.requestId, GOODS);
    expect(stock.claimedElsewhere.mock.calls[0][2]).toBe(stock.release.mock.calls[0][3]);
  });

  it('should complete, not release, an exhausted purchase whose order committed before its void', async () => {
    const late = order();
    voids.record.mockResolvedValueOnce('ordered');

    const outcomes = await ingest.ingest(GOODS, [{ order: late, exhausted: true }]);

    expect(outcomes).toEqual([{ kind: 'completed', order: late }]);
    expect(stock.release).not.toHaveBeenCalled();
    expect(stock.complete).toHaveBeenCalledExactlyOnceWith(GOODS, [
      { requestId: late.requestId, userId: late.userId, orderNo: late.orderNo, quantity: 1 },
    ]);
  });

  it('should wait while another consumer holds the claim of an exhausted purchase, voiding nothing, and complete it once that one wrote it', async () => {
    const copy = order();
    orders.findByRequestId.mockResolvedValueOnce(null).mockResolvedValueOnce({} as never);
    stock.claimedElsewhere.mockResolvedValueOnce(true);

    const outcomes = await ingest.ingest(GOODS, [{ order: copy, exhausted: true }]);

    expect(outcomes).toEqual([{ kind: 'completed', order: copy }]);
    expect(voids.record).not.toHaveBeenCalled();
    expect(stock.release).not.toHaveBeenCalled();
    expect(stock.complete).toHaveBeenCalledExactlyOnceWith(GOODS, [
      { requestId: copy.requestId, userId: copy.userId, orderNo: copy.orderNo, quantity: 1 },
    ]);
  });

  it('should retry an exhausted purchase whose writer renewed its claim after the void, and settle it once that one gave it back', async () => {
    const copy = order();
    // The writer came back between the question and the release: it finds the void, gives it up.
    stock.release
      .mockResolvedValueOnce(ReleaseCode.Claimed)
      .mockResolvedValueOnce(ReleaseCode.NotInFlight);

    const outcomes = await ingest.ingest(GOODS, [{ order: copy, exhausted: true }]);

    expect(outcomes).toEqual([{ kind: 'exhausted', order: copy }]);
    expect(voids.record).toHaveBeenCalledTimes(2);
    expect(stock.release).toHaveBeenCalledTimes(2);
  });

  it('should give a rejected purchase up as the holder that claimed it, renewing that claim while it writes', async () => {
    vi.useFakeTimers();
    try {
      const taken = order();
      let commit!: (outcomes: WriteOutcome[]) => void;
      writer.writeBatch.mockReturnValueOnce(new Promise((resolve) => (commit = resolve)));

      const outcomes = ingest.ingest(GOODS, fresh(taken));
      await vi.advanceTimersByTimeAsync(CLAIM_LEASE_MS);
      commit([{ kind: 'rejected', order: taken, reason: 'SOLD_OUT' }]);
      await outcomes;

      const holders = stock.claim.mock.calls.map(([, , holder]) => holder);
      expect(holders.length).toBeGreaterThanOrEqual(3);
      expect(new Set(holders).size).toBe(1);
      expect(stock.release.mock.calls[0][3]).toBe(holders[0]);
      // Renewals end with the write.
      const claims = stock.claim.mock.calls.length;
      await vi.advanceTimersByTimeAsync(CLAIM_LEASE_MS);
      expect(stock.claim).toHaveBeenCalledTimes(claims);
    } finally {
      vi.useRealTimers();
    }
  });

  it('should stop retrying once stopped and defer what is not final, keeping what is', async () => {
    const [voided, a] = [order(), order()];
    stock.claim.mockResolvedValueOnce([0, 1]);
    writer.writeBatch.mockRejectedValue(new Error('connect ECONNREFUSED'));
    const stop = new AbortController();
    stop.abort();

    const outcomes = await ingest.ingest(GOODS, fresh(voided, a), stop.signal);

    expect(outcomes).toEqual([
      { kind: 'voided', order: voided },
      { kind: 'deferred', order: a },
    ]);
    expect(writer.writeBatch).toHaveBeenCalledTimes(1);
  });

  describe('with REDIS_DOWN_MODE=database', () => {
    it('should settle exhausted purchases without Redis while it is down, marking the goods for a rebuild', async () => {
      const [found, lost] = [order(), order()];
      orders.findByRequestId.mockImplementation(async (requestId) =>
        requestId === found.requestId ? ({ requestId } as never) : null,
      );
      stock.complete.mockRejectedValue(redisClosed());
      stock.release.mockRejectedValue(redisClosed());
      stock.claimedElsewhere.mockRejectedValue(redisClosed());
      watchdog.identifiedFor.mockReturnValue(false);

      const outcomes = await fallbackIngest.ingest(GOODS, [
        { order: found, exhausted: true },
        { order: lost, exhausted: true },
      ]);

      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['completed', 'exhausted']);
      expect(stock.complete).toHaveBeenCalledTimes(1);
      expect(stock.release).toHaveBeenCalledTimes(1);
      // No claim can be read: the void in MySQL alone keeps a late copy from being written.
      expect(voids.record).toHaveBeenCalledExactlyOnceWith(lost.requestId, GOODS);
      expect(writer.markRedisStale).toHaveBeenCalledWith(GOODS);
    });

    it('should refuse an order MySQL refuses without Redis while it is down', async () => {
      const refused = order();
      writer.writeBatch.mockRejectedValue(refusedByMysql());
      stock.release.mockRejectedValue(redisClosed());
      watchdog.identifiedFor.mockReturnValue(false);

      const outcomes = await fallbackIngest.ingest(GOODS, fresh(refused));

      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['refused']);
      expect(stock.release).toHaveBeenCalledTimes(1);
      expect(writer.markRedisStale).toHaveBeenCalledWith(GOODS);
    });

    it('should write without the claim while Redis is down for the goods', async () => {
      const a = order();
      stock.claim.mockRejectedValue(redisClosed());
      watchdog.identifiedFor.mockReturnValue(false);

      const outcomes = await fallbackIngest.ingest(GOODS, fresh(a));

      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['written']);
      expect(writer.writeBatch).toHaveBeenCalledExactlyOnceWith(GOODS, [a], undefined);
      expect(writer.markRedisStale).toHaveBeenCalledWith(GOODS);
    });

    it('should not skip a claim that timed out while Redis is up: it may race a void, the batch is retried', async () => {
      const [voided, a] = [order(), order()];
      // The first claim times out (the void of `voided` may be on its way); the retry sees it.
      stock.claim.mockRejectedValueOnce(redisTimeout()).mockResolvedValueOnce([0, 1]);
      watchdog.identifiedFor.mockReturnValue(true);

      const outcomes = await fallbackIngest.ingest(GOODS, fresh(voided, a));

      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['voided', 'written']);
      expect(stock.claim).toHaveBeenCalledTimes(2);
      expect(writer.writeBatch).toHaveBeenCalledExactlyOnceWith(GOODS, [a], undefined);
      expect(writer.markRedisStale).not.toHaveBeenCalled();
    });
  });
});
