import type { Repository } from 'typeorm';
import { describe, expect, it, vi } from 'vitest';
import type { OrderEntity } from '../../infra/database/entities/order.entity.js';
import type { Tx } from '../../infra/database/transactions.service.js';
import type { ReplicaReadsService } from '../../infra/database/replica-reads.service.js';
import { OrderRepository, type PendingOrder } from './order.repository.js';

function fakeTx(answer: unknown) {
  const query = vi.fn(async (_sql: string, _params?: unknown[]) => answer);
  return { query, tx: { query } as unknown as Tx };
}

const orders = new OrderRepository({} as Repository<OrderEntity>, {} as ReplicaReadsService);

const row = (n: number, expireAt: PendingOrder['expireAt']): PendingOrder => ({
  orderNo: `no-${n}`,
  requestId: `req-${n}`,
  userId: n,
  goodsId: 9,
  quantity: 1,
  expireAt,
});

describe('OrderRepository', () => {
  it('should write every order of a batch in one INSERT, a deadline as given or after MySQL NOW(3)', async () => {
    const { query, tx } = fakeTx({});
    const at = new Date('2030-01-01T00:00:00Z');
    await orders.insertPending(tx, [row(1, at), row(2, { afterMs: 60_000 })]);

    expect(query).toHaveBeenCalledExactlyOnceWith(
      'INSERT INTO seckill_order (order_no, request_id, user_id, goods_id, quantity, status, expire_at) VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, NOW(3) + INTERVAL ? MICROSECOND)',
      [
        ...['no-1', 'req-1', 1, 9, 1, 'PENDING_PAYMENT', at],
        ...['no-2', 'req-2', 2, 9, 1, 'PENDING_PAYMENT', 60_000_000],
      ],
    );
  });

  it('should write nothing for no orders', async () => {
    const { query, tx } = fakeTx({});
    await orders.insertPending(tx, []);
    expect(query).not.toHaveBeenCalled();
  });

  it('should read an order of the request with a locking read', async () => {
    const { query, tx } = fakeTx([{ 1: 1 }]);
    await expect(orders.hasOrderLocked(tx, 'req-1')).resolves.toBe(true);
    expect(query).toHaveBeenCalledExactlyOnceWith(
      expect.stringMatching(/WHERE request_id = \? LOCK IN SHARE MODE$/),
      ['req-1'],
    );
  });

  it('should move an order out of PENDING_PAYMENT only at its version, the deadline judged by MySQL', async () => {
    const { query, tx } = fakeTx({ affectedRows: 1 });
    await expect(orders.payIfVersion(tx, 5, 2)).resolves.toBe(true);
    await orders.cancelIfVersion(tx, 5, 2, 'passed');
    await orders.cancelIfVersion(tx, 5, 2, 'any');

    const pending = "WHERE id = ? AND status = 'PENDING_PAYMENT' AND version = ?";
    expect(query.mock.calls).toEqual([
      [expect.stringContaining(`${pending} AND expire_at > NOW(3)`), ['PAID', 5, 2]],
      [expect.stringContaining(`${pending} AND expire_at <= NOW(3)`), ['CANCELLED', 5, 2]],
      [expect.stringMatching(/version = \?$/), ['CANCELLED', 5, 2]],
    ]);
  });

  it('should say a transition lost its race when no row changed', async () => {
    const { tx } = fakeTx({ affectedRows: 0 });
    await expect(orders.cancelIfVersion(tx, 5, 2, 'any')).resolves.toBe(false);
  });
});
