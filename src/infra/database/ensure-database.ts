import { createConnection } from 'mysql2/promise';

export interface DatabaseTarget {
  type: 'mysql' | 'mariadb';
  host: string;
  port: number;
  username: string;
  password: string;
  database: string;
}

export function parseDatabaseUrl(databaseUrl: string, name = 'DATABASE_URL'): DatabaseTarget {
  const url = new URL(databaseUrl);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_$]{1,64}$/.test(database)) {
    throw new Error(`${name} must name a database of letters, digits, "_" or "$"`);
  }
  return {
    type: url.protocol === 'mariadb:' ? 'mariadb' : 'mysql',
    host: url.hostname,
    port: url.port ? Number(url.port) : 3306,
    username: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    database,
  };
}

/** The contract says the database is created if missing; the migrations then make the tables. */
export async function ensureDatabase(target: DatabaseTarget): Promise<void> {
  const connection = await createConnection({
    host: target.host,
    port: target.port,
    user: target.username,
    password: target.password,
    connectTimeout: 10_000,
  });
  try {
    await connection.query(
      `CREATE DATABASE IF NOT EXISTS \`${target.database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
  } finally {
    await connection.end();
  }
}
