// From one load run's raw answers to the figures the bench reports, and from rounds to medians
// and ratios. Pure, so it is unit-tested.
import type { LoadResult } from '../../scripts/lib/load.js';
import { median, percentile, ratio } from '../../scripts/lib/stats.js';

export interface TimelinePoint {
  /** End of the bucket, in seconds since the load started. */
  second: number;
  answersPerSec: number;
  acceptedPerSec: number;
}

export interface LoadFigures {
  answers: number;
  accepted: number;
  loadSeconds: number;
  answersPerSec: number;
  acceptedPerSec: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  /** Every answer that was not a 202, by "status code" (e.g. "409 SOLD_OUT", "0 ECONNRESET"). */
  non2xx: Record<string, number>;
  timeline: TimelinePoint[];
}

function round(value: number, digits = 2): number {
  return Number(value.toFixed(digits));
}

export function summarizeLoad(results: readonly LoadResult[], elapsedMs: number): LoadFigures {
  const latencies = results.map((r) => r.latencyMs).sort((a, b) => a - b);
  const seconds = elapsedMs / 1000;
  const non2xx: Record<string, number> = {};
  let accepted = 0;
  const buckets: { answers: number; accepted: number }[] = [];
  for (const result of results) {
    const bucket = (buckets[Math.floor(result.at / 1000)] ??= { answers: 0, accepted: 0 });
    bucket.answers++;
    if (result.status === 202) {
      accepted++;
      bucket.accepted++;
    } else {
      const label = `${result.status} ${result.code ?? ''}`.trimEnd();
      non2xx[label] = (non2xx[label] ?? 0) + 1;
    }
  }
  const timeline: TimelinePoint[] = [];
  for (let i = 0; i < buckets.length; i++) {
    const bucket = buckets[i] ?? { answers: 0, accepted: 0 };
    // The last bucket is cut short by the end of the load; a rate over its real length, not 1 s.
    const width = Math.min(1, seconds - i);
    if (width < 0.2) continue;
    timeline.push({
      second: round(i + width),
      answersPerSec: round(bucket.answers / width, 1),
      acceptedPerSec: round(bucket.accepted / width, 1),
    });
  }
  return {
    answers: results.length,
    accepted,
    loadSeconds: round(seconds, 3),
    answersPerSec: seconds > 0 ? round(results.length / seconds, 1) : 0,
    acceptedPerSec: seconds > 0 ? round(accepted / seconds, 1) : 0,
    latencyMs: {
      p50: round(percentile(latencies, 50)),
      p90: round(percentile(latencies, 90)),
      p99: round(percentile(latencies, 99)),
      max: round(latencies.at(-1) ?? 0),
    },
    non2xx,
    timeline,
  };
}

/** Orders per second of the whole pipeline: the answer, the broker and the MySQL write. */
export function pipelineOrdersPerSec(
  accepted: number,
  loadSeconds: number,
  drainSeconds: number,
): number {
  const total = loadSeconds + drainSeconds;
  return total > 0 ? round(accepted / total, 1) : 0;
}

export interface Comparison {
  project: number;
  baseline: number;
  /** project / baseline; null when the baseline's figure is 0 or missing. */
  ratio: number | null;
}

/** Medians over rounds per side and their ratio, for each named metric. */
export function compare(
  project: readonly Record<string, number>[],
  baseline: readonly Record<string, number>[],
): Record<string, Comparison> {
  const names = new Set([...project, ...baseline].flatMap((row) => Object.keys(row)));
  const out: Record<string, Comparison> = {};
  for (const name of names) {
    const p = median(project.map((row) => row[name]).filter((v) => v !== undefined));
    const b = median(baseline.map((row) => row[name]).filter((v) => v !== undefined));
    const r = ratio(p, b);
    out[name] = {
      project: round(p, 3),
      baseline: round(b, 3),
      ratio: r === null ? null : round(r, 3),
    };
  }
  return out;
}
