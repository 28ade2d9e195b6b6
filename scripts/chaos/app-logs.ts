// What the app instances logged that the checker needs: when MySQL was trusted to hold every
// order accepted before (a sale opened to the database fallback, an order barrier passed for a
// rebuild); the stores keep no trace of either once the run is quiet.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { OrdersWrittenPoint } from './checker.js';

const OPENED = /^sale opened to the database fallback: goods=(\d+)/;
const PASSED = /^order barrier passed: id=\S+ (\d+) ms after it opened/;

/** The points in one instance's log (JSON lines, LOG_FORMAT=json). */
export function writtenPointsIn(log: string, instance: string): OrdersWrittenPoint[] {
  const points: OrdersWrittenPoint[] = [];
  for (const line of log.split('\n')) {
    if (!line.includes('database fallback') && !line.includes('order barrier passed')) continue;
    let event: { time?: unknown; msg?: unknown };
    try {
      event = JSON.parse(line) as typeof event;
    } catch {
      continue;
    }
    const at = typeof event.time === 'string' ? Date.parse(event.time) : NaN;
    const msg = typeof event.msg === 'string' ? event.msg : '';
    if (!Number.isFinite(at)) continue;
    const opened = OPENED.exec(msg);
    if (opened) {
      const goodsId = Number(opened[1]);
      points.push({ kind: 'fallback', instance, goodsId, coversEpochMs: at, atEpochMs: at });
    }
    const passed = PASSED.exec(msg);
    if (passed) {
      const coversEpochMs = at - Number(passed[1]);
      points.push({ kind: 'rebuild', instance, coversEpochMs, atEpochMs: at });
    }
  }
  return points;
}

/** Every instance's points, from the run's logs (`<instance>.<start>.log`). */
export function readWrittenPoints(logDir: string): OrdersWrittenPoint[] {
  return readdirSync(logDir)
    .filter((file) => file.endsWith('.log'))
    .flatMap((file) =>
      writtenPointsIn(readFileSync(join(logDir, file), 'utf8'), file.replace(/\.\d+\.log$/, '')),
    )
    .sort((a, b) => a.atEpochMs - b.atEpochMs);
}
