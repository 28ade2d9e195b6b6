import { readInt, readOneOf, readString, type Env } from './env-readers.js';

/**
 * `all`: the HTTP API and the consumers and scheduled jobs. `api`: the HTTP API and publishing,
 * nothing consumed. `worker`: the consumers and scheduled jobs; over HTTP only /health/* and
 * /metrics.
 */
export const APP_ROLES = ['all', 'api', 'worker'] as const;
export type AppRole = (typeof APP_ROLES)[number];

/** What this process is and how it stops; read first, as other sections depend on it. */
export interface AppSection {
  nodeEnv: string;
  /** What this instance runs; see APP_ROLES. */
  role: AppRole;
  shutdownTimeoutMs: number;
}

export function readAppSection(env: Env): AppSection {
  return {
    nodeEnv: readString(env, 'NODE_ENV', 'development'),
    role: readOneOf(env, 'APP_ROLE', APP_ROLES, 'all'),
    shutdownTimeoutMs: readInt(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 100, 600_000),
  };
}
