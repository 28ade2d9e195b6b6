import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import { waitFor } from './harness.js';

/**
 * A throwaway redis-server of the test's own, on a port below the ephemeral range, that the test
 * may kill and start again empty without disturbing the machine's shared Redis.
 */
export class PrivateRedis {
  private process?: ChildProcess;

  private constructor(
    readonly port: number,
    private readonly dir?: string,
  ) {}

  /** With `dir`, a `SAVE` writes a snapshot there that the next `up()` loads (a stale restart). */
  static async start(options: { dir?: string } = {}): Promise<PrivateRedis> {
    const redis = new PrivateRedis(21_000 + Math.floor(Math.random() * 8_000), options.dir);
    await redis.up();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  /** Starts the server (empty, or from its snapshot if it has one) and waits until it answers. */
  async up(): Promise<void> {
    this.process = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        ...(this.dir ? ['--dir', this.dir, '--dbfilename', 'snapshot.rdb'] : []),
      ],
      { stdio: 'ignore' },
    );
    await waitFor(
      () =>
        new Promise<boolean>((resolve) => {
          const socket = createConnection(this.port, '127.0.0.1');
          socket.once('connect', () => {
            socket.destroy();
            resolve(true);
          });
          socket.once('error', () => resolve(false));
        }),
      { timeoutMs: 10_000, what: `redis-server on port ${this.port}` },
    );
  }

  /** Kills it outright, as a crash would. */
  async kill(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }
}
