interface DriverError {
  code?: string;
  errno?: number;
}

/** Errors after which the same transaction, run again, may well succeed. */
const TRANSIENT = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);

export function isTransientDbError(error: unknown): boolean {
  const driver = (error as { driverError?: DriverError }).driverError ?? (error as DriverError);
  return typeof driver?.code === 'string' && TRANSIENT.has(driver.code);
}

/**
 * MySQL refusing the data itself: the same rows will be refused on every try, so retrying them
 * only blocks the rows behind them. By errno, because mysql2 names MariaDB's own numbers after
 * MySQL's (MariaDB's failed CHECK, 4025, arrives as ER_INNODB_AUTOEXTEND_SIZE_OUT_OF_RANGE).
 */
const PERMANENT_DATA_ERRNOS = new Set([
  1048, // column cannot be null
  1264, // out of range
  1292, // truncated / incorrect value
  1366, // incorrect value for a column
  1406, // data too long
  3819, // MySQL: CHECK constraint violated
  4025, // MariaDB: CONSTRAINT failed
]);

export function isPermanentDataError(error: unknown): boolean {
  const driver = (error as { driverError?: DriverError }).driverError ?? (error as DriverError);
  return typeof driver?.errno === 'number' && PERMANENT_DATA_ERRNOS.has(driver.errno);
}

/** Exponential backoff with full jitter, so that colliding workers do not collide again. */
export function backoffWithJitter(attempt: number, baseMs: number, maxMs: number): number {
  return Math.floor(Math.random() * Math.min(maxMs, baseMs * 2 ** attempt)) + 1;
}
