import { describe, expect, it } from 'vitest';

import { packageOf, PURCHASE_LAYERS, summarizeProfile } from './profile.js';
import { formatNumber, mainChart, summaryMarkdown, type ScenarioSummary } from './report.js';

describe('profile', () => {
  it('names the package a frame belongs to', () => {
    expect(packageOf('file:///w/node_modules/ioredis/built/Redis.js', 'sendCommand')).toBe(
      'ioredis',
    );
    expect(packageOf('file:///w/node_modules/@nestjs/core/router.js', 'x')).toBe('@nestjs/core');
    expect(packageOf('node:net', 'write')).toBe('node internals');
    expect(packageOf('file:///w/dist/modules/seckill/purchase.service.js', 'f')).toBe(
      'app: dist/modules/seckill/purchase.service.js',
    );
    expect(packageOf('', '(garbage collector)')).toBe('(garbage collector)');
    expect(packageOf('', 'writeUtf8String')).toBe('(native)');
  });

  it('sums self time by package, leaving idle out', () => {
    const frame = (id: number, functionName: string, url: string) => ({
      id,
      callFrame: { functionName, url, lineNumber: 0 },
    });
    const summary = summarizeProfile({
      nodes: [
        frame(1, '(idle)', ''),
        frame(2, 'sendCommand', 'file:///w/node_modules/ioredis/a.js'),
        frame(3, 'write', 'node:net'),
      ],
      startTime: 0,
      endTime: 2_000_000,
      samples: [1, 1, 2, 2, 2, 3],
    });
    expect(summary.seconds).toBe(2);
    expect(summary.byPackage).toEqual([
      { name: 'ioredis', percent: 75 },
      { name: 'node internals', percent: 25 },
    ]);
  });

  it('puts a sample in the innermost layer on its stack, with the library code it calls, else in its package', () => {
    const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
      id,
      callFrame: { functionName, url, lineNumber: 0 },
      children,
    });
    const summary = summarizeProfile(
      {
        nodes: [
          // A hook (its file owns only resolveClient) runs the token check and Fastify inside it.
          frame(1, '(anonymous)', 'file:///w/dist/common/http/client-address.js', [2, 3, 5]),
          frame(2, 'resolveClient', 'file:///w/dist/common/http/client-address.js'),
          frame(3, 'authenticate', 'file:///w/dist/modules/auth/authenticator.js', [4]),
          frame(4, 'verify', 'file:///w/node_modules/jws/lib/verify.js'),
          frame(5, 'route', 'file:///w/node_modules/fastify/lib/route.js', [6]),
          frame(6, 'writev', ''),
          frame(7, '(garbage collector)', ''),
        ],
        startTime: 0,
        endTime: 1_000_000,
        samples: [2, 4, 4, 3, 6, 6, 6, 7, 1, 1],
      },
      15,
      PURCHASE_LAYERS,
    );
    expect(summary.byLayer).toEqual(
      [
        { name: 'token check (JWT)', percent: 30 },
        { name: 'Fastify', percent: 30 },
        { name: 'client address', percent: 10 },
        { name: '(garbage collector)', percent: 10 },
        { name: 'node (sockets, timers, startup)', percent: 20 },
      ].sort((a, b) => b.percent - a.percent),
    );
  });
});

describe('report', () => {
  const summaries: ScenarioSummary[] = [
    {
      scenario: 'soldout',
      title: 'sold out',
      medians: {
        answersPerSec: { project: 2_000, baseline: 5_000, ratio: 0.4 },
        p50Ms: { project: 40, baseline: 16, ratio: 2.5 },
        redisCmdsPerAnswer: { project: 23, baseline: 7, ratio: null },
      },
    },
  ];

  it('formats figures for people: thousands separated, no Infinity', () => {
    expect(formatNumber(12_345.6)).toBe('12,346');
    expect(formatNumber(42.25)).toBe('42.3');
    expect(formatNumber(0.518)).toBe('0.52');
    expect(formatNumber(null)).toBe('n/a');
    expect(formatNumber(Infinity)).toBe('n/a');
  });

  it('writes the medians as a Markdown table with ratios', () => {
    expect(summaryMarkdown(summaries).split('\n')).toEqual([
      '| scenario | figure (median of rounds) | project | baseline | project/baseline |',
      '| --- | --- | ---: | ---: | ---: |',
      '| soldout | answers/s | 2,000 | 5,000 | 0.40× |',
      '| soldout | p50 latency (ms) | 40.0 | 16.0 | 2.50× |',
      '| soldout | Redis cmds per answer | 23.0 | 7.00 | n/a |',
    ]);
  });

  it('labels each scenario of the main chart with its ratio', () => {
    expect(mainChart(summaries)).toContain('>0.40×<');
  });
});
