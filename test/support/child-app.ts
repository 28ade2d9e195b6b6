import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { freePortBelowEphemeral } from '../../scripts/lib/ports.js';
import { adminAuth, waitFor } from './harness.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The built server (`node dist/main.js`) as its own process, as production runs it. */
export class ChildApp {
  private output = '';
  private stdoutText = '';

  private constructor(
    readonly process: ChildProcess,
    readonly baseUrl: string,
  ) {
    process.stdout?.on('data', (chunk: Buffer) => {
      this.output += chunk.toString();
      this.stdoutText += chunk.toString();
    });
    process.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
  }

  /** Starts it and (unless told not to) waits until it is ready. */
  static async start(
    env: Record<string, string> = {},
    { waitReady = true } = {},
  ): Promise<ChildApp> {
    const port = await freePortBelowEphemeral();
    const child = spawn(process.execPath, ['dist/main.js'], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'log', ...env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const app = new ChildApp(child, `http://127.0.0.1:${port}`);
    if (!waitReady) return app;
    await waitFor(
      async () => {
        if (app.exited) throw new Error(`server exited early:\n${app.output}`);
        const response = await fetch(`${app.baseUrl}/health/ready`).catch(() => null);
        return response?.status === 200;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'the child server to be ready' },
    );
    return app;
  }

  /** A POST with a bearer token and an optional JSON body. */
  post(path: string, authorization: string, body?: object): Promise<Response> {
    return fetch(`${this.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
  }

  /** Creates a sale open from now for an hour through the admin API, preheats it, returns its id. */
  async createSale(stock: number): Promise<number> {
    const now = Date.now();
    const created = await this.post('/api/v1/admin/goods', adminAuth(), {
      name: 'Test phone',
      price: 1,
      stock,
      startAt: new Date(now - 1_000).toISOString(),
      endAt: new Date(now + 3_600_000).toISOString(),
    });
    if (created.status !== 201) throw new Error(`create sale: ${created.status}`);
    const goodsId = ((await created.json()) as { id: number }).id;
    const preheated = await this.post(`/api/v1/admin/goods/${goodsId}/preheat`, adminAuth());
    if (preheated.status !== 200) throw new Error(`preheat: ${preheated.status}`);
    return goodsId;
  }

  get exited(): boolean {
    return this.process.exitCode !== null || this.process.signalCode !== null;
  }

  /** stdout and stderr, interleaved as they came. */
  get log(): string {
    return this.output;
  }

  /** stdout alone: where the logs go. */
  get stdout(): string {
    return this.stdoutText;
  }

  /** Sends `signal` and resolves with the exit code (null when killed by a signal). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.exited) return this.process.exitCode;
    const exited = once(this.process, 'exit');
    this.process.kill(signal);
    const [code] = (await exited) as [number | null];
    return code;
  }
}
