import type { Repository } from 'typeorm';
import { describe, expect, it, vi } from 'vitest';
import type { VoidedRequestEntity } from '../../infra/database/entities/voided-request.entity.js';
import type { Tx } from '../../infra/database/transactions.js';
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
