import { describe, expect, it, vi } from 'vitest';
import type { DataSource, QueryRunner } from 'typeorm';
import { VoidedRequests } from './voided-requests.service.js';

const deadlock = () => Object.assign(new Error('Deadlock found'), { code: 'ER_LOCK_DEADLOCK' });

/**
 * A DataSource whose transactions run `statement` for each query, in order, and roll back (count
 * them) when the callback throws.
 */
function fakeDb(statement: (sql: string, params: unknown[]) => unknown) {
  const log: string[] = [];
  let rollbacks = 0;
  const runner = {
    query: vi.fn(async (sql: string, params: unknown[]) => {
      log.push(sql);
      return statement(sql, params);
    }),
  };
  const db = {
    transaction: vi.fn(async (work: (manager: { queryRunner: unknown }) => Promise<unknown>) => {
      try {
        return await work({ queryRunner: runner });
      } catch (error) {
        rollbacks++;
        throw error;
      }
    }),
    query: runner.query,
  };
  return {
    voids: new VoidedRequests(db as unknown as DataSource),
    db,
    runner,
    log,
    rollbacks: () => rollbacks,
  };
}

describe('VoidedRequests', () => {
  it('should insert the void before the locking read of the order, and commit it when there is no order', async () => {
    const { voids, log, rollbacks } = fakeDb((sql) => (sql.startsWith('SELECT') ? [] : {}));
    await expect(voids.record('req-1', 7)).resolves.toBe('voided');
    expect(log).toEqual([
      expect.stringMatching(/^INSERT INTO seckill_voided_request/),
      expect.stringMatching(/FROM seckill_order WHERE request_id = \? LOCK IN SHARE MODE$/),
    ]);
    expect(rollbacks()).toBe(0);
  });

  it('should roll the void back and say ordered when the order exists', async () => {
    const { voids, rollbacks } = fakeDb((sql) => (sql.startsWith('SELECT') ? [{ 1: 1 }] : {}));
    await expect(voids.record('req-1', 7)).resolves.toBe('ordered');
    expect(rollbacks()).toBe(1);
  });

  it('should retry a void InnoDB rolled back as a deadlock victim, and settle on the retry', async () => {
    let selects = 0;
    const { voids, db } = fakeDb((sql) => {
      if (!sql.startsWith('SELECT')) return {};
      if (++selects === 1) throw deadlock();
      return [{ 1: 1 }];
    });
    await expect(voids.record('req-1', 7)).resolves.toBe('ordered');
    expect(db.transaction).toHaveBeenCalledTimes(2);
  });

  it('should throw, not answer, when MySQL cannot be reached or keeps deadlocking', async () => {
    const down = fakeDb(() => {
      throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    });
    await expect(down.voids.record('req-1', 7)).rejects.toThrow('ECONNREFUSED');
    expect(down.db.transaction).toHaveBeenCalledTimes(1);

    const stuck = fakeDb(() => {
      throw deadlock();
    });
    await expect(stuck.voids.record('req-1', 7)).rejects.toThrow('Deadlock');
    expect(stuck.db.transaction).toHaveBeenCalledTimes(5);
  });

  it('should read the voided among the given ids with a locking read, and ask nothing for none', async () => {
    const { voids, runner } = fakeDb(() => [{ request_id: 'b' }]);
    const query = runner as unknown as QueryRunner;
    await expect(voids.voidedAmong(query, [])).resolves.toEqual(new Set());
    expect(runner.query).not.toHaveBeenCalled();
    await expect(voids.voidedAmong(query, ['a', 'b'])).resolves.toEqual(new Set(['b']));
    expect(runner.query).toHaveBeenCalledExactlyOnceWith(
      expect.stringMatching(/WHERE request_id IN \(\?\) LOCK IN SHARE MODE$/),
      [['a', 'b']],
    );
  });

  it('should prune in batches until a batch comes back short, by MySQL clock and the retention given', async () => {
    const deleted = [1_000, 1_000, 3];
    const { voids, runner } = fakeDb(() => ({ affectedRows: deleted.shift() }));
    await expect(voids.prune(60_000)).resolves.toBe(2_003);
    expect(runner.query).toHaveBeenCalledTimes(3);
    expect(runner.query).toHaveBeenCalledWith(
      expect.stringMatching(/voided_at < NOW\(3\)/),
      [60_000_000, 1_000],
    );
  });
});
