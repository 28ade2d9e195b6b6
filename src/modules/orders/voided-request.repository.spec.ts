import type { Repository } from 'typeorm';
import { describe, expect, it, vi } from 'vitest';
import type { VoidedRequestEntity } from '../../infra/database/entities/voided-request.entity.js';
import type { Tx } from '../../infra/database/transactions.service.js';
import { VoidedRequestRepository } from './voided-request.repository.js';

function fakeDb(answer: unknown) {
  const query = vi.fn(async (_sql: string, _params?: unknown[]) => answer);
  const repository = new VoidedRequestRepository({
    query,
  } as unknown as Repository<VoidedRequestEntity>);
  return { repository, query, tx: { query } as unknown as Tx };
}

describe('VoidedRequestRepository', () => {
  it('should stamp a void by MySQL clock, the clock its prune reads', async () => {
    const { repository, query, tx } = fakeDb({});
    await repository.insert(tx, 'req-1', 7);
    expect(query).toHaveBeenCalledExactlyOnceWith(
      expect.stringMatching(/VALUES \(\?, \?, NOW\(3\)\)$/),
      ['req-1', 7],
    );
  });

  it('should answer whether it wrote the void: false for a request voided already, other errors thrown', async () => {
    const { repository, query, tx } = fakeDb({});
    await expect(repository.insert(tx, 'req-1', 7)).resolves.toBe(true);

    const duplicate = Object.assign(new Error("Duplicate entry 'req-1' for key 'PRIMARY'"), {
      code: 'ER_DUP_ENTRY',
      errno: 1062,
    });
    query.mockRejectedValueOnce(duplicate);
    await expect(repository.insert(tx, 'req-1', 7)).resolves.toBe(false);
    // As TypeORM wraps it (QueryFailedError keeps the driver's error).
    query.mockRejectedValueOnce(Object.assign(new Error('wrapped'), { driverError: duplicate }));
    await expect(repository.insert(tx, 'req-1', 7)).resolves.toBe(false);

    query.mockRejectedValueOnce(Object.assign(new Error('gone'), { code: 'ECONNRESET' }));
    await expect(repository.insert(tx, 'req-1', 7)).rejects.toThrow('gone');
  });

  it('should read the voided among the ids with a locking read', async () => {
    const { repository, query, tx } = fakeDb([{ request_id: 'b' }]);
    await expect(repository.voidedAmongLocked(tx, ['a', 'b'])).resolves.toEqual(new Set(['b']));
    expect(query).toHaveBeenCalledExactlyOnceWith(
      expect.stringMatching(/WHERE request_id IN \(\?\) LOCK IN SHARE MODE$/),
      [['a', 'b']],
    );
  });

  it('should delete a batch of old voids by MySQL clock and say how many went', async () => {
    const { repository, query } = fakeDb({ affectedRows: 3 });
    await expect(repository.deleteOlderThan(60_000, 1_000)).resolves.toBe(3);
    expect(query).toHaveBeenCalledWith(
      expect.stringMatching(/voided_at < NOW\(3\)/),
      [60_000_000, 1_000],
    );
  });
});
