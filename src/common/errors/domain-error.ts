/**
 * Services throw DomainError with a contract code; the exception filter alone knows HTTP.
 * The status for each code is the contract's (shared/api-contract.md, "Errors").
 */
export const ERROR_STATUS = {
  VALIDATION_FAILED: 400,
  UNAUTHORIZED: 401,
  BAD_SIGNATURE: 401,
  FORBIDDEN: 403,
  NOT_ADMITTED: 403,
  NOT_SELECTED: 403,
  GOODS_NOT_FOUND: 404,
  ORDER_NOT_FOUND: 404,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  SOLD_OUT: 409,
  ALREADY_PURCHASED: 409,
  DUPLICATE_REQUEST: 409,
  SALE_NOT_STARTED: 409,
  SALE_ENDED: 409,
  NOT_PREHEATED: 409,
  QUEUE_NOT_OPEN: 409,
  ENTRIES_CLOSED: 409,
  ORDER_CANCELLED: 409,
  ORDER_PAID: 409,
  PAYMENT_MISMATCH: 409,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
  UNAVAILABLE: 503,
  OVERLOADED: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The most of a client's own value an error message repeats (a path segment may be 4,096). */
export const ECHO_MAX_CHARS = 40;

/**
 * A value the client sent, as an error message may quote it: enough to recognise, never the
 * request echoed back at length (the contract's Errors).
 */
export function echoed(value: unknown): string {
  const text = String(value);
  return text.length > ECHO_MAX_CHARS ? `${text.slice(0, ECHO_MAX_CHARS)}…` : text;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    // A contract answer, not a bug: its stack is never read, and capturing one cost a sold-out
    // answer more than its JSON (3 % of the route's CPU, profiled).
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'DomainError';
  }
}

/** A dependency (Redis, MySQL, RabbitMQ) failed and nothing was taken. */
export class UnavailableError extends DomainError {
  constructor(message: string, cause?: unknown, details?: Record<string, unknown>) {
    super('UNAVAILABLE', message, details);
    if (cause !== undefined) this.cause = cause;
  }
}

/**
 * A dependency failed after a step that may have taken stock (its reply, or the reply of the void
 * that would have undone it, was lost on its way from Redis or MySQL): the service cannot say
 * "nothing was taken". The 503 carries the purchase's `requestId`, and the result route tells its
 * outcome once it is known.
 */
export class UnknownOutcomeError extends UnavailableError {
  constructor(
    readonly requestId: string,
    message: string,
    cause?: unknown,
  ) {
    super(message, cause, { requestId });
  }
}

/** Runs a dependency call; a failure that is not already a contract answer becomes a 503. */
export async function orUnavailable<T>(what: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof DomainError) throw error;
    throw new UnavailableError(`${what} is unavailable; nothing was taken`, error);
  }
}
