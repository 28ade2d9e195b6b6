import type { DataSource, EntityManager } from 'typeorm';
import { describe, expect, it, vi } from 'vitest';
import type { DatabaseConfig } from '../../config/database.config.js';
import { replicaLagMs, ReplicaReadsService } from './replica-reads.service.js';

describe('replicaLagMs', () => {
  it('should count from the beat the replica holds while the primary takes beats', () => {
    expect(replicaLagMs(1_000, { last: 1_250, latestTaken: true }, 1_400)).toBe(400);
  });

  it('should count only the beats the replica lacks while the primary fails to take them', () => {
    expect(replicaLagMs(1_250, { last: 1_250, latestTaken: false }, 9_000)).toBe(0);
    expect(replicaLagMs(1_000, { last: 1_250, latestTaken: false }, 9_000)).toBe(250);
  });

  it('should not tell a lag without a beat on either side', () => {
    expect(replicaLagMs(null, { last: 1_250, latestTaken: true }, 1_400)).toBeNull();
    expect(replicaLagMs(1_000, { last: null, latestTaken: false }, 1_400)).toBeNull();
  });
});

describe('ReplicaReadsService', () => {
  const primaryManager = { name: 'primary' } as unknown as EntityManager;
  const primary = { manager: primaryManager } as DataSource;

  it('should read on the primary when no replica is configured', async () => {
    const reads = new ReplicaReadsService(primary, { url: 'mysql://p/db', replica: null });
    const work = vi.fn(async (db: EntityManager) => db);

    await expect(reads.read(work)).resolves.toEqual({ value: primaryManager, from: 'primary' });
    expect(reads.configured).toBe(false);
  });

  it('should read on the primary before the replica was measured caught up', async () => {
    const config: DatabaseConfig = {
      url: 'mysql://p/db',
      replica: { url: 'mysql://r/db', maxLagMs: 2_000 },
    };
    const reads = new ReplicaReadsService(primary, config);

    await expect(reads.read(async (db) => db)).resolves.toMatchObject({ from: 'primary' });
    expect(reads.lagMs).toBeNull();
  });
});
