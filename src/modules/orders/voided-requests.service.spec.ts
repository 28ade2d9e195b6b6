import { describe, expect, it, vi } from 'vitest';
import type { TransactionsService, Tx } from '../../infra/database/transactions.service.js';
import type { OrderRepository } from './order.repository.js';
import type { VoidedRequestRepository } from './voided-request.repository.js';
import { VoidedRequestsService } from './voided-requests.service.js';

const deadlock = () => Object.assign(new Error('Deadlock found'), { code: 'ER_LOCK_DEADLOCK' });

/**
 * Repositories that run `statement` for each call, in order, inside transactions that roll back
 * (counted) when the callback throws. The void's insert answers whether it wrote a row: not when
 * `voidThere` (the request's void is committed already).
 */
function fakeDb(statement: (call: string) => unknown, { voidThere = false } = {}) {
  const log: string[] = [];
  let rollbacks = 0;
  const tx = {} as Tx;
  const answer = (call: string) =>
    vi.fn(async () => {
      log.push(call);
      return statement(call);
    });
  const voidRows = {
    insert: vi.fn(async () => {
      log.push('insert void');
      statement('insert void');
      return !voidThere;
    }),
    voidedAmongLocked: answer('voided among, locking'),
    deleteOlderThan: answer('delete old voids'),
  };
  const orders = { hasOrderLocked: answer('order exists, locking') };
  const transactions = {
    run: vi.fn(async (work: (tx: Tx) => Promise<unknown>) => {
      try {
        return await work(tx);
      } catch (error) {
        rollbacks++;
        throw error;
      }
    }),
  };
  return {
    voids: new VoidedRequestsService(
      transactions as unknown as TransactionsService,
      voidRows as unknown as VoidedRequestRepository,
      orders as unknown as OrderRepository,
    ),
    transactions,
    voidRows,
    tx,
    log,
    rollbacks: () => rollbacks,
  };
}

describe('VoidedRequestsService', () => {
  it('should insert the void before the locking read of the order, and commit it when there is no order', async () => {
    const { voids, voidRows, tx, log, rollbacks } = fakeDb(() => false);
    await expect(voids.record('req-1', 7)).resolves.toBe('voided');
    expect(log).toEqual(['insert void', 'order exists, locking']);
    expect(voidRows.insert).toHaveBeenCalledWith(tx, 'req-1', 7);
    expect(rollbacks()).toBe(0);
  });

  it('should say voided, reading no order, when the void is recorded already (a release retried after it)', async () => {
    const { voids, log, rollbacks } = fakeDb(() => true, { voidThere: true });
    await expect(voids.record('req-1', 7)).resolves.toBe('voided');
    expect(log).toEqual(['insert void']);
    expect(rollbacks()).toBe(0);
  });

  it('should roll the void back and say ordered when the order exists', async () => {
    const { voids, rollbacks } = fakeDb((call) => call === 'order exists, locking');
    await expect(voids.record('req-1', 7)).resolves.toBe('ordered');
    expect(rollbacks()).toBe(1);
  });

  it('should retry a void InnoDB rolled back as a deadlock victim, and settle on the retry', async () => {
    let reads = 0;
    const { voids, transactions } = fakeDb((call) => {
      if (call !== 'order exists, locking') return undefined;
      if (++reads === 1) throw deadlock();
      return true;
    });
    await expect(voids.record('req-1', 7)).resolves.toBe('ordered');
    expect(transactions.run).toHaveBeenCalledTimes(2);
  });

  it('should throw, not answer, when MySQL cannot be reached or keeps deadlocking', async () => {
    const down = fakeDb(() => {
      throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    });
    await expect(down.voids.record('req-1', 7)).rejects.toThrow('ECONNREFUSED');
    expect(down.transactions.run).toHaveBeenCalledTimes(1);

    const stuck = fakeDb(() => {
      throw deadlock();
    });
    await expect(stuck.voids.record('req-1', 7)).rejects.toThrow('Deadlock');
    expect(stuck.transactions.run).toHaveBeenCalledTimes(5);
  });

  it("should read the voided among the given ids in the writer's transaction, and ask nothing for none", async () => {
    const { voids, voidRows, tx } = fakeDb(() => new Set(['b']));
    await expect(voids.voidedAmong(tx, [])).resolves.toEqual(new Set());
    expect(voidRows.voidedAmongLocked).not.toHaveBeenCalled();
    await expect(voids.voidedAmong(tx, ['a', 'b'])).resolves.toEqual(new Set(['b']));
    expect(voidRows.voidedAmongLocked).toHaveBeenCalledExactlyOnceWith(tx, ['a', 'b']);
  });

  it('should prune in batches until a batch comes back short, with the retention given', async () => {
    const deleted = [1_000, 1_000, 3];
    const { voids, voidRows } = fakeDb(() => deleted.shift());
    await expect(voids.prune(60_000)).resolves.toBe(2_003);
    expect(voidRows.deleteOlderThan).toHaveBeenCalledTimes(3);
    expect(voidRows.deleteOlderThan).toHaveBeenCalledWith(60_000, 1_000);
  });
});
