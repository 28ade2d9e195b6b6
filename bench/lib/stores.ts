// Each side's own stores, made fresh for every bench (and every chaos run): a MySQL database with
// the project's schema, a RabbitMQ vhost, and a private redis-server (so that INFO commandstats
// counts that side alone).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import { Redis } from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { DataSource } from 'typeorm';

import { ScriptError } from '../../scripts/lib/errors.js';
import { ephemeralRedisArgs } from '../../scripts/lib/redis-server.js';

const run = promisify(execFile);
const MYSQL_ROOT = process.env.BENCH_MYSQL_URL ?? 'mysql://root:@127.0.0.1:3306';
const RABBIT_HOST = process.env.BENCH_RABBITMQ_HOST ?? '127.0.0.1:5672';
const REDIS_READY_MS = 10_000;

export function databaseUrl(name: string, root = MYSQL_ROOT): string {
  return `${root}/${name}`;
}

export function rabbitUrl(vhost: string): string {
  return `amqp://guest:guest@${RABBIT_HOST}/${encodeURIComponent(vhost)}`;
}

/** Only a throwaway store's name (one with "bench" or "chaos" in it) may be dropped: spares real data. */
function assertThrowaway(what: string, name: string): void {
  if (!/^[a-z0-9_]*(bench|chaos)[a-z0-9_]*$/.test(name)) {
    throw new ScriptError(`refusing to recreate or delete ${what} ${name}`);
  }
}

export async function dropDatabase(name: string, server = MYSQL_ROOT): Promise<void> {
  assertThrowaway('database', name);
  const root = await createConnection(server);
  try {
    await root.query(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    await root.end();
  }
}

/**
 * Drops and recreates the database, with the project's migrations applied (on `server`, a
 * `mysql://user:pw@host:port` root URL: the machine's unless told).
 */
export async function freshDatabase(
  name: string,
  migrationsGlob: string,
  server = MYSQL_ROOT,
): Promise<void> {
  assertThrowaway('database', name);
  await dropDatabase(name, server);
  const root = await createConnection(server);
  try {
    await root.query(
      `CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
  } finally {
    await root.end();
  }
  // The project's own migrations, as its start runs them: both sides get the same schema.
  const source = new DataSource({
    type: 'mysql',
    url: databaseUrl(name, server),
    migrations: [migrationsGlob],
    migrationsTransactionMode: 'each',
  });
  await source.initialize();
  try {
    await source.runMigrations();
  } finally {
    await source.destroy();
  }
}

/** A new, empty vhost: queues left by an earlier bench would hold stale messages. */
export async function freshVhost(vhost: string): Promise<void> {
  await deleteVhost(vhost).catch(() => undefined);
  await run('rabbitmqctl', ['-q', 'add_vhost', vhost]);
  await run('rabbitmqctl', ['-q', 'set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*']);
}

export async function deleteVhost(vhost: string): Promise<void> {
  assertThrowaway('vhost', vhost);
  await run('rabbitmqctl', ['-q', 'delete_vhost', vhost]);
}

/** The broker drops every client connection of this vhost (and of no other). */
export async function closeVhostConnections(vhost: string, reason: string): Promise<void> {
  assertThrowaway('vhost', vhost);
  await run('rabbitmqctl', [
    '-q',
    'close_all_connections',
    '--vhost',
    vhost,
    '--limit',
    '1000',
    reason,
  ]);
}

export interface RedisServer {
  url: string;
  pid: number;
  client: Redis;
  stop: () => Promise<void>;
}

/** No persistence: a bench's sales are thrown away, and a snapshot would steal CPU mid-run. */
export async function startRedis(port: number, extraArgs: string[] = []): Promise<RedisServer> {
  const child: ChildProcess = spawn('redis-server', [...ephemeralRedisArgs(port), ...extraArgs], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}/0`;
  const client = new Redis(url, { retryStrategy: () => 100, maxRetriesPerRequest: 1 });
  // Refused until the server listens; ioredis retries by itself meanwhile.
  const ignore = () => undefined;
  client.on('error', ignore);
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new ScriptError(`redis-server exited (${code})`))),
  );
  // Only the start awaits it; a later exit (our own stop) must not surface as unhandled.
  exited.catch(() => undefined);
  try {
    await Promise.race([
      new Promise((resolve) => client.once('ready', resolve)),
      exited,
      sleep(REDIS_READY_MS).then(() => Promise.reject(new ScriptError('redis-server not ready'))),
    ]);
  } catch (error) {
    client.disconnect();
    child.kill('SIGKILL');
    throw error;
  }
  client.off('error', ignore);
  return {
    url,
    pid: child.pid ?? 0,
    client,
    stop: async () => {
      client.disconnect();
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}
