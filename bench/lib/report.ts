// From the runs to what a person reads: medians and ratios per scenario, the terminal table,
// the main chart, and one self-contained HTML page.
import Table from 'cli-table3';

import { compare, type Comparison } from './figures.js';
import type { RoundTrips } from './round-trips.js';
import type { RunRecord, Scenario } from './scenarios.js';
import { barChart, escapeXml, lineChart, type Series } from './svg.js';

export const COLORS = { project: '#2563eb', baseline: '#ea580c' } as const;
const ROUND_SHADES = {
  project: ['#2563eb', '#60a5fa', '#1e3a8a', '#93c5fd'],
  baseline: ['#ea580c', '#fb923c', '#9a3412', '#fdba74'],
} as const;

export interface ScenarioSummary {
  scenario: string;
  title: string;
  /** Medians over rounds per side, and project / baseline. */
  medians: Record<string, Comparison>;
}

/** The figures of one run that are compared across sides; absent when they mean nothing. */
export function metricsOf(run: RunRecord): Record<string, number> {
  const metrics: Record<string, number> = {
    answersPerSec: run.answersPerSec,
    acceptedPerSec: run.acceptedPerSec,
    p50Ms: run.latencyMs.p50,
    p90Ms: run.latencyMs.p90,
    p99Ms: run.latencyMs.p99,
    cpuPercent: run.proc.cpuPercent,
    // What one answer costs the app's process, whatever the load generator managed to send.
    cpuMsPerAnswer:
      run.answers > 0
        ? Number((((run.proc.cpuPercent / 100) * run.loadSeconds * 1000) / run.answers).toFixed(3))
        : 0,
    rssMaxMb: run.proc.rssMaxMb,
    redisCpuPercent: run.redisCpuPercent,
    loadGeneratorCpuPercent: run.loadGeneratorCpuPercent,
    redisCmdsPerAnswer: run.redis.perAnswer,
    redisScriptsPerAnswer: run.redis.scriptsPerAnswer,
  };
  if (run.accepted > 0) {
    metrics.pipelineOrdersPerSec = run.pipelineOrdersPerSec;
    if (run.drainSeconds !== null) metrics.drainSeconds = run.drainSeconds;
  }
  // Absent from records written before these were measured, and when there is no worker.
  if (typeof run.workerCpuPercent === 'number') metrics.workerCpuPercent = run.workerCpuPercent;
  if (typeof run.brokerCpuPercent === 'number') metrics.brokerCpuPercent = run.brokerCpuPercent;
  if (typeof run.mysqlCpuPercent === 'number') metrics.mysqlCpuPercent = run.mysqlCpuPercent;
  if (run.redis.perAccepted !== null) metrics.redisCmdsPerAccepted = run.redis.perAccepted;
  if (run.redisBytesPerBuyer !== null) metrics.redisBytesPerBuyer = run.redisBytesPerBuyer;
  return metrics;
}

export function summarize(
  runs: readonly RunRecord[],
  scenarios: readonly Pick<Scenario, 'name' | 'title'>[],
): ScenarioSummary[] {
  return scenarios.map((scenario) => {
    const of = (side: string) =>
      runs.filter((r) => r.scenario === scenario.name && r.side === side).map(metricsOf);
    return {
      scenario: scenario.name,
      title: scenario.title,
      medians: compare(of('project'), of('baseline')),
    };
  });
}

const LABELS: Record<string, string> = {
  answersPerSec: 'answers/s',
  acceptedPerSec: 'accepted/s',
  p50Ms: 'p50 latency (ms)',
  p90Ms: 'p90 latency (ms)',
  p99Ms: 'p99 latency (ms)',
  drainSeconds: 'drain after load (s)',
  pipelineOrdersPerSec: 'orders/s, load + drain',
  cpuPercent: 'app CPU (% of a core)',
  cpuMsPerAnswer: 'app CPU ms per answer',
  rssMaxMb: 'app RSS max (MB)',
  redisCpuPercent: 'redis-server CPU (% of a core)',
  loadGeneratorCpuPercent: 'load generator CPU (% of a core)',
  workerCpuPercent: 'worker CPU (% of a core)',
  brokerCpuPercent: 'RabbitMQ CPU (% of a core)',
  mysqlCpuPercent: 'MySQL CPU (% of a core)',
  redisCmdsPerAnswer: 'Redis cmds per answer',
  redisCmdsPerAccepted: 'Redis cmds per purchase',
  redisScriptsPerAnswer: 'Lua calls per answer',
  redisBytesPerBuyer: 'Redis bytes per buyer',
};

/** Which rows each scenario's table shows: the ones that say something about it. */
const ROWS: Record<string, string[]> = {
  success: [
    'answersPerSec',
    'p50Ms',
    'p90Ms',
    'p99Ms',
    'drainSeconds',
    'pipelineOrdersPerSec',
    'cpuPercent',
    'cpuMsPerAnswer',
    'workerCpuPercent',
    'redisCpuPercent',
    'brokerCpuPercent',
    'mysqlCpuPercent',
    'loadGeneratorCpuPercent',
    'rssMaxMb',
    'redisCmdsPerAccepted',
    'redisScriptsPerAnswer',
    'redisBytesPerBuyer',
  ],
  soldout: [
    'answersPerSec',
    'p50Ms',
    'p99Ms',
    'cpuPercent',
    'cpuMsPerAnswer',
    'redisCpuPercent',
    'loadGeneratorCpuPercent',
    'redisCmdsPerAnswer',
    'redisScriptsPerAnswer',
  ],
  crowd: ['answersPerSec', 'acceptedPerSec', 'p50Ms', 'p99Ms', 'drainSeconds'],
  drain: [
    'answersPerSec',
    'p99Ms',
    'drainSeconds',
    'pipelineOrdersPerSec',
    'workerCpuPercent',
    'brokerCpuPercent',
    'mysqlCpuPercent',
  ],
};
const SCALE_ROWS = ['answersPerSec', 'acceptedPerSec', 'p99Ms'];

function rowsFor(scenario: string): string[] {
  return ROWS[scenario] ?? SCALE_ROWS;
}

export function formatNumber(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(Math.abs(value) >= 10 ? 1 : 2);
}

function formatRatio(value: number | null): string {
  return value === null ? 'n/a' : `${value.toFixed(2)}×`;
}

export function summaryRows(summaries: readonly ScenarioSummary[]): string[][] {
  const rows: string[][] = [];
  for (const summary of summaries) {
    for (const metric of rowsFor(summary.scenario)) {
      const m = summary.medians[metric];
      if (m === undefined) continue;
      rows.push([
        summary.scenario,
        LABELS[metric] ?? metric,
        formatNumber(m.project),
        formatNumber(m.baseline),
        formatRatio(m.ratio),
      ]);
    }
  }
  return rows;
}

export function summaryTable(summaries: readonly ScenarioSummary[]): string {
  const table = new Table({
    head: ['scenario', 'figure (median of rounds)', 'project', 'baseline', 'project/baseline'],
    colAligns: ['left', 'left', 'right', 'right', 'right'],
    style: process.stdout.isTTY ? { compact: true } : { head: [], border: [], compact: true },
  });
  table.push(...summaryRows(summaries));
  return table.toString();
}

export function roundTripRows(roundTrips: Record<'project' | 'baseline', RoundTrips>): string[][] {
  const { project, baseline } = roundTrips;
  const row = (label: string, p: number, b: number) => [
    label,
    formatNumber(p),
    formatNumber(b),
    formatRatio(b > 0 ? p / b : null),
  ];
  const names = (sent: RoundTrips['purchase']) =>
    Object.entries(sent.byCommand)
      .map(([name, n]) => `${name} ${n}`)
      .join(', ');
  return [
    row(
      'Redis commands sent per purchase',
      project.purchase.perAnswer,
      baseline.purchase.perAnswer,
    ),
    row(
      'Redis commands sent per sold-out answer',
      project.soldOut.perAnswer,
      baseline.soldOut.perAnswer,
    ),
    ['  project, per purchase', names(project.purchase), '', ''],
    ['  baseline, per purchase', names(baseline.purchase), '', ''],
  ];
}

export function roundTripTable(roundTrips: Record<'project' | 'baseline', RoundTrips>): string {
  const table = new Table({
    head: ['sent, not counting inside Lua (MONITOR sample)', 'project', 'baseline', 'ratio'],
    colAligns: ['left', 'right', 'right', 'right'],
    style: process.stdout.isTTY ? { compact: true } : { head: [], border: [], compact: true },
  });
  table.push(...roundTripRows(roundTrips).slice(0, 2));
  return table.toString();
}

/** The same rows as a Markdown table, for the README. */
export function summaryMarkdown(summaries: readonly ScenarioSummary[]): string {
  const lines = [
    '| scenario | figure (median of rounds) | project | baseline | project/baseline |',
    '| --- | --- | ---: | ---: | ---: |',
  ];
  for (const row of summaryRows(summaries)) lines.push(`| ${row.join(' | ')} |`);
  return lines.join('\n');
}

export function mainChart(summaries: readonly ScenarioSummary[]): string {
  return barChart({
    title: 'Answers per second, median of rounds: project vs baseline (same run, same box)',
    yLabel: 'answers/s',
    width: 860,
    groups: summaries.map((s) => {
      const m = s.medians.answersPerSec;
      return {
        label: s.scenario,
        note: m?.ratio === null || m === undefined ? '' : `${m.ratio.toFixed(2)}×`,
        bars: [
          { name: 'project', value: m?.project ?? 0, color: COLORS.project },
          { name: 'baseline', value: m?.baseline ?? 0, color: COLORS.baseline },
        ],
      };
    }),
  });
}

function throughputChart(runs: readonly RunRecord[], scenario: string): string {
  const series: Series[] = runs
    .filter((r) => r.scenario === scenario)
    // Project's rounds, then the baseline's, so the legend reads as two groups.
    .sort((a, b) => a.side.localeCompare(b.side) * -1 || a.round - b.round)
    .map((r) => ({
      name: `${r.side} r${r.round}`,
      color: ROUND_SHADES[r.side][(r.round - 1) % 4] ?? COLORS[r.side],
      dashed: r.side === 'baseline',
      points: r.timeline.map((p) => [p.second, p.answersPerSec] as const),
    }));
  return lineChart({
    title: `${scenario}: answers per second over the load`,
    xLabel: 'seconds since the load started',
    yLabel: 'answers/s',
    series,
  });
}

function latencyChart(summary: ScenarioSummary): string {
  return barChart({
    title: `${summary.scenario}: latency percentiles (ms, median of rounds)`,
    yLabel: 'ms',
    height: 260,
    groups: (['p50Ms', 'p90Ms', 'p99Ms'] as const).map((metric) => ({
      label: metric.replace('Ms', ''),
      note: formatRatio(summary.medians[metric]?.ratio ?? null),
      bars: [
        { name: 'project', value: summary.medians[metric]?.project ?? 0, color: COLORS.project },
        { name: 'baseline', value: summary.medians[metric]?.baseline ?? 0, color: COLORS.baseline },
      ],
    })),
  });
}

export function htmlTable(head: string[], rows: string[][]): string {
  const cell = (tag: string, text: string) => `<${tag}>${escapeXml(text)}</${tag}>`;
  return (
    `<table><thead><tr>${head.map((h) => cell('th', h)).join('')}</tr></thead><tbody>` +
    rows.map((row) => `<tr>${row.map((c) => cell('td', c)).join('')}</tr>`).join('') +
    '</tbody></table>'
  );
}

function runRows(runs: readonly RunRecord[], scenario: string): string[][] {
  return runs
    .filter((r) => r.scenario === scenario)
    .map((r) => [
      String(r.round),
      r.side,
      String(r.answers),
      String(r.accepted),
      formatNumber(r.answersPerSec),
      formatNumber(r.latencyMs.p50),
      formatNumber(r.latencyMs.p99),
      r.drainSeconds === null ? 'timed out' : formatNumber(r.drainSeconds),
      Object.entries(r.non2xx)
        .map(([code, n]) => `${code}: ${n}`)
        .join(', ') || '-',
      r.invariants.ok ? 'OK' : r.invariants.problems.join('; '),
    ]);
}

export interface ReportInput {
  meta: Record<string, unknown>;
  runs: readonly RunRecord[];
  summaries: readonly ScenarioSummary[];
  roundTrips?: Record<'project' | 'baseline', RoundTrips> | undefined;
}

export function buildHtml(input: ReportInput): string {
  const sections = input.summaries
    .map(
      (s) =>
        `<section><h2>${escapeXml(s.scenario)}</h2><p>${escapeXml(s.title)}</p>` +
        htmlTable(
          ['figure (median of rounds)', 'project', 'baseline', 'project/baseline'],
          summaryRows([s]).map((row) => row.slice(1)),
        ) +
        `<div class="charts">${throughputChart(input.runs, s.scenario)}${latencyChart(s)}</div>` +
        '<details><summary>every run</summary>' +
        htmlTable(
          [
            'round',
            'side',
            'answers',
            'accepted',
            'answers/s',
            'p50 ms',
            'p99 ms',
            'drain s',
            'not 202',
            'invariants',
          ],
          runRows(input.runs, s.scenario),
        ) +
        '</details></section>',
    )
    .join('');
  return htmlPage(
    'seckill bench: project vs baseline',
    `<h1>seckill bench: project vs baseline</h1>
<p>The baseline (<code>bench/baseline/</code>) is a plain Fastify service with the same purchase
contract, the same Lua deduct script and the same MySQL writes, but none of the project's
defences${
      input.meta.baseline === 'same-work'
        ? ' beyond the same Redis work per purchase (the per-user and per-address rate limits in one script call, the per-user lock and its release with the outbox entry)'
        : ''
    }. Both ran alternately in one run on the same machine; a ratio is project ÷ baseline
(above 1 is more of it: better for throughput, worse for latency and cost).</p>
${mainChart(input.summaries)}
${
  input.roundTrips === undefined
    ? ''
    : '<h2>Redis round trips</h2><p>Commands each side sent itself (a script call counts once), ' +
      'from a short sample under MONITOR after the rounds.</p>' +
      htmlTable(['', 'project', 'baseline', 'ratio'], roundTripRows(input.roundTrips))
}
<pre>${escapeXml(JSON.stringify(input.meta, null, 2))}</pre>
${sections}`,
  );
}

/** One self-contained page: the body's charts are inline SVG, the style is inline too. */
export function htmlPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeXml(title)}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:right}
td:first-child,th:first-child{text-align:left}.charts svg{max-width:100%;height:auto;margin:.5rem 0}
pre{background:#f6f6f6;padding:.5rem;overflow:auto}
</style></head><body>
${body}
</body></html>
`;
}
