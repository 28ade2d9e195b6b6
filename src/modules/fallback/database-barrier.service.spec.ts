import { describe, expect, it, vi } from 'vitest';
import type { OrderPublisher } from '../messaging/order.publisher.js';
import { DatabaseBarrierService } from './database-barrier.service.js';
import type { FallbackBarrierRepository } from './fallback-barrier.repository.js';

describe('DatabaseBarrierService', () => {
  it('should delete the barrier row when its message was not confirmed', async () => {
    const rows = {
      insert: vi.fn(async () => new Date()),
      delete: vi.fn(async () => undefined),
      liveSessions: vi.fn(async () => []),
      openIds: vi.fn(async () => []),
    };
    const publisher = { publishBarrier: vi.fn(async () => false) };
    const barriers = new DatabaseBarrierService(
      rows as unknown as FallbackBarrierRepository,
      publisher as unknown as OrderPublisher,
    );

    await expect(barriers.open()).rejects.toThrow('not confirmed');

    const [id] = rows.insert.mock.calls[0] as unknown as [string];
    expect(rows.delete).toHaveBeenCalledExactlyOnceWith(id);
  });
});
