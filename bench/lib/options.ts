// The bench's command line.
import { parseArgs } from 'node:util';

import { UsageError } from '../../scripts/lib/errors.js';
import type { ScenarioSizes } from './scenarios.js';

export const USAGE = `usage: npm run bench -- [options]

  --quick            a short run: 3 s per scenario, small crowds, 1 round
  --rounds <n>       rounds; each runs every scenario on both sides, alternating who goes first
                     (default 3)
  --duration <s>     seconds of load per timed scenario; the scale steps get half (default 10)
  --connections <n>  connections the load generator keeps open to a side (default 100)
  --only <names>     comma-separated scenarios (success, soldout, crowd, drain, scale-1e2, …)
  --out <dir>        where results.json, report.html and chart.svg go (default bench-results)
  --from <file>      only render: read a results.json of an earlier run and write its report,
                     chart and summary again into --out
  --worker           run the project as two processes, APP_ROLE=api (HTTP, measured as "app")
                     and APP_ROLE=worker (the consumers and jobs); the baseline stays one process
  --baseline <work>  what the baseline does: minimal (the default: JWT, deduct, confirmed
                     publish) or same-work (also the per-user and per-address rate limits in one
                     script call, the per-user lock, its release with the outbox entry)
  --profile          run both sides under node --cpu-prof and print where their CPU went
                     (slows them down: for finding the cost, not for the figures)
  --help             show this help

Needs MariaDB/MySQL on 127.0.0.1:3306 (root), RabbitMQ on 127.0.0.1:5672 with rabbitmqctl,
and redis-server on PATH; it makes its own databases, vhosts and Redis servers.`;

export const BASELINE_WORKS = ['minimal', 'same-work'] as const;
export type BaselineWork = (typeof BASELINE_WORKS)[number];

function isBaselineWork(value: string): value is BaselineWork {
  return (BASELINE_WORKS as readonly string[]).includes(value);
}

export interface BenchOptions {
  rounds: number;
  connections: number;
  sizes: ScenarioSizes;
  only: string[] | undefined;
  outDir: string;
  warmUpMs: number;
  profile: boolean;
  /** The project as an api process plus a worker process. */
  worker: boolean;
  /** The baseline's Redis work per purchase (see bench/baseline/server.ts). */
  baseline: BaselineWork;
  from: string | undefined;
}

function positive(name: string, raw: string, max: number): number {
  const value = Number(raw);
  if (!/^[0-9]+(\.[0-9]+)?$/.test(raw) || value <= 0 || value > max) {
    throw new UsageError(`--${name} must be a number above 0 and at most ${max}, got ${raw}`);
  }
  return value;
}

export function parseOptions(argv: string[]): BenchOptions | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        quick: { type: 'boolean', default: false },
        rounds: { type: 'string' },
        duration: { type: 'string' },
        connections: { type: 'string', default: '100' },
        only: { type: 'string' },
        out: { type: 'string', default: 'bench-results' },
        profile: { type: 'boolean', default: false },
        worker: { type: 'boolean', default: false },
        baseline: { type: 'string', default: 'minimal' },
        from: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) return 'help';
  const quick = values.quick;
  const baseline = values.baseline;
  if (!isBaselineWork(baseline)) {
    throw new UsageError(`--baseline must be one of ${BASELINE_WORKS.join(', ')}, got ${baseline}`);
  }
  const seconds =
    values.duration === undefined ? (quick ? 3 : 10) : positive('duration', values.duration, 600);
  return {
    rounds: Math.round(
      values.rounds === undefined ? (quick ? 1 : 3) : positive('rounds', values.rounds, 50),
    ),
    connections: Math.round(positive('connections', values.connections, 2_000)),
    sizes: {
      durationMs: seconds * 1000,
      crowdBuyers: quick ? 2_000 : 10_000,
      crowdStock: quick ? 100 : 1_000,
      drainBuyers: quick ? 3_000 : 10_000,
    },
    only: values.only?.split(',').map((name) => name.trim()),
    outDir: values.out,
    warmUpMs: quick ? 1_000 : 3_000,
    profile: values.profile,
    worker: values.worker,
    baseline,
    from: values.from,
  };
}
