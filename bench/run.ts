// npm run bench: the project against a minimal baseline with the same contract, alternating
// within each round on the same machine, so that every figure is read as a ratio measured in
// one run rather than as an absolute that the shared cores would make meaningless.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { onCleanup, startProgressBar } from '../scripts/lib/cleanup.js';
import { UsageError } from '../scripts/lib/errors.js';
import { runScript } from '../scripts/lib/main.js';
import { parseOptions, USAGE, type BenchOptions } from './lib/options.js';
import { PURCHASE_LAYERS, readProfile, type ProfileSummary } from './lib/profile.js';
import {
  buildHtml,
  mainChart,
  roundTripTable,
  summarize,
  summaryMarkdown,
  summaryTable,
  type ScenarioSummary,
} from './lib/report.js';
import { measureRoundTrips, type RoundTrips } from './lib/round-trips.js';
import { Buyers, runScenario, scenarios, warmUp, type RunRecord } from './lib/scenarios.js';
import { SIDES, startSide, type Side, type SideName } from './lib/sides.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

function quietly(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8', cwd: REPO_ROOT }).trim();
  } catch {
    return '';
  }
}

function readProfiles(dir: string): Record<SideName, ProfileSummary> {
  return Object.fromEntries(
    SIDES.map((name) => [
      name,
      readProfile(join(dir, `profile-${name}`), name === 'project' ? PURCHASE_LAYERS : undefined),
    ]),
  ) as Record<SideName, ProfileSummary>;
}

function printProfiles(profiles: Record<SideName, ProfileSummary>): void {
  for (const name of SIDES) {
    const profile = profiles[name];
    console.log(`\n${name}: self time over ${profile.seconds} s (idle excluded), by package`);
    for (const share of profile.byPackage)
      console.log(`  ${share.percent.toFixed(1).padStart(5)} %  ${share.name}`);
    console.log(`${name}: by function`);
    for (const share of profile.byFunction)
      console.log(`  ${share.percent.toFixed(1).padStart(5)} %  ${share.name}`);
    if (profile.byLayer === undefined) continue;
    console.log(`${name}: by layer of a purchase (a layer with the library code it calls)`);
    for (const share of profile.byLayer)
      console.log(`  ${share.percent.toFixed(1).padStart(5)} %  ${share.name}`);
  }
}

async function bench(options: BenchOptions): Promise<boolean> {
  const outDir = resolve(options.outDir);
  mkdirSync(outDir, { recursive: true });
  if (options.from !== undefined) {
    const earlier = JSON.parse(readFileSync(options.from, 'utf8')) as Results;
    // Summarized again, so that a figure added since is there for old runs too.
    const named = earlier.summaries.map((s) => ({ name: s.scenario, title: s.title }));
    return writeResults(outDir, { ...earlier, summaries: summarize(earlier.runs, named) });
  }
  const list = scenarios(options.sizes).filter(
    (s) => options.only === undefined || options.only.includes(s.name),
  );
  if (list.length === 0) throw new UsageError(`--only matches no scenario`);
  const others = quietly('pgrep', ['-f', 'vitest']);
  if (others !== '') {
    console.warn('warning: other test suites (vitest) are running: the figures will be noisier');
  }
  const meta: Record<string, unknown> = {
    startedAt: new Date().toISOString(),
    commit: quietly('git', ['rev-parse', '--short', 'HEAD']),
    node: process.version,
    cpus: `${cpus().length} × ${cpus()[0]?.model ?? '?'}`,
    loadAverageAtStart: loadavg().map((v) => Number(v.toFixed(2))),
    otherTestSuitesRunningAtStart: others !== '',
    rounds: options.rounds,
    connections: options.connections,
    sizes: options.sizes,
    projectProcesses: options.worker ? 'api + worker' : 'one (APP_ROLE=all)',
    baseline: options.baseline,
  };

  const secret = randomBytes(32).toString('hex');
  const sides = {} as Record<SideName, Side>;
  const buyers = {} as Record<SideName, Buyers>;
  console.log(`baseline: ${options.baseline}`);
  for (const name of SIDES) {
    console.log(`starting ${name}…`);
    const side = await startSide(name, {
      repoRoot: REPO_ROOT,
      logDir: outDir,
      jwtSecret: secret,
      profileDir: options.profile ? outDir : undefined,
      worker: options.worker,
      baseline: options.baseline,
    });
    onCleanup(() => side.stop());
    sides[name] = side;
    buyers[name] = new Buyers(secret);
    await warmUp(side, buyers[name], options.connections, options.warmUpMs);
  }

  const runs: RunRecord[] = [];
  let answers = 0;
  const total = options.rounds * list.length * SIDES.length;
  const bar = startProgressBar(
    'bench [{bar}] {value}/{total} runs | round {round} {scenario} {side} | {answers} answers | {duration_formatted}',
    total,
    { round: 1, scenario: '', side: '', answers: 0 },
  );
  const ticker = setInterval(() => bar.update({ answers }), 500);
  try {
    for (let round = 1; round <= options.rounds; round++) {
      const order: SideName[] = round % 2 === 1 ? ['project', 'baseline'] : ['baseline', 'project'];
      for (const scenario of list) {
        for (const [index, name] of order.entries()) {
          answers = 0;
          bar.update({ round, scenario: scenario.name, side: name, answers });
          runs.push(
            await runScenario(sides[name], scenario, {
              round,
              position: index + 1,
              connections: options.connections,
              buyers: buyers[name],
              onAnswer: () => answers++,
            }),
          );
          bar.increment();
        }
      }
    }
  } finally {
    clearInterval(ticker);
    bar.stop();
  }

  meta.finishedAt = new Date().toISOString();
  const roundTrips = {} as Record<SideName, RoundTrips>;
  for (const name of SIDES) roundTrips[name] = await measureRoundTrips(sides[name], buyers[name]);
  for (const name of SIDES) await sides[name].stop();
  const profiles = options.profile ? readProfiles(outDir) : undefined;
  if (profiles) printProfiles(profiles);
  return writeResults(outDir, {
    meta,
    summaries: summarize(runs, list),
    roundTrips,
    profiles,
    runs,
  });
}

interface Results {
  meta: Record<string, unknown>;
  summaries: ScenarioSummary[];
  /** Absent in results written before it was measured. */
  roundTrips?: Record<SideName, RoundTrips>;
  profiles: Record<SideName, ProfileSummary> | undefined;
  runs: RunRecord[];
}

/** Writes the files and prints the table; true when no run broke an invariant. */
function writeResults(outDir: string, results: Results): boolean {
  const { meta, summaries, runs, roundTrips } = results;
  const broken = runs.filter((r) => !r.invariants.ok);
  writeFileSync(
    join(outDir, 'results.json'),
    JSON.stringify({ ...results, ok: broken.length === 0 }, null, 2),
  );
  writeFileSync(join(outDir, 'report.html'), buildHtml({ meta, runs, summaries, roundTrips }));
  writeFileSync(join(outDir, 'chart.svg'), mainChart(summaries));
  writeFileSync(join(outDir, 'summary.md'), summaryMarkdown(summaries) + '\n');
  console.log(summaryTable(summaries));
  if (roundTrips) console.log(roundTripTable(roundTrips));
  console.log(`results: ${join(outDir, 'results.json')}, report: ${join(outDir, 'report.html')}`);
  for (const run of broken) {
    console.log(
      `BROKEN  round ${run.round} ${run.scenario} ${run.side}: ${run.invariants.problems.join('; ')}`,
    );
  }
  if (broken.length === 0) {
    console.log('OK      no side oversold, sold twice to a user, or lost an order');
  }
  return broken.length === 0;
}

await runScript(parseOptions, USAGE, bench);
