// Charts as plain SVG strings, so that the report is one self-contained file that needs no
// browser, no network and no charting library to be made or read.

export interface Series {
  name: string;
  color: string;
  points: readonly (readonly [number, number])[];
  /** Dashed, for the second side of a comparison when colours alone are not enough. */
  dashed?: boolean;
}

/** A span of the x axis to mark behind the lines (a fault while it lasted), in a lane of its own. */
export interface Band {
  from: number;
  to: number;
  label: string;
  color: string;
  /** Overlapping bands go in different lanes: thin bars stacked under the top of the plot. */
  lane: number;
}

export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly Series[];
  bands?: readonly Band[];
  width?: number;
  height?: number;
}

export interface Bar {
  name: string;
  value: number;
  color: string;
}

export interface BarGroup {
  label: string;
  bars: readonly Bar[];
  /** Shown above the group, e.g. the ratio of its bars. */
  note?: string;
}

export interface BarChartOptions {
  title: string;
  yLabel: string;
  groups: readonly BarGroup[];
  width?: number;
  height?: number;
}

const MARGIN = { top: 58, right: 20, bottom: 56, left: 70 };
const FONT = 'font-family="system-ui, sans-serif" font-size="12"';

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/** Round tick values (1, 2 or 5 times a power of ten) from 0 to at least `max`. */
export function niceTicks(max: number, count = 5): number[] {
  if (!Number.isFinite(max) || max <= 0) return [0, 1];
  const rough = max / count;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
  const ticks: number[] = [];
  for (let value = 0; value < max + step; value += step) {
    ticks.push(Number(value.toPrecision(12)));
    if (value >= max) break;
  }
  return ticks;
}

/** 12,345 → "12.3k": tick labels stay short. */
export function shortNumber(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 1e6) return `${+(value / 1e6).toFixed(1)}M`;
  if (abs >= 1e4) return `${+(value / 1e3).toFixed(0)}k`;
  if (abs >= 1e3) return `${+(value / 1e3).toFixed(1)}k`;
  return `${+value.toFixed(abs < 10 ? 2 : 0)}`;
}

function frame(width: number, height: number, title: string, body: string): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" ${FONT}>` +
    `<rect width="${width}" height="${height}" fill="#fff"/>` +
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="600">${escapeXml(title)}</text>` +
    body +
    '</svg>'
  );
}

function yAxis(ticks: number[], y: (v: number) => number, x0: number, x1: number, label: string) {
  const lines = ticks
    .map(
      (t) =>
        `<line x1="${x0}" x2="${x1}" y1="${y(t)}" y2="${y(t)}" stroke="#e5e5e5"/>` +
        `<text x="${x0 - 6}" y="${y(t) + 4}" text-anchor="end">${shortNumber(t)}</text>`,
    )
    .join('');
  const mid = (y(ticks[0] ?? 0) + y(ticks.at(-1) ?? 1)) / 2;
  return (
    lines +
    `<text transform="translate(16 ${mid}) rotate(-90)" text-anchor="middle">${escapeXml(label)}</text>`
  );
}

/** One row under the title, so that it never hides a line or a bar. */
function legend(items: readonly { name: string; color: string; dashed?: boolean }[], x: number) {
  let offset = x;
  return items
    .map((item) => {
      const dash = item.dashed ? ' stroke-dasharray="5 3"' : '';
      const out =
        `<line x1="${offset}" x2="${offset + 18}" y1="38" y2="38" stroke="${item.color}" stroke-width="3"${dash}/>` +
        `<text x="${offset + 24}" y="42">${escapeXml(item.name)}</text>`;
      offset += 24 + Math.ceil(item.name.length * 6.5) + 12;
      return out;
    })
    .join('');
}

export function lineChart(options: LineChartOptions): string {
  const width = options.width ?? 720;
  const height = options.height ?? 300;
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const all = options.series.flatMap((s) => s.points);
  const bands = options.bands ?? [];
  const xMax = Math.max(1, ...all.map(([x]) => x), ...bands.map((b) => b.to));
  const yTicks = niceTicks(Math.max(0, ...all.map(([, y]) => y)));
  const yMax = yTicks.at(-1) ?? 1;
  const x = (v: number) => +(MARGIN.left + (v / xMax) * plotW).toFixed(1);
  const y = (v: number) => +(MARGIN.top + plotH - (v / yMax) * plotH).toFixed(1);
  const xTicks = niceTicks(xMax, 8).filter((t) => t <= xMax);
  const xAxis =
    xTicks
      .map(
        (t) =>
          `<text x="${x(t)}" y="${MARGIN.top + plotH + 16}" text-anchor="middle">${shortNumber(t)}</text>`,
      )
      .join('') +
    `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${y(0)}" y2="${y(0)}" stroke="#999"/>` +
    `<text x="${MARGIN.left + plotW / 2}" y="${height - 12}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`;
  const lines = options.series
    .filter((s) => s.points.length > 0)
    .map((s) => {
      const d = s.points.map(([px, py], i) => `${i === 0 ? 'M' : 'L'}${x(px)} ${y(py)}`).join('');
      const dash = s.dashed ? ' stroke-dasharray="5 3"' : '';
      return `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${dash}/>`;
    })
    .join('');
  const marks = bands
    .map((b) => {
      const [bx, bw] = [x(b.from), Math.max(1, +(x(b.to) - x(b.from)).toFixed(1))];
      const title = `<title>${escapeXml(b.label)}</title>`;
      return (
        `<rect x="${bx}" y="${MARGIN.top}" width="${bw}" height="${plotH}" fill="${b.color}" fill-opacity="0.08"/>` +
        `<rect x="${bx}" y="${MARGIN.top + b.lane * 7}" width="${bw}" height="5" fill="${b.color}">${title}</rect>`
      );
    })
    .join('');
  return frame(
    width,
    height,
    options.title,
    marks +
      yAxis(yTicks, y, MARGIN.left, MARGIN.left + plotW, options.yLabel) +
      xAxis +
      lines +
      legend(options.series, MARGIN.left),
  );
}

export function barChart(options: BarChartOptions): string {
  const width = options.width ?? 720;
  const height = options.height ?? 320;
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const values = options.groups.flatMap((g) => g.bars.map((b) => b.value));
  const yTicks = niceTicks(Math.max(0, ...values.filter(Number.isFinite)));
  const yMax = yTicks.at(-1) ?? 1;
  const y = (v: number) => +(MARGIN.top + plotH - (v / yMax) * plotH).toFixed(1);
  const groupW = plotW / Math.max(1, options.groups.length);
  const bars = options.groups
    .map((group, gi) => {
      const barW = (groupW * 0.7) / Math.max(1, group.bars.length);
      const gx = MARGIN.left + gi * groupW + groupW * 0.15;
      const rects = group.bars
        .map((bar, bi) => {
          const value = Number.isFinite(bar.value) ? bar.value : 0;
          const bx = +(gx + bi * barW).toFixed(1);
          return (
            `<rect x="${bx}" y="${y(value)}" width="${+(barW - 2).toFixed(1)}" height="${+(y(0) - y(value)).toFixed(1)}" fill="${bar.color}"><title>${escapeXml(`${bar.name}: ${value}`)}</title></rect>` +
            `<text x="${+(bx + barW / 2).toFixed(1)}" y="${y(value) - 3}" text-anchor="middle" font-size="10">${shortNumber(value)}</text>`
          );
        })
        .join('');
      const cx = +(MARGIN.left + gi * groupW + groupW / 2).toFixed(1);
      const note =
        group.note === undefined
          ? ''
          : `<text x="${cx}" y="${MARGIN.top + plotH + 30}" text-anchor="middle" fill="#555">${escapeXml(group.note)}</text>`;
      return (
        rects +
        `<text x="${cx}" y="${MARGIN.top + plotH + 16}" text-anchor="middle">${escapeXml(group.label)}</text>` +
        note
      );
    })
    .join('');
  const names = new Map<string, string>();
  for (const group of options.groups) for (const bar of group.bars) names.set(bar.name, bar.color);
  return frame(
    width,
    height,
    options.title,
    yAxis(yTicks, y, MARGIN.left, MARGIN.left + plotW, options.yLabel) +
      `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${y(0)}" y2="${y(0)}" stroke="#999"/>` +
      bars +
      legend(
        [...names].map(([name, color]) => ({ name, color })),
        MARGIN.left,
      ),
  );
}
