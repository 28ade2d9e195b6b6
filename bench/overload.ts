// npm run bench:overload: how the service answers a crowd beyond what it can take. One project
// process per configuration (the shipped one, and with --versus another, e.g. shedding off),
// each loaded in turn at every connection count, by clients that honour Retry-After (a person
// at the buyer's page) and by clients that send again at once (a script). Every figure is read
// beside the others of the same run: the box's cores are shared with the load generator.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

import { onCleanup } from '../scripts/lib/cleanup.js';
import { readFlags } from '../scripts/lib/args.js';
import { UsageError } from '../scripts/lib/errors.js';
import { runLoad, type LoadResult } from '../scripts/lib/load.js';
import { runScript } from '../scripts/lib/main.js';
import { percentile } from '../scripts/lib/stats.js';
import { cpuSeconds } from './lib/probes.js';
import { readProfile } from './lib/profile.js';
import { Buyers } from './lib/scenarios.js';
import { countOrders, startSide, type Side } from './lib/sides.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

const USAGE = `usage: npm run bench:overload -- [options]

  --connections <list>  comma-separated connection counts (default 100,300,1000: 1, 3 and 10
                        times the connections at which the project answers at full speed here)
  --duration <s>        seconds of load per run (default 15)
  --clients <kind>      honour (wait as Retry-After says, then try again as the same buyer),
                        ignore (send again at once, as a new buyer) or both
                        (default both)
  --stock <n>           the sale's stock (default 10000000: every purchase taken); 1 measures a
                        crowd at a sold-out sale (the memory's 409 answers)
  --timeout <s>         an answer slower than this counts as a timeout (default 10)
  --env <env>           KEY=VALUE[,KEY=VALUE…] added to the first configuration's environment
  --versus <env>        a second configuration, KEY=VALUE[,KEY=VALUE…] added to the project's
                        environment (e.g. OVERLOAD_MAX_IN_FLIGHT=0,…), run alternately with
                        the shipped one
  --versus-root <dir>   the second configuration from another built checkout (e.g. a
                        \`git worktree\` of an earlier commit, after \`npm ci && npm run build\`
                        there): two revisions alternately in one run, the environment of
                        --versus (or --env) on both
  --profile             run each configuration under node --cpu-prof and print where its CPU
                        went, by package (slows it down: for finding a cost, not for the figures)
  --out <dir>           where overload.json and overload.md go (default bench-results)

Needs what \`npm run bench\` needs (a build, MariaDB, RabbitMQ with rabbitmqctl, redis-server).`;

type ClientKind = 'honour' | 'ignore';

interface Options {
  connections: number[];
  durationMs: number;
  clients: ClientKind[];
  timeoutMs: number;
  stock: number;
  env: Record<string, string>;
  versus: Record<string, string> | undefined;
  /** The checkout the second configuration runs from (this one when absent). */
  versusRoot: string | undefined;
  profile: boolean;
  outDir: string;
}

function parseList(raw: string): number[] {
  const values = raw.split(',').map(Number);
  if (values.some((v) => !Number.isInteger(v) || v < 1 || v > 5_000)) {
    throw new UsageError(`--connections must be integers from 1 to 5000, got ${raw}`);
  }
  return values;
}

function parseEnv(raw: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of raw.split(',')) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(pair);
    if (match === null)
      throw new UsageError(`--env and --versus want KEY=VALUE pairs, got ${pair}`);
    env[match[1]] = match[2];
  }
  return env;
}

function parse(argv: string[]): Options | 'help' {
  const flags = readFlags(argv, {
    connections: { type: 'string', default: '100,300,1000' },
    duration: { type: 'string', default: '15' },
    clients: { type: 'string', default: 'both' },
    timeout: { type: 'string', default: '10' },
    stock: { type: 'string', default: '10000000' },
    env: { type: 'string' },
    versus: { type: 'string' },
    'versus-root': { type: 'string' },
    profile: { type: 'boolean', default: false },
    out: { type: 'string', default: 'bench-results' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (flags.help) return 'help';
  const seconds = (name: string, raw: string) => {
    const value = Number(raw);
    if (!(value > 0 && value <= 600)) throw new UsageError(`--${name} must be 0 < s <= 600`);
    return value * 1000;
  };
  const kinds: Record<string, ClientKind[]> = {
    honour: ['honour'],
    ignore: ['ignore'],
    both: ['honour', 'ignore'],
  };
  const clients = kinds[flags.clients];
  if (clients === undefined) throw new UsageError('--clients must be honour, ignore or both');
  const env = flags.env === undefined ? {} : parseEnv(flags.env);
  const stock = Number(flags.stock);
  if (!Number.isInteger(stock) || stock < 1)
    throw new UsageError('--stock must be an integer >= 1');
  return {
    connections: parseList(flags.connections),
    durationMs: seconds('duration', flags.duration),
    clients,
    timeoutMs: seconds('timeout', flags.timeout),
    stock,
    env,
    versus:
      flags.versus !== undefined
        ? parseEnv(flags.versus)
        : flags['versus-root'] !== undefined
          ? env
          : undefined,
    versusRoot: flags['versus-root'] === undefined ? undefined : resolve(flags['versus-root']),
    profile: flags.profile,
    outDir: resolve(flags.out),
  };
}

interface Latency {
  p50: number;
  p99: number;
  max: number;
}

interface OverloadRun {
  config: string;
  clients: ClientKind;
  connections: number;
  seconds: number;
  answersPerSec: number;
  acceptedPerSec: number;
  shedPerSec: number;
  /** Every answer's latency, and the accepted purchases' (202) alone. */
  all: Latency;
  accepted: Latency;
  /** No answer within --timeout. */
  timeouts: number;
  /** Answers that were neither 202 nor 503 OVERLOADED, by "status code". */
  others: Record<string, number>;
  /** The process's event-loop delay over the run, from its /metrics each second (ms). */
  eventLoopP99Ms: number | null;
  eventLoopMaxMs: number | null;
  /** Scrapes of /metrics that got no answer within 5 s (the process too busy to tell). */
  scrapesMissed: number;
  inProgressMax: number | null;
  /**
   * Requests in progress on average, as the clients saw them (Little's law: the sum of the
   * answers' latencies over the run's time): the bound is binding only while this is near it.
   */
  inProgressMean: number;
  ordersWritten: number;
  /**
   * The process's CPU time (user + system) over the run per purchase it accepted: what a
   * purchase costs, steadier than a rate when the machine's other tenants come and go.
   */
  cpuMsPerAccepted: number | null;
  /** The same per answer of any kind (a sold-out crowd's cost). */
  cpuMsPerAnswer: number | null;
  /**
   * The load generator's own event-loop delay over the run (ms): its clients read each answer
   * this late at worst, so a latency near it is the generator's as much as the service's.
   */
  generatorLoopP99Ms: number;
}

const cpuOf = (pid: number) => cpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));

function latency(results: readonly LoadResult[]): Latency {
  const sorted = results.map((r) => r.latencyMs).sort((a, b) => a - b);
  const round = (v: number) => Number(v.toFixed(1));
  return {
    p50: round(percentile(sorted, 50)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.at(-1) ?? 0),
  };
}

const GAUGE = (name: string) => new RegExp(`^${name} ([0-9.e+-]+)$`, 'm');

/** Reads the process's event-loop delay every second while the load runs. */
function watchEventLoop(origin: string): { stop: () => Promise<EventLoop> } {
  const p99: number[] = [];
  const max: number[] = [];
  const inProgress: number[] = [];
  let missed = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const response = await fetch(`${origin}/metrics`, { signal: AbortSignal.timeout(5_000) });
        const text = await response.text();
        const a = GAUGE('nodejs_eventloop_lag_p99_seconds').exec(text);
        const b = GAUGE('nodejs_eventloop_lag_max_seconds').exec(text);
        const c = GAUGE('seckill_purchases_in_progress').exec(text);
        if (a !== null) p99.push(Number(a[1]) * 1000);
        if (b !== null) max.push(Number(b[1]) * 1000);
        if (c !== null) inProgress.push(Number(c[1]));
      } catch {
        missed++;
      }
      await sleep(Math.max(0, 1_000 - (performance.now() - started)));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      const round = (v: number) => Number(v.toFixed(1));
      return {
        // The worst second's p99 and the worst delay seen: the first read covers the idle time
        // before the load, so it is dropped when there are others.
        p99Ms: p99.length === 0 ? null : round(Math.max(...p99.slice(p99.length > 1 ? 1 : 0))),
        maxMs: max.length === 0 ? null : round(Math.max(...max.slice(max.length > 1 ? 1 : 0))),
        missed,
        inProgressMax: inProgress.length === 0 ? null : Math.max(...inProgress),
      };
    },
  };
}

interface EventLoop {
  p99Ms: number | null;
  maxMs: number | null;
  missed: number;
  /** The most purchases in progress a scrape saw. */
  inProgressMax: number | null;
}

async function waitForOrders(side: Side, goodsId: number, expected: number): Promise<number> {
  const deadline = performance.now() + 180_000;
  for (;;) {
    const orders = await countOrders(side.db, goodsId);
    if (orders >= expected || performance.now() > deadline) return orders;
    await sleep(100);
  }
}

/** The most answers per second seen so far, for the next run's supply of signed buyers. */
let fastest = 5_000;

async function loadOnce(
  side: Side,
  config: string,
  buyers: Buyers,
  clients: ClientKind,
  connections: number,
  options: Options,
): Promise<OverloadRun> {
  const goodsId = await side.createSale(options.stock);
  const path = `/api/v1/seckill/${goodsId}`;
  // Signed before the load, so that signing does not compete with it; more on the fly if short.
  const pool = Array.from({ length: Math.ceil((fastest * options.durationMs * 1.3) / 1000) }, () =>
    buyers.take(),
  );
  const watch = watchEventLoop(side.origin);
  const cpuBefore = cpuOf(side.pid);
  const generatorLoop = monitorEventLoopDelay({ resolution: 10 });
  generatorLoop.enable();
  const run = await runLoad({
    origin: side.origin,
    connections,
    durationMs: options.durationMs,
    timeoutMs: options.timeoutMs,
    honorRetryAfter: clients === 'honour',
    // A person tries again as themselves; a script sends each purchase as a new account.
    retrySame: clients === 'honour',
    // A connection per client, as people and scripts have: a held connection holds its own.
    ownConnections: true,
    // Connections open before the clock: the crowd is on the page already; a storm of new
    // connections is the listen backlog's matter, not the purchase's.
    warmUp: { method: 'GET', path: '/health/live', headers: {} },
    next: (i) => ({ method: 'POST', path, headers: pool[i] ?? buyers.take() }),
  });
  const cpuMs = (cpuOf(side.pid) - cpuBefore) * 1000;
  generatorLoop.disable();
  const loop = await watch.stop();
  const seconds = run.elapsedMs / 1000;
  const accepted = run.results.filter((r) => r.status === 202);
  let shed = 0;
  let timeouts = 0;
  const others: Record<string, number> = {};
  for (const result of run.results) {
    if (result.status === 202) continue;
    if (result.status === 503 && result.code === 'OVERLOADED') shed++;
    else if (result.status === 0 && /TIMEOUT/i.test(result.code ?? '')) timeouts++;
    else {
      const label = `${result.status} ${result.code ?? ''}`.trimEnd();
      others[label] = (others[label] ?? 0) + 1;
    }
  }
  const ordersWritten = await waitForOrders(side, goodsId, accepted.length);
  const rate = (n: number) => Number((n / seconds).toFixed(1));
  fastest = Math.max(fastest, run.results.length / seconds);
  return {
    config,
    clients,
    connections,
    seconds: Number(seconds.toFixed(2)),
    answersPerSec: rate(run.results.length),
    acceptedPerSec: rate(accepted.length),
    shedPerSec: rate(shed),
    all: latency(run.results),
    accepted: latency(accepted),
    timeouts,
    others,
    eventLoopP99Ms: loop.p99Ms,
    eventLoopMaxMs: loop.maxMs,
    scrapesMissed: loop.missed,
    inProgressMax: loop.inProgressMax,
    inProgressMean: Math.round(
      run.results.reduce((sum, r) => sum + r.latencyMs, 0) / run.elapsedMs,
    ),
    ordersWritten,
    cpuMsPerAccepted: accepted.length === 0 ? null : Number((cpuMs / accepted.length).toFixed(3)),
    cpuMsPerAnswer:
      run.results.length === 0 ? null : Number((cpuMs / run.results.length).toFixed(3)),
    generatorLoopP99Ms: Number((generatorLoop.percentile(99) / 1e6).toFixed(1)),
  };
}

function table(runs: readonly OverloadRun[]): string {
  const peak = Math.max(...runs.map((r) => r.acceptedPerSec));
  const head =
    '| config | clients | conn | answers/s | accepted/s (of peak) | shed/s | p50 / p99 / max all (ms) | p50 / p99 / max accepted (ms) | timeouts | other answers | loop p99 / max (ms) | generator loop p99 (ms) | CPU ms per accepted |';
  const rows = runs.map((r) =>
    [
      r.config,
      r.clients,
      r.connections,
      r.answersPerSec,
      `${r.acceptedPerSec} (${Math.round((r.acceptedPerSec / peak) * 100)} %)`,
      r.shedPerSec,
      `${r.all.p50} / ${r.all.p99} / ${r.all.max}`,
      `${r.accepted.p50} / ${r.accepted.p99} / ${r.accepted.max}`,
      r.timeouts,
      Object.entries(r.others)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ') || '—',
      `${r.eventLoopP99Ms ?? '?'} / ${r.eventLoopMaxMs ?? '?'}${r.scrapesMissed > 0 ? ` (${r.scrapesMissed} scrapes missed)` : ''}`,
      r.generatorLoopP99Ms,
      r.cpuMsPerAccepted ?? '—',
    ].join(' | '),
  );
  return [head, `|${' --- |'.repeat(13)}`, ...rows.map((row) => `| ${row} |`)].join('\n');
}

/** Each configuration's means over its runs of the same clients and connections (repeats). */
function means(runs: readonly OverloadRun[]): string {
  const groups = new Map<string, OverloadRun[]>();
  for (const run of runs) {
    const key = `${run.config} | ${run.clients} | ${run.connections}`;
    groups.set(key, [...(groups.get(key) ?? []), run]);
  }
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  const rows = [...groups].map(([key, group]) => {
    const known = (values: (number | null)[]) => values.flatMap((v) => (v === null ? [] : [v]));
    const cpu = known(group.map((r) => r.cpuMsPerAccepted));
    const cpuAll = known(group.map((r) => r.cpuMsPerAnswer));
    return `| ${key} | ${group.length} | ${mean(group.map((r) => r.answersPerSec)).toFixed(1)} | ${mean(group.map((r) => r.acceptedPerSec)).toFixed(1)} | ${mean(group.map((r) => r.accepted.p99)).toFixed(1)} | ${cpu.length === 0 ? '—' : mean(cpu).toFixed(3)} | ${cpuAll.length === 0 ? '—' : mean(cpuAll).toFixed(3)} |`;
  });
  return [
    '| config | clients | conn | runs | mean answers/s | mean accepted/s | mean accepted p99 (ms) | mean CPU ms per accepted | per answer |',
    `|${' --- |'.repeat(9)}`,
    ...rows,
  ].join('\n');
}

async function run(options: Options): Promise<boolean> {
  mkdirSync(options.outDir, { recursive: true });
  const secret = randomBytes(32).toString('hex');
  const configs: { name: string; env: Record<string, string>; root: string }[] = [
    { name: 'shipped', env: options.env, root: REPO_ROOT },
    ...(options.versus === undefined
      ? []
      : [{ name: 'versus', env: options.versus, root: options.versusRoot ?? REPO_ROOT }]),
  ];
  const sides: { name: string; side: Side; buyers: Buyers }[] = [];
  for (const [index, config] of configs.entries()) {
    console.log(`starting ${config.name}…`);
    const side = await startSide('project', {
      repoRoot: config.root,
      logDir: options.outDir,
      jwtSecret: secret,
      env: config.env,
      store: `seckill_bench_overload_${index}`,
      logName: `overload-${config.name}`,
      profileDir: options.profile ? join(options.outDir, config.name) : undefined,
    });
    onCleanup(() => side.stop());
    const buyers = new Buyers(secret, 1_000_000 + index * 50_000_000);
    sides.push({ name: config.name, side, buyers });
    // Warm-up (JIT, pools): unrecorded.
    await loadOnce(side, config.name, buyers, 'ignore', 100, { ...options, durationMs: 3_000 });
  }
  const runs: OverloadRun[] = [];
  let step = 0;
  for (const clients of options.clients) {
    for (const connections of options.connections) {
      // Alternating who goes first from one step to the next (the count of runs, two a step with
      // --versus, would always be even).
      const order = step++ % 2 === 0 ? sides : [...sides].reverse();
      for (const { name, side, buyers } of order) {
        const run = await loadOnce(side, name, buyers, clients, connections, options);
        runs.push(run);
        console.log(
          `${name} ${clients} ${connections}: ${run.acceptedPerSec} accepted/s, ${run.shedPerSec} shed/s, accepted p99 ${run.accepted.p99} ms, ${run.timeouts} timeouts, loop p99 ${run.eventLoopP99Ms} ms (generator's ${run.generatorLoopP99Ms} ms), in progress ≤ ${run.inProgressMax} (mean ${run.inProgressMean}), CPU ${run.cpuMsPerAccepted} ms per accepted, ${run.cpuMsPerAnswer} per answer`,
        );
      }
    }
  }
  for (const { side } of sides) await side.stop();
  if (options.profile) {
    for (const { name } of sides) {
      const profile = readProfile(join(options.outDir, name, 'profile-project'));
      console.log(`\n${name}: self time over ${profile.seconds} s (idle excluded), by package`);
      for (const share of profile.byPackage) {
        console.log(`  ${share.percent.toFixed(1).padStart(5)} %  ${share.name}`);
      }
    }
  }
  const markdown = [
    `# Overload: ${new Date().toISOString()}`,
    '',
    `${options.durationMs / 1000} s per run; timeout ${options.timeoutMs / 1000} s; every request a new buyer on a stock of ${options.stock}; one process (APP_ROLE=all).`,
    `shipped: ${JSON.stringify(options.env)}`,
    options.versus === undefined
      ? ''
      : `versus: ${JSON.stringify(options.versus)}${options.versusRoot === undefined ? '' : ` from ${options.versusRoot}`}`,
    '',
    table(runs),
    '',
    means(runs),
    '',
  ].join('\n');
  writeFileSync(join(options.outDir, 'overload.json'), JSON.stringify({ options, runs }, null, 2));
  writeFileSync(join(options.outDir, 'overload.md'), markdown);
  console.log(`\n${markdown}`);
  return true;
}

await runScript(parse, USAGE, run);
