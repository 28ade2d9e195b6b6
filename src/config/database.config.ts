import { configNamespace } from './config-namespace.js';
import { readUrl } from './env-readers.js';

export interface DatabaseConfig {
  /** mysql: or mariadb:; the database is created if missing. */
  url: string;
}

export const databaseConfig = configNamespace('database', (env): DatabaseConfig => ({
  url: readUrl(env, 'DATABASE_URL', 'mysql://root:@127.0.0.1:3306/seckill', ['mysql:', 'mariadb:']),
}));
