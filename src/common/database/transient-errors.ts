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

/** Exponential backoff with full jitter, so that colliding workers do not collide again. */
export function backoffWithJitter(attempt: number, baseMs: number, maxMs: number): number {
  return Math.floor(Math.random() * Math.min(maxMs, baseMs * 2 ** attempt)) + 1;
}
