// What a side costs besides time: its process's CPU and memory (from /proc), and its Redis
// commands and bytes (from its own redis-server, so nobody else's traffic is counted).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

import type { Redis } from 'ioredis';

export interface ProcFigures {
  /** Percent of one core, averaged over the sampled span. */
  cpuPercent: number;
  rssMaxMb: number;
  rssAvgMb: number;
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime in seconds; the command name may hold spaces, so fields count from its ")". */
export function cpuSeconds(statLine: string): number {
  const fields = statLine.slice(statLine.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

function readCpu(pid: number): number {
  return cpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

function readRssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

/**
 * The oldest local process of one of these names (RabbitMQ's beam.smp, MariaDB's mariadbd or
 * MySQL's mysqld): both sides share the broker and the database, so what they burn during a
 * side's load is that side's. Undefined when none runs here (a remote service).
 */
export function localPid(names: readonly string[]): number | undefined {
  for (const name of names) {
    try {
      const pid = Number(execFileSync('pgrep', ['-o', '-x', name], { encoding: 'utf8' }).trim());
      if (Number.isSafeInteger(pid) && pid > 0) return pid;
    } catch {
      // pgrep exits 1 when nothing matches.
    }
  }
  return undefined;
}

/** Samples a process every `intervalMs` until stopped. */
export function sampleProcess(pid: number, intervalMs = 250): { stop: () => ProcFigures } {
  const startedAt = performance.now();
  const startCpu = readCpu(pid);
  const rss: number[] = [readRssMb(pid)];
  const timer = setInterval(() => {
    try {
      rss.push(readRssMb(pid));
    } catch {
      // The process is gone; what was sampled stands.
    }
  }, intervalMs);
  return {
    stop: () => {
      clearInterval(timer);
      const seconds = (performance.now() - startedAt) / 1000;
      let cpu = 0;
      try {
        cpu = readCpu(pid) - startCpu;
      } catch {
        // Gone: no figure rather than a wrong one.
      }
      return {
        cpuPercent: seconds > 0 ? Number(((cpu / seconds) * 100).toFixed(1)) : 0,
        rssMaxMb: Number(Math.max(...rss).toFixed(1)),
        rssAvgMb: Number((rss.reduce((a, b) => a + b, 0) / rss.length).toFixed(1)),
      };
    },
  };
}

export type CommandCounts = Record<string, number>;

/** `INFO commandstats` as command → calls (commands run inside Lua scripts are counted too). */
export function parseCommandStats(info: string): CommandCounts {
  const counts: CommandCounts = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    counts[match[1] ?? ''] = Number(match[2]);
  }
  return counts;
}

export async function commandStats(redis: Redis): Promise<CommandCounts> {
  return parseCommandStats(await redis.info('commandstats'));
}

/** after - before, without the probes' own INFO calls and without zeros. */
export function diffCommands(before: CommandCounts, after: CommandCounts): CommandCounts {
  const diff: CommandCounts = {};
  for (const [name, calls] of Object.entries(after)) {
    const delta = calls - (before[name] ?? 0);
    if (delta > 0 && name !== 'info') diff[name] = delta;
  }
  return diff;
}

export interface CommandFigures {
  /** Every command executed, those inside Lua scripts included. */
  total: number;
  /** EVAL/EVALSHA calls: one round trip each, however many commands they run. */
  scripts: number;
  byCommand: CommandCounts;
}

export function commandFigures(diff: CommandCounts): CommandFigures {
  const total = Object.values(diff).reduce((a, b) => a + b, 0);
  const scripts = (diff.evalsha ?? 0) + (diff.eval ?? 0) + (diff.fcall ?? 0);
  return { total, scripts, byCommand: diff };
}

/** Bytes Redis holds for one sale: every key under its hash tag, nested values counted in full. */
export async function saleMemoryBytes(redis: Redis, goodsId: number): Promise<number> {
  let bytes = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `seckill:{${goodsId}}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const used = (await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) as number | null;
      bytes += used ?? 0;
    }
  } while (cursor !== '0');
  return bytes;
}
