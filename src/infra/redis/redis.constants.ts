export const REDIS_CLIENT = Symbol('REDIS_CLIENT');

/** ioredis fails a command after this long, so that a hung Redis becomes a 503, not a hang. */
export const REDIS_COMMAND_TIMEOUT_MS = 5_000;
