import { Redis } from 'ioredis';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import { expect } from 'vitest';
import { waitFor, type Stores } from './harness.js';

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

/** A purchase as a test makes it: the answer's status and body. */
type Buy = (userId: number) => PromiseLike<{ status: number; body: { code?: string } }>;

/**
 * Sells to the first three of five `buyers`, snapshots Redis (the snapshot knows only them), sells
 * to the other two and restarts the server from the snapshot: back with three buyers and the
 * stock of three sales, where the truth is five of each.
 */
export async function restartFromStaleSnapshot(
  redis: PrivateRedis,
  stores: Stores,
  goodsId: number,
  buy: Buy,
  buyers: number[],
): Promise<void> {
  const sell = async (users: number[], orders: number) => {
    for (const userId of users) expect((await buy(userId)).status).toBe(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === orders, {
      what: `${orders} orders`,
    });
  };
  await sell(buyers.slice(0, 3), 3);
  const direct = new Redis(redis.url);
  await direct.save();
  direct.disconnect();
  await sell(buyers.slice(3), 5);
  await redis.kill();
  await redis.up();
}

/**
 * Buys for `userId` until it is accepted, slower than the per-user rate limit (5 a second); every
 * answer before that must have kept the sale closed, taking nothing. Returns how many it sent.
 */
export async function buyUntilReopened(buy: Buy, userId: number): Promise<number> {
  const answers: string[] = [];
  await waitFor(
    async () => {
      const response = await buy(userId);
      answers.push(`${response.status} ${response.body.code ?? ''}`.trim());
      return response.status === 202;
    },
    { timeoutMs: 30_000, intervalMs: 300, what: 'purchases to reopen' },
  );
  for (const answer of answers.slice(0, -1)) {
    expect(['503 UNAVAILABLE', '409 NOT_PREHEATED']).toContain(answer);
  }
  return answers.length;
}
