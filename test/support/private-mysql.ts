import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from './harness.js';
import { portIsFree } from '../../scripts/lib/ports.js';
import { killChild, listening } from './private-redis.js';

/**
 * A throwaway MariaDB server of the test's own (an empty data directory, a port below the
 * ephemeral range), for what the machine's shared server must not be changed for: a default
 * time zone other than UTC.
 */
export class PrivateMysql {
  private process?: ChildProcess;

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  static async start(options: { timeZone: string }): Promise<PrivateMysql> {
    let port = 0;
    for (let attempt = 0; port === 0; attempt++) {
      if (attempt === 20) throw new Error('no free port for a private MariaDB');
      const candidate = 23_000 + Math.floor(Math.random() * 6_000);
      if (await portIsFree(candidate)) port = candidate;
    }
    const mysql = new PrivateMysql(port, mkdtempSync(join(tmpdir(), 'seckill-mysql-')));
    const user = userInfo().username;
    await promisify(execFile)('mariadb-install-db', [
      '--no-defaults',
      `--datadir=${mysql.dir}/data`,
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
      `--user=${user}`,
    ]);
    mysql.process = spawn(
      'mariadbd',
      [
        '--no-defaults',
        `--datadir=${mysql.dir}/data`,
        `--socket=${mysql.dir}/mysqld.sock`,
        `--pid-file=${mysql.dir}/mysqld.pid`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        `--user=${user}`,
        `--default-time-zone=${options.timeZone}`,
        '--skip-log-bin',
        '--innodb-buffer-pool-size=16M',
      ],
      { stdio: 'ignore' },
    );
    await waitFor(() => listening(port), { timeoutMs: 20_000, what: `mariadbd on port ${port}` });
    return mysql;
  }

  /** DATABASE_URL of a database on it (created by the app, as on any server). */
  url(database: string): string {
    return `mysql://root:@127.0.0.1:${this.port}/${database}`;
  }

  async stop(): Promise<void> {
    await killChild(this.process);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
