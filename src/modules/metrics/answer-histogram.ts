import type { Metric, Registry } from 'prom-client';

/** One label set's tallies: a count per bucket (not cumulative), the sum and the count. */
interface Series {
  labels: Record<string, string>;
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * A histogram of every answer's duration by method, route pattern and status, registered in a
 * prom-client registry as one of its metrics (the same exposition: `_bucket{le}`, `_sum`,
 * `_count`). Its own class because it is timed on every answer, the crowd's sold-out 409s
 * included: prom-client's `observe` builds a label key string, checks each label and turns the
 * bucket's bound into a property name on every call, about 5 µs here, 4 % of a sold-out answer;
 * here a series is found through maps keyed by the route pattern (the same string each time),
 * the method and the status code, and its bucket by index.
 */
export class AnswerHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly routes = new Map<string, Map<string, Map<number, Series>>>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    // A metric to the registry as prom-client's own are: it asks for get(), name, help, type.
    registry.registerMetric(this as unknown as Metric);
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.routes.get(route);
    if (byMethod === undefined)
      this.routes.set(route, (byMethod = new Map<string, Map<number, Series>>()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map<number, Series>()));
    let series = byStatus.get(status);
    if (series === undefined) {
      series = {
        labels: { method, route, status: String(status) },
        buckets: new Array<number>(this.bounds.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      byStatus.set(status, series);
    }
    series.buckets[this.bucketOf(seconds)]++;
    series.sum += seconds;
    series.count++;
  }

  /** The first bound at or above `seconds` (the last slot: above every bound, +Inf only). */
  private bucketOf(seconds: number): number {
    let low = 0;
    let high = this.bounds.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.bounds[middle] >= seconds) high = middle;
      else low = middle + 1;
    }
    return low;
  }

  /** prom-client's metric shape: every series' cumulative buckets, then its sum and count. */
  async get(): Promise<{
    name: string;
    help: string;
    type: 'histogram';
    aggregator: 'sum';
    values: { metricName: string; labels: Record<string, string | number>; value: number }[];
  }> {
    const values: {
      metricName: string;
      labels: Record<string, string | number>;
      value: number;
    }[] = [];
    for (const byMethod of this.routes.values()) {
      for (const byStatus of byMethod.values()) {
        for (const series of byStatus.values()) {
          let cumulative = 0;
          this.bounds.forEach((le, index) => {
            cumulative += series.buckets[index];
            values.push({
              metricName: `${this.name}_bucket`,
              labels: { le, ...series.labels },
              value: cumulative,
            });
          });
          values.push(
            {
              metricName: `${this.name}_bucket`,
              labels: { le: '+Inf', ...series.labels },
              value: series.count,
            },
            { metricName: `${this.name}_sum`, labels: series.labels, value: series.sum },
            { metricName: `${this.name}_count`, labels: series.labels, value: series.count },
          );
        }
      }
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    };
  }

  reset(): void {
    this.routes.clear();
  }
}
