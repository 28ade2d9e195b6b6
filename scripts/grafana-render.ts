// The Grafana dashboard (deploy/grafana/dashboards/seckill.json) drawn without Grafana: every
// panel's queries asked of a Prometheus (query_range), each panel drawn as an SVG chart (or a stat's
// last values) where its gridPos puts it, and the page screenshotted in headless Chromium. Grafana
// itself cannot be had on this machine (neither Debian nor npm ships it); the queries, the layout,
// the legends and the units are the dashboard's own, so a panel that is empty here is empty there.
//
//   npx tsx scripts/grafana-render.ts --prometheus http://127.0.0.1:9090 --goods 1 \
//     [--minutes 10] [--out docs/grafana-dashboard.png]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { escapeXml, lineChart, shortNumber, type Series } from '../bench/lib/svg.js';

const DASHBOARD = fileURLToPath(
  new URL('../deploy/grafana/dashboards/seckill.json', import.meta.url),
);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Grafana's grid: 24 columns; a height unit is 30 px. */
const PAGE_WIDTH = 1_680;
const ROW_UNIT = 30;
const COLORS = [
  '#7eb26d',
  '#eab839',
  '#6ed0e0',
  '#ef843c',
  '#e24d42',
  '#1f78c1',
  '#ba43a9',
  '#705da0',
];

interface Target {
  expr?: string;
  legendFormat?: string;
}

interface Panel {
  type: string;
  title?: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Target[];
  fieldConfig?: { defaults?: { unit?: string } };
  panels?: Panel[];
}

export interface RenderOptions {
  prometheusUrl: string;
  /** Grafana's variables: the sale shown, and the instances (a regex; `.*` for all). */
  goods: number;
  instance?: string;
  /** The time range drawn, ending now. */
  minutes: number;
}

type Matrix = { metric: Record<string, string>; values: [number, string][] }[];

function substitute(text: string, options: RenderOptions): string {
  return text
    .replaceAll('$__rate_interval', '1m')
    .replaceAll('$goods', String(options.goods))
    .replaceAll('$instance', options.instance ?? '.*');
}

/** Grafana's `{{label}}` legends. */
function legendOf(format: string | undefined, metric: Record<string, string>): string {
  if (!format) return JSON.stringify(metric);
  return format.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, label: string) => metric[label] ?? '');
}

/** The axis label for Grafana's unit ids the dashboard uses. */
function unitLabel(unit: string | undefined): string {
  return (
    {
      s: 'seconds',
      reqps: 'answers/s',
      ops: 'per second',
      percentunit: 'share',
      bytes: 'bytes',
      short: '',
    }[unit ?? 'short'] ?? (unit as string)
  );
}

async function range(options: RenderOptions, expr: string, start: number, end: number) {
  const step = Math.max(1, Math.round((end - start) / 240));
  const url =
    `${options.prometheusUrl}/api/v1/query_range?query=${encodeURIComponent(expr)}` +
    `&start=${start}&end=${end}&step=${step}`;
  const body = (await (await fetch(url)).json()) as {
    status: string;
    data?: { result: Matrix };
    error?: string;
  };
  if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
  return body.data!.result;
}

/** A panel's series over the time range, as its queries answer them. */
export interface PanelData {
  panel: Panel;
  title: string;
  series: (Series & { last: number })[];
}

/** Every panel's data (rows included, as headings), and the panels with nothing to draw. */
export interface DashboardData {
  title: string;
  panels: PanelData[];
  /** Panels with no line of two points or more (a stat: no value). */
  empty: string[];
  options: RenderOptions;
}

/** Asks Prometheus for every panel's series over the last `minutes`. */
export async function dashboardData(options: RenderOptions): Promise<DashboardData> {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    title: string;
    panels: Panel[];
  };
  const end = Math.floor(Date.now() / 1_000);
  const start = end - options.minutes * 60;
  const panels: PanelData[] = [];
  const empty: string[] = [];
  for (const panel of dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])])) {
    const series: PanelData['series'] = [];
    for (const target of panel.targets ?? []) {
      if (!target.expr) continue;
      for (const result of await range(options, substitute(target.expr, options), start, end)) {
        series.push({
          name: legendOf(target.legendFormat, result.metric),
          color: COLORS[series.length % COLORS.length],
          points: result.values
            .map(([t, v]) => [t - start, Number(v)] as const)
            .filter(([, v]) => Number.isFinite(v)),
          last: Number(result.values.at(-1)?.[1] ?? NaN),
        });
      }
    }
    const drawable =
      panel.type === 'stat'
        ? series.some((s) => Number.isFinite(s.last))
        : series.some((s) => s.points.length >= 2);
    if (panel.type !== 'row' && !drawable) empty.push(panel.title ?? '?');
    panels.push({ panel, title: substitute(panel.title ?? '', options), series });
  }
  return { title: dashboard.title, panels, empty, options };
}

function drawPanel({ panel, title, series }: PanelData, minutes: number): string {
  const width = Math.round((panel.gridPos.w / 24) * PAGE_WIDTH) - 8;
  const height = panel.gridPos.h * ROW_UNIT - 8;
  if (panel.type === 'stat') {
    const cells = series
      .map(
        (s) =>
          `<div class="stat"><b>${shortNumber(s.last)}</b><span>${escapeXml(s.name)}</span></div>`,
      )
      .join('');
    return `<div class="panel" style="width:${width}px;height:${height}px"><h3>${escapeXml(title)}</h3>${cells || '<i>no data</i>'}</div>`;
  }
  return lineChart({
    title,
    xLabel: `seconds (last ${minutes} min)`,
    yLabel: unitLabel(panel.fieldConfig?.defaults?.unit),
    series,
    width,
    height,
  });
}

/** Lays the panels out as their gridPos says and screenshots the page into `path` (PNG). */
export async function drawDashboard(data: DashboardData, path: string): Promise<void> {
  const blocks = data.panels.map((panelData) => {
    const { x, y } = panelData.panel.gridPos;
    const style = `left:${(x / 24) * PAGE_WIDTH}px;top:${y * ROW_UNIT + 40}px`;
    return panelData.panel.type === 'row'
      ? `<h2 style="${style}">${escapeXml(panelData.title)}</h2>`
      : `<div class="cell" style="${style}">${drawPanel(panelData, data.options.minutes)}</div>`;
  });
  const bottom =
    Math.max(...data.panels.map(({ panel }) => panel.gridPos.y + panel.gridPos.h)) * ROW_UNIT + 60;
  const html = `<!doctype html><html><head><meta charset="utf-8"><style>
    body { margin: 0; background: #f4f5f5; font: 13px system-ui, sans-serif; }
    header { position: absolute; left: 8px; top: 6px; font-size: 18px; font-weight: 600; }
    h2 { position: absolute; margin: 0; padding: 6px 4px; font-size: 15px; }
    .cell { position: absolute; }
    .panel { background: #fff; box-sizing: border-box; padding: 6px 10px; }
    .panel h3 { margin: 4px 0 10px; font-size: 15px; text-align: center; }
    .stat { display: inline-block; margin: 0 18px 8px 0; }
    .stat b { display: block; font-size: 30px; color: #37872d; }
  </style></head><body style="width:${PAGE_WIDTH}px;height:${bottom}px">
    <header>${escapeXml(data.title)} · sale ${data.options.goods} · last ${data.options.minutes} min ·
      drawn from Prometheus by scripts/grafana-render.ts</header>
    ${blocks.join('\n')}
  </body></html>`;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: PAGE_WIDTH, height: 900 } });
    await page.setContent(html);
    await page.screenshot({ path, fullPage: true });
  } finally {
    await browser.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      prometheus: { type: 'string', default: 'http://127.0.0.1:9090' },
      goods: { type: 'string' },
      instance: { type: 'string', default: '.*' },
      minutes: { type: 'string', default: '10' },
      out: { type: 'string', default: 'grafana-dashboard.png' },
    },
  });
  if (!values.goods) {
    console.error(
      'usage: grafana-render.ts --goods <id> [--prometheus URL] [--minutes N] [--out FILE.png]',
    );
    process.exit(2);
  }
  const data = await dashboardData({
    prometheusUrl: values.prometheus,
    goods: Number(values.goods),
    instance: values.instance,
    minutes: Number(values.minutes),
  });
  await drawDashboard(data, values.out);
  const empty = data.empty.length > 0 ? ` (no data: ${data.empty.join(', ')})` : '';
  console.log(`drawn: ${values.out}${empty}`);
}
