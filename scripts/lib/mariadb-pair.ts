// A MariaDB primary and a replica of our own on this machine, from the installed mariadbd: two
// servers on private ports, each with its own data directory, socket and pid file under one
// directory, the replica following the primary by GTID. The machine's own server (3306) is never
// touched. Used by `scripts/mariadb-pair.ts` (the command).
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import mysql from 'mysql2/promise';

import { ScriptError } from './errors.js';
import { portIsFree } from './ports.js';

/** Ports from here: below the ephemeral range, apart from the other private servers'. */
const FIRST_PORT = 15_000;
const LAST_PORT = 15_900;
/** The replication account the replica logs in to the primary with (loopback only). */
const REPLICATION = { user: 'repl', password: 'repl-local-only' };

export type ServerRole = 'primary' | 'replica';

export interface MariaServer {
  role: ServerRole;
  port: number;
  serverId: number;
  dir: string;
}

export interface MariaPair {
  dir: string;
  servers: MariaServer[];
}

/** A DATABASE_URL (root, no password: a loopback-only server of our own) for `database`. */
export function serverUrl(server: MariaServer, database: string): string {
  return `mysql://root:@127.0.0.1:${server.port}/${database}`;
}

export function byRole(pair: MariaPair, role: ServerRole): MariaServer {
  return pair.servers.find((server) => server.role === role)!;
}

function serverArgs(server: MariaServer): string[] {
  return [
    '--no-defaults',
    `--datadir=${join(server.dir, 'data')}`,
    `--socket=${join(server.dir, 'mysqld.sock')}`,
    `--pid-file=${join(server.dir, 'mysqld.pid')}`,
    `--log-error=${join(server.dir, 'error.log')}`,
    `--port=${server.port}`,
    '--bind-address=127.0.0.1',
    `--user=${userInfo().username}`,
    `--server-id=${server.serverId}`,
    // Both write a binlog with GTIDs: the replica can be promoted, and the old primary follow it.
    '--log-bin=mysql-bin',
    '--binlog-format=ROW',
    '--log-slave-updates',
    '--gtid-strict-mode=1',
    '--innodb-buffer-pool-size=64M',
    // Semi-synchronous, lossless: a commit is answered only once the replica has its events
    // (AFTER_SYNC), so an order the app committed, and acked its message for, survives the
    // primary's death on the replica. Both servers are set alike, so either can be the primary;
    // with no replica connected a commit does not wait (a promoted replica is alone until the old
    // primary follows it), and a replica that stops answering costs a commit 2 s once, after
    // which the primary goes on asynchronously until it catches up.
    '--rpl-semi-sync-master-enabled=1',
    '--rpl-semi-sync-slave-enabled=1',
    '--rpl-semi-sync-master-wait-point=AFTER_SYNC',
    '--rpl-semi-sync-master-wait-no-slave=0',
    '--rpl-semi-sync-master-timeout=2000',
    // A replica refuses writes from anyone but its replication thread (and root, who has SUPER:
    // the app connects as root here, so read_only is the operator's guard, not the app's).
    ...(server.role === 'replica' ? ['--read-only=1'] : []),
  ];
}

/** The server's OS pid, from its pid file; null when it is not running. */
export function serverPid(server: MariaServer): number | null {
  const file = join(server.dir, 'mysqld.pid');
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, 'utf8').trim());
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

async function connect(server: MariaServer) {
  return mysql.createConnection({
    host: '127.0.0.1',
    port: server.port,
    user: 'root',
    multipleStatements: true,
  });
}

/** Runs statements on one server as root. */
export async function sql<T = unknown>(server: MariaServer, statement: string): Promise<T> {
  const connection = await connect(server);
  try {
    const [rows] = await connection.query(statement);
    return rows as T;
  } finally {
    await connection.end();
  }
}

/** Starts a server (its data directory made before) and waits until it takes logins. */
export async function startServer(server: MariaServer): Promise<void> {
  const child = spawn('mariadbd', serverArgs(server), { detached: true, stdio: 'ignore' });
  child.unref();
  for (let i = 0; i < 300; i++) {
    try {
      await sql(server, 'SELECT 1');
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new ScriptError(
    `mariadbd (${server.role}) did not start on ${server.port}: see ${join(server.dir, 'error.log')}`,
  );
}

/** Kills a server outright (SIGKILL by default), as a crash would, and waits until it is gone. */
export async function killServer(server: MariaServer, signal: NodeJS.Signals = 'SIGKILL') {
  const pid = serverPid(server);
  if (pid === null) return;
  process.kill(pid, signal);
  for (let i = 0; i < 300 && serverPid(server) !== null; i++) await sleep(100);
}

async function freePorts(): Promise<[number, number]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = FIRST_PORT + Math.floor(Math.random() * (LAST_PORT - FIRST_PORT));
    if ((await portIsFree(port)) && (await portIsFree(port + 1))) return [port, port + 1];
  }
  throw new ScriptError('no two free ports for a private MariaDB pair');
}

/**
 * Makes `replica` follow `primary` from its current GTID position (`current_pos`: what it applied
 * as a replica and what it wrote itself, so that a former primary rejoins where it stopped).
 */
export async function follow(replica: MariaServer, primary: MariaServer): Promise<void> {
  await sql(
    replica,
    `STOP SLAVE; CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primary.port},
       MASTER_USER='${REPLICATION.user}', MASTER_PASSWORD='${REPLICATION.password}',
       MASTER_USE_GTID=current_pos, MASTER_CONNECT_RETRY=1;
     START SLAVE;`,
  );
}

/** The replication threads of a replica and how far behind it says it is. */
export async function replicaStatus(
  replica: MariaServer,
): Promise<{ io: string; sql: string; secondsBehind: number | null; error: string }> {
  const [status] = await sql<Record<string, string | number | null>[]>(
    replica,
    'SHOW SLAVE STATUS',
  );
  if (!status) return { io: 'No', sql: 'No', secondsBehind: null, error: 'not a replica' };
  return {
    io: String(status.Slave_IO_Running),
    sql: String(status.Slave_SQL_Running),
    secondsBehind:
      status.Seconds_Behind_Master === null ? null : Number(status.Seconds_Behind_Master),
    error: String(status.Last_Error || status.Last_IO_Error || ''),
  };
}

/**
 * A primary and a replica under `dir` (made; must not hold another pair): both initialised
 * empty, the replication account made on the primary, the replica following it by GTID.
 */
export async function startPair(dir: string): Promise<MariaPair> {
  if (existsSync(join(dir, 'pair.json'))) {
    throw new ScriptError(`${dir} holds a MariaDB pair already (stop it first)`);
  }
  mkdirSync(dir, { recursive: true });
  const [primaryPort, replicaPort] = await freePorts();
  const pair: MariaPair = {
    dir,
    servers: [
      { role: 'primary', port: primaryPort, serverId: 1, dir: join(dir, 'primary') },
      { role: 'replica', port: replicaPort, serverId: 2, dir: join(dir, 'replica') },
    ],
  };
  for (const server of pair.servers) {
    mkdirSync(server.dir, { recursive: true });
    await promisify(execFile)('mariadb-install-db', [
      '--no-defaults',
      `--datadir=${join(server.dir, 'data')}`,
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
      `--user=${userInfo().username}`,
    ]);
  }
  writePair(pair);
  const [primary, replica] = pair.servers;
  await startServer(primary);
  await sql(
    primary,
    `CREATE USER '${REPLICATION.user}'@'127.0.0.1' IDENTIFIED BY '${REPLICATION.password}';
     GRANT REPLICATION SLAVE ON *.* TO '${REPLICATION.user}'@'127.0.0.1';`,
  );
  await startServer(replica);
  await follow(replica, primary);
  for (let i = 0; i < 100; i++) {
    const status = await replicaStatus(replica);
    if (status.io === 'Yes' && status.sql === 'Yes') return pair;
    await sleep(100);
  }
  throw new ScriptError(
    `the replica does not follow the primary: ${(await replicaStatus(replica)).error}`,
  );
}

export function writePair(pair: MariaPair): void {
  writeFileSync(join(pair.dir, 'pair.json'), `${JSON.stringify(pair, null, 2)}\n`);
}

export function readPair(dir: string): MariaPair {
  const file = join(dir, 'pair.json');
  if (!existsSync(file)) throw new ScriptError(`no MariaDB pair of ours in ${dir}`);
  return JSON.parse(readFileSync(file, 'utf8')) as MariaPair;
}

/**
 * The failover, once the primary is dead (a planned switch first makes it read-only): the
 * replica applies all it received, stops following, takes writes, and becomes the primary; the old primary, if it is started again, is made to follow it.
 * Returns the pair with the roles swapped (and writes it down).
 */
export async function promoteReplica(pair: MariaPair): Promise<MariaPair> {
  const replica = byRole(pair, 'replica');
  // Everything it received is applied before it takes writes: semi-sync made sure it received
  // every commit the primary answered, which its relay log may hold unapplied. The receiving
  // thread is left running (retrying the dead primary) meanwhile: with GTID, once both threads
  // are stopped the relay log is thrown away and fetched again from the primary, which is gone.
  await sql(replica, 'START SLAVE SQL_THREAD');
  const [received] = await sql<{ Gtid_IO_Pos: string }[]>(replica, 'SHOW SLAVE STATUS');
  const [applied] = await sql<{ reached: number | null }[]>(
    replica,
    `SELECT MASTER_GTID_WAIT('${received?.Gtid_IO_Pos ?? ''}', 60) AS reached`,
  );
  if (Number(applied?.reached) !== 0) {
    throw new ScriptError(
      `the replica did not apply what it received (${received?.Gtid_IO_Pos}) within 60 s`,
    );
  }
  await sql(replica, 'STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0;');
  const promoted: MariaPair = {
    dir: pair.dir,
    servers: pair.servers.map((server) => ({
      ...server,
      role: server.role === 'replica' ? 'primary' : 'replica',
    })),
  };
  writePair(promoted);
  return promoted;
}

/** Stops both servers (SIGTERM, then SIGKILL) and removes `dir`. */
export async function stopPair(pair: MariaPair): Promise<void> {
  for (const server of pair.servers) {
    await killServer(server, 'SIGTERM');
    await killServer(server);
  }
  rmSync(pair.dir, { recursive: true, force: true });
}
