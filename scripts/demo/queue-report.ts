// The queue sale's report (--queue): its figures, the fairness figure against the open sale, and
// the waiting room's own checks.
import type { Check } from './report.js';
import { newTable } from './report.js';
import type { QueueSaleRun } from './queue-sale.js';

/** How many standard deviations from a fair draw the scripts' sales may stray. */
export const FAIR_BOUND_SD = 5;

export interface FairDraw {
  mean: number;
  sd: number;
}

/**
 * The scripts' units when `units` buyers are drawn at random, without replacement, from
 * `scripts + people` (hypergeometric): what a fair queue gives them. Only the buyers who would
 * buy count: a person who walks away gives the place to the next in line, as random as theirs.
 */
export function fairDraw(units: number, scripts: number, people: number): FairDraw {
  const population = scripts + people;
  if (population <= 1 || units <= 0) return { mean: 0, sd: 0 };
  const share = scripts / population;
  const mean = units * share;
  const variance = units * share * (1 - share) * ((population - units) / (population - 1));
  return { mean, sd: Math.sqrt(Math.max(0, variance)) };
}

/**
 * The most admissions in any 1,000 ms, the window the admission script itself judges by (at,
 * Redis's clock in ms; each entry may admit several).
 */
export function peakAdmissionsPerSecond(admissions: readonly { at: number; count: number }[]) {
  const sorted = [...admissions].sort((a, b) => a.at - b.at);
  let peak = 0;
  let inWindow = 0;
  let first = 0;
  for (const entry of sorted) {
    inWindow += entry.count;
    while (sorted[first].at <= entry.at - 1_000) inWindow -= sorted[first++].count;
    peak = Math.max(peak, inWindow);
  }
  return peak;
}

const seconds = (ms: number | undefined) =>
  ms === undefined ? 'n/a' : `${ms >= 0 ? '+' : ''}${(ms / 1000).toFixed(2)} s`;
const percent = (part: number, whole: number) =>
  whole === 0 ? 'n/a' : `${((100 * part) / whole).toFixed(1)} %`;

export interface QueueFigures {
  scriptsSold: number;
  peopleSold: number;
  buyingPeople: number;
  fair: FairDraw;
  admitted: number;
  peakPerSecond: number;
  firstAdmissionMs: number | undefined;
  lapsed: number;
  toldSoldOut: number;
  notAdmitted: number;
}

export function queueFigures(run: QueueSaleRun): QueueFigures {
  const scripts = new Set(run.scripts);
  const sold = [...run.accepted.keys()];
  const buyingPeople = run.people.filter((p) => !p.walksAway).length;
  const firstAt = Math.min(...run.admissions.map((a) => a.at));
  return {
    scriptsSold: sold.filter((id) => scripts.has(id)).length,
    peopleSold: sold.filter((id) => !scripts.has(id)).length,
    buyingPeople,
    fair: fairDraw(sold.length, run.scripts.length, buyingPeople),
    admitted: run.admissions.reduce((sum, a) => sum + a.count, 0),
    peakPerSecond: peakAdmissionsPerSecond(run.admissions),
    firstAdmissionMs: Number.isFinite(firstAt) ? firstAt - run.startAt : undefined,
    lapsed: run.people.filter((p) => p.seen.has('EXPIRED')).length,
    toldSoldOut: run.people.filter((p) => p.seen.has('SOLD_OUT')).length,
    notAdmitted: run.scriptAnswers.get('NOT_ADMITTED') ?? 0,
  };
}

export function buildQueueTable(run: QueueSaleRun, figures: QueueFigures): string {
  const table = newTable('waiting room');
  const total = run.people.length + run.scripts.length;
  const scriptAnswers = [...run.scriptAnswers]
    .filter(([code]) => code !== '202')
    .sort(([, a], [, b]) => b - a)
    .map(([code, n]): [string, number] => [`scripts refused: ${code}`, n]);
  table.push(
    ['people joined (pre-queue)', `${run.joins.people} of ${run.people.length}`],
    [
      'people joins per second',
      run.joins.peopleMs > 0 ? Math.round((run.joins.people * 1000) / run.joins.peopleMs) : 'n/a',
    ],
    ['scripts joined (last 300 ms)', `${run.joins.scripts} of ${run.scripts.length}`],
    ['first admission after start', seconds(figures.firstAdmissionMs)],
    ['admitted in all', figures.admitted],
    ['admissions, peak in any 1 s', `${figures.peakPerSecond} (pace ${run.admitPerSecond})`],
    ['people who walked away (lapsed)', figures.lapsed],
    ['scripts: purchases sent', [...run.scriptAnswers.values()].reduce((a, b) => a + b, 0)],
    ...scriptAnswers,
    ['units sold', `${run.accepted.size} of ${run.stock}`],
    ['last unit sold after start', seconds(run.lastAcceptedMs)],
    ['people told SOLD_OUT while waiting', figures.toldSoldOut],
    ['last of them told, after start', seconds(run.lastSoldOutMs)],
  );
  const fairness = newTable('fairness');
  fairness.push(
    [
      'scripts in the queue',
      `${run.scripts.length} of ${total} (${percent(run.scripts.length, total)})`,
    ],
    [
      'queue sale: units to scripts',
      `${figures.scriptsSold} of ${run.accepted.size} (${percent(figures.scriptsSold, run.accepted.size)})`,
    ],
    [
      'a fair draw would give them',
      `${figures.fair.mean.toFixed(1)} ± ${figures.fair.sd.toFixed(1)}`,
    ],
    [
      'open sale: units to scripts',
      run.open
        ? `${run.open.scriptsSold} of ${run.open.scriptsSold + run.open.peopleSold} (${percent(run.open.scriptsSold, run.open.scriptsSold + run.open.peopleSold)})`
        : 'n/a',
    ],
  );
  return `${table.toString()}\n${fairness.toString()}`;
}

export function evaluateQueueChecks(run: QueueSaleRun, figures: QueueFigures): Check[] {
  const { fair } = figures;
  const low = Math.max(0, Math.floor(fair.mean - FAIR_BOUND_SD * fair.sd));
  const high = Math.ceil(fair.mean + FAIR_BOUND_SD * fair.sd);
  const unsettled = run.people.filter(
    (p) => !p.seen.has('PURCHASED') && !p.seen.has('SOLD_OUT') && !p.seen.has('EXPIRED'),
  ).length;
  return [
    {
      name: 'every buyer with an order used an admission',
      ok: run.boughtWithoutAdmission.length === 0,
      detail:
        run.boughtWithoutAdmission.length === 0
          ? `${run.accepted.size} buyers read PURCHASED`
          : `users ${run.boughtWithoutAdmission.slice(0, 10).join(', ')} did not`,
    },
    {
      name: 'scripts refused until admitted',
      ok: figures.notAdmitted > 0,
      detail: `${figures.notAdmitted} purchases answered NOT_ADMITTED`,
    },
    {
      name: 'admissions within admitPerSecond',
      ok: figures.peakPerSecond <= run.admitPerSecond,
      detail: `at most ${figures.peakPerSecond} in any 1,000 ms, pace ${run.admitPerSecond}`,
    },
    {
      name: 'every unit sold',
      ok: run.accepted.size === run.stock,
      detail: `${run.accepted.size} of ${run.stock}`,
    },
    {
      name: 'every person told where they ended',
      ok: unsettled === 0 && !run.timedOut,
      detail:
        unsettled === 0
          ? 'PURCHASED, SOLD_OUT or EXPIRED, each'
          : `${unsettled} without a final state${run.timedOut ? ' (timed out)' : ''}`,
    },
    {
      name: 'the draw checks out from the outside (npm run verify-draw)',
      ok: run.draw.ok,
      detail: run.draw.ok ? run.draw.summary : run.draw.problem,
    },
    {
      name: `scripts' units within ${FAIR_BOUND_SD} sd of a fair draw`,
      ok: figures.scriptsSold >= low && figures.scriptsSold <= high,
      detail: `${figures.scriptsSold}, fair ${low}..${high}`,
    },
  ];
}
