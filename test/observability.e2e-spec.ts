import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { dashboardData, drawDashboard, type DashboardData } from '../scripts/grafana-render.js';
import { ReconcileChecksService } from '../src/modules/reconcile/reconcile-checks.service.js';
import { bearer, createSale, useApp, waitFor } from './support/harness.js';
import { baseUrlOf } from './support/sse.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const RULES = join(root, 'deploy/prometheus/seckill.rules.yml');
const DASHBOARD = join(root, 'deploy/grafana/dashboards/seckill.json');
/** Below the ephemeral range, as every port a test listens on. */
const PROMETHEUS_PORT = 29_090;

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** Every panel's expressions (rows hold theirs in `panels`), with the panel's title. */
function panelExpressions(dashboard: { panels: Panel[] }): { title: string; expr: string }[] {
  const all: { title: string; expr: string }[] = [];
  const visit = (panels: Panel[]) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        if (target.expr) all.push({ title: panel.title ?? '?', expr: target.expr });
      }
      visit(panel.panels ?? []);
    }
  };
  visit(dashboard.panels);
  return all;
}

/** The metric names an expression reads: the service's, Node's, and the recording rules'. */
function metricNames(expr: string): string[] {
  return [...new Set(expr.match(/\b(?:seckill|nodejs|process)_[a-z0-9_]+|\bseckill:[a-z0-9_:]+/g))];
}

/** Prometheus's HTTP API, or why it refused. */
async function api<T>(path: string): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${PROMETHEUS_PORT}/api/v1/${path}`);
  const body = (await response.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${path}: ${body.error}`);
  return body.data;
}

const query = (expr: string) =>
  api<{ result: unknown[] }>(`query?query=${encodeURIComponent(expr)}`).then((d) => d.result);

describe('the Grafana dashboard and the Prometheus rules, against a real Prometheus scraping the app', () => {
  const t = useApp({ THROTTLE_ENABLED: 'false', QUEUE_TICK_MS: '50', SOLD_OUT_MEMO_MS: '0' });
  let prometheus: ChildProcess | undefined;
  let dataDir: string | undefined;

  afterAll(() => {
    prometheus?.kill('SIGKILL');
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('should answer every panel expression with series, evaluate every rule, and name only metrics the app exports', async () => {
    // Prometheus first, so that the sale below happens while it scrapes: its writes and
    // admissions are in the rates and quantiles the panels draw.
    dataDir = mkdtempSync(join(tmpdir(), 'seckill-prometheus-'));
    // The rules as they are, evaluated every second rather than every 30 s (the group's
    // interval): the test lasts less than two of those.
    const rules = join(dataDir, 'seckill.rules.yml');
    writeFileSync(rules, readFileSync(RULES, 'utf8').replace(/^(\s+interval:) \S+$/gm, '$1 1s'));
    writeFileSync(
      join(dataDir, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        `rule_files: ['${rules}']`,
        'scrape_configs:',
        '  - job_name: seckill',
        `    static_configs: [{ targets: ['${new URL(baseUrlOf(t.app)).host}'] }]`,
      ].join('\n'),
    );
    const binary = execFileSync('bash', [join(root, 'scripts/prometheus.sh'), 'prometheus'], {
      encoding: 'utf8',
    }).trim();
    prometheus = spawn(
      binary,
      [
        `--config.file=${join(dataDir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dataDir, 'data')}`,
        `--web.listen-address=127.0.0.1:${PROMETHEUS_PORT}`,
      ],
      { stdio: 'ignore' },
    );
    await waitFor(
      async () => {
        const up = await query('up{job="seckill"} == 1').catch(() => []);
        return up.length === 1;
      },
      { timeoutMs: 30_000, what: 'Prometheus to scrape the app' },
    );

    // A queue sale carries every figure the dashboard shows: its room, its purchases, their
    // orders, the backlog on their way.
    const stock = 4;
    const goodsId = await createSale(t.http, {
      stock,
      startsInMs: 1_000,
      queue: { admitPerSecond: 1_000, admissionTtlSeconds: 60 },
    });
    const buyers = Array.from({ length: 10 }, (_, i) => 7_700 + i);
    const joinQueue = (userId: number) =>
      t.http.post(`/api/v1/seckill/${goodsId}/queue`).set('Authorization', bearer(userId));
    const buy = (userId: number) =>
      t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    for (const userId of buyers) await joinQueue(userId).expect(200);
    const admitted = await waitFor(
      async () => {
        const states = await Promise.all(
          buyers.map(async (userId) => ({
            userId,
            state: (
              await t.http
                .get(`/api/v1/seckill/${goodsId}/queue`)
                .set('Authorization', bearer(userId))
            ).body.state as string,
          })),
        );
        const ids = states.filter((s) => s.state === 'ADMITTED').map((s) => s.userId);
        return ids.length >= stock ? ids : null;
      },
      { what: 'buyers admitted' },
    );
    for (const userId of admitted.slice(0, stock)) await buy(userId).expect(202);
    await t.app.get(ReconcileChecksService).checkActiveSales();

    // Answers keep coming while Prometheus scrapes (a rate needs two samples): the crowd that
    // is told it bought already, or is not admitted.
    let loading = true;
    const load = (async () => {
      for (let i = 0; loading; i++) await buy(buyers[i % buyers.length]);
    })();
    try {
      const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
      const panels = panelExpressions(dashboard).map(({ title, expr }) => ({
        title,
        expr: expr
          .replaceAll('$__rate_interval', '1m')
          .replaceAll('$goods', String(goodsId))
          .replaceAll('$instance', '.*'),
      }));
      expect(panels.length).toBeGreaterThan(10);
      // Every panel has data once a few scrapes are in.
      let empty: string[] = [];
      await waitFor(
        async () => {
          empty = [];
          for (const panel of panels) {
            const result = await query(panel.expr).catch((e: Error) => [e]);
            if (result.length === 0 || result[0] instanceof Error) {
              empty.push(`${panel.title}: ${panel.expr}`);
            }
          }
          return empty.length === 0;
        },
        { timeoutMs: 45_000, what: 'every panel to have series' },
      ).catch(() => undefined);
      expect(empty).toEqual([]);

      // Every rule evaluated without error; every recording rule has series.
      interface Rule {
        name: string;
        type: 'recording' | 'alerting';
        query: string;
        health: string;
        lastError?: string;
      }
      const rules = await waitFor(
        async () => {
          const groups = (await api<{ groups: { rules: Rule[] }[] }>('rules')).groups;
          const all = groups.flatMap((group) => group.rules);
          return all.length > 0 && all.every((rule) => rule.health !== 'unknown') ? all : null;
        },
        { timeoutMs: 30_000, what: 'every rule evaluated' },
      );
      expect(
        rules.filter((rule) => rule.health !== 'ok').map((r) => `${r.name}: ${r.lastError}`),
      ).toEqual([]);
      const records = rules.filter((rule) => rule.type === 'recording');
      expect(records.length).toBeGreaterThan(0);
      for (const record of records)
        expect((await query(record.name)).length, record.name).toBeGreaterThan(0);

      // No expression names a metric the app does not export: each is a series Prometheus holds,
      // or a family the scrape described (a counter no event has touched yet has no series).
      const withSeries = new Set(await api<string[]>('label/__name__/values'));
      const described = new Set(Object.keys(await api<Record<string, unknown>>('metadata')));
      const known = (name: string) =>
        withSeries.has(name) ||
        described.has(name) ||
        described.has(name.replace(/_(bucket|count|sum|total)$/, '')) ||
        records.some((record) => record.name === name);
      const unknown = [...rules.map((rule) => rule.query), ...panels.map((panel) => panel.expr)]
        .flatMap(metricNames)
        .filter((name) => !known(name));
      expect([...new Set(unknown)]).toEqual([]);

      // The dashboard drawn from the same queries (test-artifacts/, git-ignored), once every
      // panel has a line of two points or a value (a series born a second ago has one point).
      let data: DashboardData | undefined;
      await waitFor(
        async () => {
          data = await dashboardData({
            prometheusUrl: `http://127.0.0.1:${PROMETHEUS_PORT}`,
            goods: goodsId,
            minutes: 1,
          });
          return data.empty.length === 0;
        },
        { timeoutMs: 30_000, intervalMs: 1_000, what: 'every panel drawn' },
      ).catch(() => undefined);
      expect(data?.empty).toEqual([]);
      mkdirSync(join(root, 'test-artifacts'), { recursive: true });
      await drawDashboard(data!, join(root, 'test-artifacts/grafana-dashboard.png'));
    } finally {
      loading = false;
      await load;
    }
  });
});
