import type { DataSource } from 'typeorm';

/** A MySQL connection pool's state as mysql2 keeps it. */
export interface PoolStats {
  used: number;
  free: number;
  /** Queries waiting for a connection: every one the pool may open is busy. */
  waiting: number;
}

/** mysql2's Pool exposes no counts: these are its own queues (each has a `length`). */
interface Mysql2Pool {
  _allConnections?: { length: number };
  _freeConnections?: { length: number };
  _connectionQueue?: { length: number };
}

/** The pool behind a TypeORM DataSource on mysql2; null before it is made or once it is ended. */
export function poolStats(dataSource: DataSource): PoolStats | null {
  const pool = (dataSource.driver as unknown as { pool?: Mysql2Pool }).pool;
  if (!dataSource.isInitialized || !pool?._allConnections) return null;
  const all = pool._allConnections.length;
  const free = pool._freeConnections?.length ?? 0;
  return { used: all - free, free, waiting: pool._connectionQueue?.length ?? 0 };
}
