// Starting a server as a child process, waiting for it to be ready, and stopping it again.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync, type WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

import { ScriptError } from './errors.js';

const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 15_000;
const POLL_INTERVAL_MS = 100;
const LOG_TAIL_LINES = 40;

const startedServers = new Set<ChildProcess>();

export class ServerError extends ScriptError {}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  logPath: string;
  /** Settles once the process is gone and its output is flushed to the log file. */
  closed: Promise<ExitInfo>;
}

export interface StartServerOptions {
  /** Arguments to node: the entry script and whatever precedes it (e.g. `--import tsx`). */
  args: string[];
  cwd: string;
  port: number;
  env: NodeJS.ProcessEnv;
  logPath: string;
}

/** For a second Ctrl+C: no graceful shutdown, but no orphan either. */
export function killStartedServers(): void {
  for (const child of startedServers) child.kill('SIGKILL');
}

export async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() =>
        port > 0 ? resolve(port) : reject(new Error('could not read a free port')),
      );
    });
  });
}

export function readLogTail(path: string, lines = LOG_TAIL_LINES): string {
  if (!existsSync(path)) return '(no log)';
  return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function closeLog(log: WriteStream): Promise<void> {
  return new Promise((resolve) => log.end(resolve));
}

export function startServer(options: StartServerOptions): ServerProcess {
  const log = createWriteStream(options.logPath, { flags: 'w' });
  const child = spawn(process.execPath, options.args, {
    cwd: options.cwd,
    env: { ...options.env, PORT: String(options.port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  startedServers.add(child);
  child.once('exit', () => startedServers.delete(child));
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });

  const closed = new Promise<ExitInfo>((resolve) => {
    // 'close' (not 'exit') so that both pipes are drained before the log is closed and read.
    child.once('close', (code, signal) => void closeLog(log).then(() => resolve({ code, signal })));
    child.once('error', (error) => {
      log.write(`spawn failed: ${error.message}\n`);
      void closeLog(log).then(() => resolve({ code: null, signal: null }));
    });
  });
  return {
    child,
    baseUrl: `http://127.0.0.1:${options.port}`,
    logPath: options.logPath,
    closed,
  };
}

export async function waitForReady(server: ServerProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  // A holder object, because a plain `let` assigned in a callback is not re-checked by narrowing.
  const state: { exit?: ExitInfo } = {};
  void server.closed.then((info) => (state.exit = info));

  while (Date.now() < deadline) {
    if (state.exit !== undefined) {
      console.error(`--- last ${LOG_TAIL_LINES} lines of ${server.logPath} ---`);
      console.error(readLogTail(server.logPath));
      throw new ServerError(
        `server exited before it was ready (code ${state.exit.code}, signal ${state.exit.signal})`,
      );
    }
    try {
      const response = await fetch(`${server.baseUrl}/health/ready`, {
        signal: AbortSignal.timeout(2_000),
      });
      await response.body?.cancel();
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await Promise.race([sleep(POLL_INTERVAL_MS), server.closed]);
  }
  throw new ServerError(
    `server not ready after ${READY_TIMEOUT_MS / 1000} s; see ${server.logPath}`,
  );
}

export async function stopServer(server: ServerProcess): Promise<void> {
  if (!hasExited(server.child)) {
    server.child.kill('SIGTERM');
    // Unref'd so this timer alone never keeps the script alive.
    const graceful = await Promise.race([
      server.closed.then(() => true),
      sleep(STOP_GRACE_MS, false, { ref: false }),
    ]);
    if (!graceful) {
      console.error(`server did not stop within ${STOP_GRACE_MS / 1000} s, sending SIGKILL`);
      server.child.kill('SIGKILL');
    }
  }
  await server.closed;
}
