// Without flags: fault scenarios against real MySQL, Redis and RabbitMQ, with a table per
// scenario: the fault injected, requests, accepted, orders, lost, duplicated, and how long
// recovery took. With --random (or --schedule): one run of random, overlapping faults from a
// seed against a workload of buyers, checked afterwards (scripts/chaos/). The scenarios run the
// fault tests (test/faults, crash, redis-restart, redis-down-fallback, redis-cluster, messaging,
// shutdown), which cut and stall connections through a TCP proxy, kill a private redis-server and
// SIGKILL server processes; the services themselves are never touched. Point DATABASE_URL (a database whose name contains
// "test"), REDIS_URL and RABBITMQ_URL at your own deployment's servers to run it there.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import type { ChaosRow } from '../test/support/chaos-report.js';
import { parseChaosOptions, USAGE } from './chaos/options.js';
import { runChaos } from './chaos/run.js';
import { runScript } from './lib/main.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCENARIO_FILES = [
  'test/faults.e2e-spec.ts',
  'test/messaging.e2e-spec.ts',
  'test/redis-restart.e2e-spec.ts',
  'test/redis-down-fallback.e2e-spec.ts',
  'test/redis-cluster.e2e-spec.ts',
  'test/crash.e2e-spec.ts',
  'test/shutdown.e2e-spec.ts',
];

function runNamedScenarios(): number {
  const report = join(mkdtempSync(join(tmpdir(), 'seckill-chaos-')), 'report.jsonl');
  console.error('running the fault scenarios (about a minute)…');
  const run = spawnSync('npx', ['vitest', 'run', '--reporter=dot', ...SCENARIO_FILES], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, CHAOS_REPORT: report, LOG_LEVEL: process.env.LOG_LEVEL ?? 'error' },
  });
  const rows: ChaosRow[] = existsSync(report)
    ? readFileSync(report, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as ChaosRow)
    : [];

  const table = new Table({
    head: ['scenario', 'requests', 'accepted', 'orders', 'lost', 'duplicated', 'recovered in'],
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right', 'right'],
    style: process.stdout.isTTY ? { compact: true } : { head: [], border: [], compact: true },
  });
  for (const row of rows) {
    table.push([
      row.scenario,
      row.requests,
      row.accepted,
      row.orders,
      row.lost,
      row.duplicated,
      row.recoveredSeconds === null ? '-' : `${row.recoveredSeconds} s`,
    ]);
  }
  console.log(table.toString());
  for (const row of rows) console.log(`  ${row.scenario}: ${row.fault}`);

  const broken = rows.filter((row) => row.lost > 0 || row.duplicated > 0);
  for (const row of broken) {
    console.log(`BROKEN  ${row.scenario}: ${row.lost} lost, ${row.duplicated} duplicated`);
  }
  if (run.status !== 0) console.log('BROKEN  a fault test failed (see its output above)');
  if (broken.length === 0 && run.status === 0) {
    console.log(`OK      ${rows.length} scenarios: zero lost, zero duplicated`);
    return 0;
  }
  return 1;
}

if (process.argv.length > 2) {
  await runScript(parseChaosOptions, USAGE, (options) => runChaos(options, ROOT));
} else {
  process.exit(runNamedScenarios());
}
