import type { Repository } from 'typeorm';
import { describe, expect, it, vi } from 'vitest';
import type { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import type { Tx } from '../../infra/database/transactions.service.js';
import type { ReplicaReadsService } from '../../infra/database/replica-reads.service.js';
import { GoodsRepository } from './goods.repository.js';

function fakeTx(affectedRows: number) {
  const query = vi.fn(async (_sql: string, _params?: unknown[]) => ({ affectedRows }));
  return { query, tx: { query } as unknown as Tx };
}

const goods = new GoodsRepository({} as Repository<GoodsEntity>, {} as ReplicaReadsService);

describe('GoodsRepository', () => {
  it('should bump the version with every change of the stock, each taking only on its conditions', async () => {
    const { query, tx } = fakeTx(1);
    await expect(goods.takeStockAtVersion(tx, 7, 3, 41)).resolves.toBe(true);
    await expect(goods.takeStockThroughFallback(tx, 7, 2)).resolves.toBe(true);
    await goods.returnStock(tx, 7, 1);

    expect(query.mock.calls).toEqual([
      [
        'UPDATE seckill_goods SET stock = stock - ?, version = version + 1 WHERE id = ? AND version = ? AND stock >= ?',
        [3, 7, 41, 3],
      ],
      [
        "UPDATE seckill_goods SET stock = stock - ?, version = version + 1 WHERE id = ? AND fallback_open = 1 AND admission = 'open' AND stock >= ? AND per_user_limit >= ? AND start_at <= NOW(3) AND end_at > NOW(3)",
        [2, 7, 2, 2],
      ],
      ['UPDATE seckill_goods SET stock = stock + ?, version = version + 1 WHERE id = ?', [1, 7]],
    ]);
  });

  it('should take nothing (false) when the conditional UPDATE changed no row', async () => {
    const { tx } = fakeTx(0);
    await expect(goods.takeStockAtVersion(tx, 7, 3, 41)).resolves.toBe(false);
    await expect(goods.takeStockThroughFallback(tx, 7, 2)).resolves.toBe(false);
  });
});
