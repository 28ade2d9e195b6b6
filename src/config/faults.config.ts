import { configNamespace } from './config-namespace.js';
import { ConfigValidationError } from './config-validation.error.js';
import { readInt, readString, type Env } from './env-readers.js';

/** Test-only hooks (see FaultInjectorService); each is refused in production. */
export interface FaultsConfig {
  /** SIGKILL the process at this point, the Nth time it is reached. */
  crash: { point: FaultPoint; after: number } | null;
  /**
   * Slow steps (FAULT_DELAYS): each time a pause point is reached, with this chance, it waits
   * this long. The random-fault checker widens rare interleavings with them.
   */
  delays: FaultDelay[];
  /**
   * FAULT_DELAYS_SWITCH_FILE: the slow steps are on while this file says `on`, read at boot and
   * at each SIGUSR2; null: always on.
   */
  delaysSwitchFile: string | null;
}

export const FAULT_POINTS = ['after-deduct', 'after-commit', 'after-cancel-commit'] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

/** Where a step can be held by a test (FaultInjectorService.holdAt) or slowed (FAULT_DELAYS). */
export const PAUSE_POINTS = [
  'before-order-write',
  'before-sale-lock',
  'fallback-return-stale-read',
  'preheat-before-stock',
] as const;
export type PausePoint = (typeof PAUSE_POINTS)[number];
export interface FaultDelay {
  point: PausePoint;
  ms: number;
  /** The chance, 0-100, that reaching the point waits. */
  percent: number;
}

/** FAULT_CRASH_POINT (one of FAULT_POINTS) and FAULT_CRASH_AFTER (N, default 1). */
function readCrash(env: Env, nodeEnv: string): FaultsConfig['crash'] {
  const point = readString(env, 'FAULT_CRASH_POINT', '');
  if (point === '') return null;
  if (!FAULT_POINTS.includes(point as FaultPoint)) {
    throw new ConfigValidationError(`FAULT_CRASH_POINT must be one of ${FAULT_POINTS.join(', ')}`);
  }
  if (nodeEnv === 'production') {
    throw new ConfigValidationError('FAULT_CRASH_POINT is for tests and refused in production');
  }
  return { point: point as FaultPoint, after: readInt(env, 'FAULT_CRASH_AFTER', 1, 1, 1_000_000) };
}

/** FAULT_DELAYS: comma-separated `point:ms:percent`, e.g. `before-order-write:8000:10`. */
function readDelays(env: Env, nodeEnv: string): FaultDelay[] {
  const raw = readString(env, 'FAULT_DELAYS', '');
  if (raw === '') return [];
  if (nodeEnv === 'production') {
    throw new ConfigValidationError('FAULT_DELAYS is for tests and refused in production');
  }
  return raw.split(',').map((item) => {
    const [point, ms, percent] = item.trim().split(':');
    const delay = { point: point as PausePoint, ms: Number(ms), percent: Number(percent) };
    if (
      !PAUSE_POINTS.includes(delay.point) ||
      !Number.isInteger(delay.ms) ||
      delay.ms < 0 ||
      delay.ms > 600_000 ||
      !Number.isFinite(delay.percent) ||
      delay.percent < 0 ||
      delay.percent > 100
    ) {
      throw new ConfigValidationError(
        `FAULT_DELAYS must be comma-separated point:ms:percent (point one of ${PAUSE_POINTS.join(', ')}, ms 0-600000, percent 0-100); got "${item.trim()}"`,
      );
    }
    return delay;
  });
}

function readDelaysSwitchFile(env: Env): string | null {
  const path = readString(env, 'FAULT_DELAYS_SWITCH_FILE', '');
  if (path !== '' && readString(env, 'FAULT_DELAYS', '') === '') {
    throw new ConfigValidationError('FAULT_DELAYS_SWITCH_FILE needs FAULT_DELAYS');
  }
  return path === '' ? null : path;
}

export const faultsConfig = configNamespace('faults', (env, app): FaultsConfig => ({
  crash: readCrash(env, app.nodeEnv),
  delays: readDelays(env, app.nodeEnv),
  delaysSwitchFile: readDelaysSwitchFile(env),
}));
