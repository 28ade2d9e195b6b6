import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, type EntityManager } from 'typeorm';
import { InjectConfig } from '../../config/config-namespace.js';
import { databaseConfig, type DatabaseConfig } from '../../config/database.config.js';
import { connectionOptions } from './connection-options.js';
import { parseDatabaseUrl } from './ensure-database.js';
import { poolStats, type PoolStats } from './pool-stats.js';

export type ReadSource = 'replica' | 'primary';

export interface ReplicaRead<T> {
  value: T;
  /** Where it was read: a `replica` answer may lag the primary by up to the configured bound. */
  from: ReadSource;
}

/** How often the lag is measured (a beat written on the primary, read back on the replica). */
const PROBE_MS = 250;
/** A measure older than this says nothing any more: the replica is not read until the next. */
const PROBE_STALE_MS = 2_000;
/**
 * A read on the replica that takes longer is asked of the primary instead (a replica that hangs
 * rather than refuses: its measure goes stale within PROBE_STALE_MS, and it is not read again).
 */
const REPLICA_READ_TIMEOUT_MS = 1_000;

/** This instance's beats as the primary took them. */
export interface BeatsWritten {
  /** The last beat the primary took (this instance's clock, ms); null before the first. */
  last: number | null;
  /** Whether the latest write of a beat was taken (false: the primary is failing). */
  latestTaken: boolean;
}

/**
 * How stale the replica may be, in ms, from the beat it holds (`seen`, null when it holds none of
 * this instance's), measured at `now`; null when it cannot be told. While the primary takes
 * writes, the replica may lack anything committed after `seen`: `now - seen`. While it fails to
 * (it died: a failover's first seconds), nothing is being committed, so the replica lacks only
 * what the primary took after `seen` of what we know: nothing once it holds the last beat.
 */
export function replicaLagMs(seen: number | null, beats: BeatsWritten, now: number): number | null {
  if (seen === null || beats.last === null) return null;
  return beats.latestTaken ? Math.max(0, now - seen) : Math.max(0, beats.last - seen);
}

/**
 * Reads that may lag, on DATABASE_REPLICA_URL's replica while it is caught up within
 * DATABASE_REPLICA_MAX_LAG_MS, on the primary otherwise (no replica set, the replica down or
 * behind, or a read on it failing). Each instance measures the lag itself: it writes a beat of
 * its own clock on the primary every PROBE_MS and reads it back on the replica, so the measure is
 * the same on MySQL and MariaDB, needs no privilege beyond the tables', and does not depend on
 * the two servers' clocks agreeing.
 *
 * Only reads a caller declares may lag come here (a goods page, the dashboard's history, an order
 * lookup that says so); every write, and every read that must see a write (a purchase's result,
 * an order right after it was paid, reconcile, a rebuild, the fallback), stays on the primary.
 */
@Injectable()
export class ReplicaReadsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ReplicaReadsService.name);
  private readonly instanceId = randomUUID();
  private replica: DataSource | null = null;
  private connecting?: Promise<DataSource>;
  private timer?: NodeJS.Timeout;
  private probing = false;
  private readonly beats: BeatsWritten = { last: null, latestTaken: false };
  private measured: { lagMs: number | null; at: number; problem?: string } | null = null;
  private wasCaughtUp = false;

  constructor(
    @InjectDataSource() private readonly primary: DataSource,
    @InjectConfig(databaseConfig) private readonly config: DatabaseConfig,
  ) {}

  /** The replica's connection pool (null with no replica, or before it is connected). */
  replicaPool(): PoolStats | null {
    return this.replica ? poolStats(this.replica) : null;
  }

  /** The replica's lag by the latest measure (ms); null with no replica or no measure. */
  get lagMs(): number | null {
    return this.measured?.lagMs ?? null;
  }

  onApplicationBootstrap(): void {
    if (!this.config.replica) return;
    this.logger.log(
      `replica reads: ${redacted(this.config.replica.url)}, within ${this.config.replica.maxLagMs} ms`,
    );
    // Beats of instances that stopped long ago.
    this.primary
      .query('DELETE FROM seckill_replica_beat WHERE updated_at < NOW(3) - INTERVAL 1 DAY')
      .catch((error: Error) => this.logger.warn(`old replica beats not pruned: ${error.message}`));
    this.timer = setInterval(() => void this.probe(), PROBE_MS);
    this.timer.unref();
    void this.probe();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    const replica = this.replica;
    this.replica = null;
    if (replica?.isInitialized) await replica.destroy().catch(() => undefined);
  }

  /**
   * Runs `work` on the replica when it is caught up, else on the primary. `onPrimaryToo`: an
   * answer from the replica that the primary must confirm (a row not found may be a row the
   * replica has not received yet).
   */
  async read<T>(
    work: (db: EntityManager) => Promise<T>,
    options: { onPrimaryToo?: (value: T) => boolean } = {},
  ): Promise<ReplicaRead<T>> {
    const replica = this.caughtUp() ? this.replica : null;
    if (replica) {
      try {
        const value = await withinMs(work(replica.manager), REPLICA_READ_TIMEOUT_MS);
        if (!options.onPrimaryToo?.(value)) return { value, from: 'replica' };
      } catch (error) {
        // Not trusted again until the next measure says so.
        this.measured = null;
        this.logger.warn(`replica read failed, read on the primary: ${(error as Error).message}`);
      }
    }
    return { value: await work(this.primary.manager), from: 'primary' };
  }

  private caughtUp(now = Date.now()): boolean {
    const measured = this.measured;
    return (
      this.replica !== null &&
      measured !== null &&
      measured.lagMs !== null &&
      now - measured.at <= PROBE_STALE_MS &&
      measured.lagMs <= this.config.replica!.maxLagMs
    );
  }

  /** Reads this instance's beat on the replica, then writes the next one on the primary. */
  private async probe(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      try {
        // Bounded, as the write below: a probe that hung would stop the measures for good.
        const replica = await withinMs(this.connected(), PROBE_STALE_MS);
        const [row] = await withinMs(
          replica.query<{ beat_ms: string | number }[]>(
            'SELECT beat_ms FROM seckill_replica_beat WHERE instance_id = ?',
            [this.instanceId],
          ),
          PROBE_STALE_MS,
        );
        const now = Date.now();
        const lagMs = replicaLagMs(row ? Number(row.beat_ms) : null, this.beats, now);
        this.measured = {
          lagMs,
          at: now,
          problem: lagMs === null ? 'no beat of this instance on the replica yet' : undefined,
        };
      } catch (error) {
        this.measured = { lagMs: null, at: Date.now(), problem: (error as Error).message };
      }
      const beat = Date.now();
      try {
        await withinMs(
          this.primary.query(
            `INSERT INTO seckill_replica_beat (instance_id, beat_ms) VALUES (?, ?)
               ON DUPLICATE KEY UPDATE beat_ms = VALUES(beat_ms)`,
            [this.instanceId, beat],
          ),
          PROBE_STALE_MS,
        );
        this.beats.last = beat;
        this.beats.latestTaken = true;
      } catch {
        this.beats.latestTaken = false;
      }
      this.logChange();
    } finally {
      this.probing = false;
    }
  }

  /** One line each time the replica starts or stops being read. */
  private logChange(): void {
    const caughtUp = this.caughtUp();
    if (caughtUp === this.wasCaughtUp) return;
    this.wasCaughtUp = caughtUp;
    const { lagMs, problem } = this.measured ?? {};
    if (caughtUp) this.logger.log(`replica reads on: lag ${lagMs} ms`);
    else {
      this.logger.warn(
        `replica reads off, reads on the primary: ${problem ?? `lag ${lagMs} ms over ${this.config.replica!.maxLagMs} ms`}`,
      );
    }
  }

  /** The replica's DataSource, connected on first use and again after a failed connect. */
  private connected(): Promise<DataSource> {
    if (this.replica?.isInitialized) return Promise.resolve(this.replica);
    this.connecting ??= (async () => {
      const source = new DataSource(
        connectionOptions(parseDatabaseUrl(this.config.replica!.url, 'DATABASE_REPLICA_URL'), {
          connectionLimit: 10,
          // A replica that does not answer costs a read this long once, then the primary serves.
          connectTimeoutMs: 2_000,
        }),
      );
      try {
        await source.initialize();
        this.replica = source;
        return source;
      } catch (error) {
        if (source.isInitialized) await source.destroy().catch(() => undefined);
        throw error;
      }
    })().finally(() => (this.connecting = undefined));
    return this.connecting;
  }
}

/** The URL without its password, for the log. */
function redacted(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

function withinMs<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
