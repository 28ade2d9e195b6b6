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

  describe('with a replica measured', () => {
    const replicaManager = { name: 'replica' } as unknown as EntityManager;
    const config: DatabaseConfig = {
      url: 'mysql://p/db',
      replica: { url: 'mysql://r/db', maxLagMs: 2_000 },
    };
    /** The service as its probe left it: the replica connected and measured `lagMs` ago now. */
    function measured(lagMs: number, ageMs = 0) {
      const reads = new ReplicaReadsService(primary, config);
      Object.assign(reads as unknown as Record<string, unknown>, {
        replica: { manager: replicaManager, isInitialized: true },
        measured: { lagMs, at: Date.now() - ageMs },
      });
      return reads;
    }
    const where = async (db: EntityManager) => (db as unknown as { name: string }).name;

    it('should read on the replica while it lags within the bound', async () => {
      await expect(measured(1_500).read(where)).resolves.toEqual({
        value: 'replica',
        from: 'replica',
      });
    });

    it('should read on the primary when the replica lags past the bound or its measure is stale', async () => {
      await expect(measured(2_500).read(where)).resolves.toMatchObject({ from: 'primary' });
      await expect(measured(0, 5_000).read(where)).resolves.toMatchObject({ from: 'primary' });
    });

    it('should ask the primary what the replica lacks, and what it failed to answer', async () => {
      const reads = measured(0);
      const lacking = await reads.read(
        async (db) => ((await where(db)) === 'replica' ? null : 'row'),
        { onPrimaryToo: (row) => row === null },
      );
      expect(lacking).toEqual({ value: 'row', from: 'primary' });

      const failing = await reads.read(async (db) => {
        if ((await where(db)) === 'replica') throw new Error('connection lost');
        return 'row';
      });
      expect(failing).toEqual({ value: 'row', from: 'primary' });
      // Not trusted again until the next measure.
      await expect(reads.read(where)).resolves.toMatchObject({ from: 'primary' });
    });
  });
});
