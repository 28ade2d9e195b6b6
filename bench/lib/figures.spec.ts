import { describe, expect, it } from 'vitest';

import { median, percentile, ratio } from '../../scripts/lib/stats.js';
import { compare, pipelineOrdersPerSec, summarizeLoad } from './figures.js';
import { cpuSeconds, diffCommands, parseCommandStats } from './probes.js';
import { barChart, lineChart, niceTicks, shortNumber } from './svg.js';

describe('stats', () => {
  it('takes nearest-rank percentiles of sorted samples', () => {
    const samples = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(samples, 50)).toBe(50);
    expect(percentile(samples, 99)).toBe(99);
    expect(percentile(samples, 100)).toBe(100);
    expect(percentile([7], 1)).toBe(7);
    expect(percentile([], 50)).toBe(0);
  });

  it('takes the median of odd and even counts, NaN of none', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('never answers Infinity for a ratio', () => {
    expect(ratio(1, 2)).toBe(0.5);
    expect(ratio(1, 0)).toBeNull();
    expect(ratio(NaN, 2)).toBeNull();
  });
});

describe('figures', () => {
  const result = (status: number, at: number, code?: string) => ({
    status,
    code,
    latencyMs: at / 10,
    at,
  });

  it('counts answers, purchases and refusals by code, and rates per second over time', () => {
    const figures = summarizeLoad(
      [
        result(202, 100),
        result(202, 900),
        result(409, 1_100, 'SOLD_OUT'),
        result(0, 1_200, 'ECONNRESET'),
      ],
      1_500,
    );
    expect(figures).toMatchObject({
      answers: 4,
      accepted: 2,
      loadSeconds: 1.5,
      non2xx: { '409 SOLD_OUT': 1, '0 ECONNRESET': 1 },
    });
    // The last bucket is half a second long: 2 answers in it are 4 per second.
    expect(figures.timeline).toEqual([
      { second: 1, answersPerSec: 2, acceptedPerSec: 2 },
      { second: 1.5, answersPerSec: 4, acceptedPerSec: 0 },
    ]);
  });

  it('divides purchases by load plus drain for the whole pipeline', () => {
    expect(pipelineOrdersPerSec(1_000, 4, 1)).toBe(200);
    expect(pipelineOrdersPerSec(0, 0, 0)).toBe(0);
  });

  it('compares medians over rounds, project over baseline', () => {
    const out = compare([{ rps: 10 }, { rps: 30 }, { rps: 20 }], [{ rps: 40 }, { rps: 40 }]);
    expect(out.rps).toEqual({ project: 20, baseline: 40, ratio: 0.5 });
  });
});

describe('probes', () => {
  it('reads CPU seconds after the command name, whatever it holds', () => {
    const fields = Array.from({ length: 20 }, (_, i) => String(i));
    fields[11] = '250';
    fields[12] = '50';
    expect(cpuSeconds(`42 (node a) b) ${fields.join(' ')}`)).toBe(3);
  });

  it('diffs INFO commandstats without the probes own INFO calls', () => {
    const before = parseCommandStats(
      'cmdstat_get:calls=5,usec=1\r\ncmdstat_info:calls=1,usec=1\r\n',
    );
    const after = parseCommandStats(
      'cmdstat_get:calls=8,usec=1\r\ncmdstat_evalsha:calls=2,usec=9\r\ncmdstat_info:calls=3,usec=1\r\n',
    );
    expect(diffCommands(before, after)).toEqual({ get: 3, evalsha: 2 });
  });
});

describe('svg', () => {
  it('picks round ticks that reach the maximum', () => {
    expect(niceTicks(93)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(niceTicks(0)).toEqual([0, 1]);
    expect(shortNumber(12_345)).toBe('12k');
    expect(shortNumber(1_500)).toBe('1.5k');
  });

  it('draws self-contained charts with escaped text and no external references', () => {
    const line = lineChart({
      title: 'a < b',
      xLabel: 's',
      yLabel: 'rps',
      series: [
        {
          name: 'p & q',
          color: '#000',
          points: [
            [0, 1],
            [1, 2],
          ],
        },
      ],
    });
    const bars = barChart({
      title: 't',
      yLabel: 'y',
      groups: [{ label: 'g', note: '0.5×', bars: [{ name: 'x', value: 3, color: '#111' }] }],
    });
    for (const svg of [line, bars]) {
      expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
      expect(svg).not.toMatch(/href=|<script/);
    }
    expect(line).toContain('a &lt; b');
    expect(line).toContain('p &amp; q');
    expect(line).toMatch(/<path d="M[\d.]+ [\d.]+L/);
    expect(bars).toContain('<rect');
  });
});
