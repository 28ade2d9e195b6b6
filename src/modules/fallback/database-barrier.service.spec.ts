import { describe, expect, it, vi } from 'vitest';
import type { DataSource } from 'typeorm';
import type { OrderPublisher } from '../messaging/order-publisher.service.js';
import { DatabaseBarrier } from './database-barrier.service.js';

describe('DatabaseBarrier', () => {
  it('should delete the barrier row when its message was not confirmed', async () => {
    const db = {
      query: vi.fn(async (sql: string) =>
        sql.startsWith('SELECT NOW') ? [{ now: new Date() }] : [],
      ),
    };
    const publisher = { publishBarrier: vi.fn(async () => false) };
    const barriers = new DatabaseBarrier(
      db as unknown as DataSource,
      publisher as unknown as OrderPublisher,
    );

    await expect(barriers.open()).rejects.toThrow('not confirmed');

    const inserted = db.query.mock.calls.find(([sql]) =>
      sql.startsWith('INSERT INTO seckill_fallback_barrier'),
    );
    const id = (inserted as unknown as [string, unknown[]])[1][0];
    expect(db.query).toHaveBeenCalledWith('DELETE FROM seckill_fallback_barrier WHERE id = ?', [
      id,
    ]);
  });
});
