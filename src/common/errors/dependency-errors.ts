/**
 * The one place that tells a dependency failure (MySQL, Redis or RabbitMQ unreachable, cut off
 * or too slow) from a bug. The exception filter answers the first with 503 UNAVAILABLE, whatever
 * route it reached, and the second with 500.
 */

/** Socket and driver codes of a connection that failed, dropped or timed out. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // mysql2
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'PROTOCOL_ENQUEUE_AFTER_QUIT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
]);

/** ioredis and mysql2 say some of theirs only in words. */
const CONNECTION_MESSAGES = [
  /^Connection is closed\.?$/, // ioredis: the connection ended
  /^Stream isn't writeable/, // ioredis: Redis is known to be down (no offline queue)
  /^Command timed out$/, // ioredis: commandTimeout
  /^Cluster isn't ready/, // ioredis Cluster: no node reachable (no offline queue)
  /^Too many Cluster redirections/, // ioredis Cluster: a slot's master kept moving or failing
  /^(CLUSTERDOWN|TRYAGAIN|MASTERDOWN|LOADING) /, // Redis: a slot unserved, a failover, a load
  /closed state/, // mysql2: a command on a connection that was cut
  /^Pool is closed/, // mysql2
];

/**
 * ioredis' words for a command it refused before writing it (the connection is known to be down
 * and the offline queue is off): such a command never reached Redis.
 */
const NOT_SENT_MESSAGES = [/^Stream isn't writeable/, /^Cluster isn't ready/];

const CONNECTION_ERROR_NAMES = new Set(['MaxRetriesPerRequestError', 'ClusterAllFailedError']);

interface DriverLike {
  code?: unknown;
  name?: unknown;
  message?: unknown;
  fatal?: unknown;
  driverError?: unknown;
  cause?: unknown;
}

function isConnectionError(error: DriverLike): boolean {
  if (typeof error.code === 'string' && CONNECTION_CODES.has(error.code)) return true;
  // mysql2 marks the errors after which the connection is unusable as fatal.
  if (error.fatal === true) return true;
  if (typeof error.name === 'string' && CONNECTION_ERROR_NAMES.has(error.name)) return true;
  const message = typeof error.message === 'string' ? error.message : '';
  return CONNECTION_MESSAGES.some((pattern) => pattern.test(message));
}

/** True when the error, or what it wraps (TypeORM's `driverError`, a `cause`), is an outage. */
export function isDependencyFailure(error: unknown): boolean {
  let current: unknown = error;
  // Bounded: a cause chain is a few links long, and a cyclic one must not hang the filter.
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const candidate = current as DriverLike;
    if (isConnectionError(candidate)) return true;
    current = candidate.driverError ?? candidate.cause;
  }
  return false;
}

/**
 * True when the command surely never reached the server: the client refused it before writing
 * it. Any other failure of a command may come after the server ran it (a reply lost on its way).
 */
export function neverSent(error: unknown): boolean {
  const message = (error as DriverLike | null)?.message;
  return typeof message === 'string' && NOT_SENT_MESSAGES.some((pattern) => pattern.test(message));
}
