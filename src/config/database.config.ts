import { configNamespace } from './config-namespace.js';
import { readInt, readString, readUrl } from './env-readers.js';

const PROTOCOLS = ['mysql:', 'mariadb:'];

export interface ReplicaConfig {
  /** A replica of DATABASE_URL's server (the same database name), read-only to the app. */
  url: string;
  /**
   * The most a read on the replica may lag the primary's last commit; beyond it (or when the
   * replica does not answer) reads go to the primary.
   */
  maxLagMs: number;
}

export interface DatabaseConfig {
  /** mysql: or mariadb:; the database is created if missing. */
  url: string;
  /** Reads that may lag; null when DATABASE_REPLICA_URL is unset (every read on the primary). */
  replica: ReplicaConfig | null;
}

export const databaseConfig = configNamespace('database', (env): DatabaseConfig => {
  const replicaUrl = readString(env, 'DATABASE_REPLICA_URL', '');
  // Checked even without a replica: a typo is refused before it is needed.
  const maxLagMs = readInt(env, 'DATABASE_REPLICA_MAX_LAG_MS', 2_000, 100, 3_600_000);
  return {
    url: readUrl(env, 'DATABASE_URL', 'mysql://root:@127.0.0.1:3306/seckill', PROTOCOLS),
    replica:
      replicaUrl === ''
        ? null
        : { url: readUrl(env, 'DATABASE_REPLICA_URL', '', PROTOCOLS), maxLagMs },
  };
});
