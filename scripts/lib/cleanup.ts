// Cleanups that run once on the way out, whether the script ends, fails, or is interrupted.
import cliProgress from 'cli-progress';

import { killStartedServers } from './server-process.js';

type Cleanup = () => Promise<void> | void;
const cleanups: Cleanup[] = [];
let cleaning: Promise<void> | undefined;

export function onCleanup(cleanup: Cleanup): void {
  cleanups.push(cleanup);
}

/**
 * Runs each registered cleanup once, newest first. Both `finally` and the signal handler call it;
 * they share one run so neither can exit while the other is still stopping the server.
 */
export function runCleanups(): Promise<void> {
  cleaning ??= drainCleanups();
  return cleaning;
}

async function drainCleanups(): Promise<void> {
  while (cleanups.length > 0) {
    const cleanup = cleanups.pop();
    try {
      await cleanup?.();
    } catch (error) {
      console.error('cleanup failed:', error);
    }
  }
}

export function installSignalHandlers(): void {
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    // A second Ctrl+C means "now": skip the server's graceful shutdown, but leave no orphan behind.
    if (interrupted) {
      killStartedServers();
      process.exit(130);
    }
    interrupted = true;
    console.error(`\n${signal} received, stopping…`);
    void runCleanups().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

/** A bar on stderr, so that stdout keeps only the report; stopped by the cleanups on Ctrl+C too. */
export function startProgressBar(
  format: string,
  total: number,
  payload: Record<string, string | number> = {},
): cliProgress.SingleBar {
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format },
    cliProgress.Presets.shades_classic,
  );
  cleanups.push(() => bar.stop());
  bar.start(total, 0, payload);
  return bar;
}
