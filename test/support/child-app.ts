import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { waitFor } from './harness.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A free port below the ephemeral range, so it cannot clash with an outgoing connection. */
async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const server = createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (free) {
      await new Promise((resolve) => server.close(resolve));
      return (server.address() as AddressInfo | null)?.port ?? port;
    }
  }
  throw new Error('no free port found');
}

/** The built server (`node dist/main.js`) as its own process, as production runs it. */
export class ChildApp {
  private output = '';

  private constructor(
    readonly process: ChildProcess,
    readonly baseUrl: string,
  ) {
    process.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    process.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
  }

  /** Starts it and (unless told not to) waits until it is ready. */
  static async start(
    env: Record<string, string> = {},
    { waitReady = true } = {},
  ): Promise<ChildApp> {
    const port = await freePort();
    const child = spawn(process.execPath, ['dist/main.js'], {
      cwd: ROOT,
      env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'log' },
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

  get exited(): boolean {
    return this.process.exitCode !== null || this.process.signalCode !== null;
  }

  get log(): string {
    return this.output;
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
