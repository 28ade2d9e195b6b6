// The command line of `npm run chaos -- --random`.
import { readFileSync } from 'node:fs';

import { integerFlag, readFlags } from '../lib/args.js';
import { UsageError } from '../lib/errors.js';
import { FAULT_KINDS, type InstanceSpec } from './faults.js';
import type { Schedule } from './nemesis.js';
import { randomSeed } from './random.js';

export const USAGE = `usage: npm run chaos -- --random [options]
       npm run chaos                      (the named fault scenarios of the test suite)

  --random           a run of random, overlapping faults drawn from a seed against a workload of
                     buyers, then a check of every answer they saw against the stores
  --seed <n>         the seed (default: a random one, printed first)
  --minutes <m>      how long the workload and the faults run (default 2; fractions too: 0.5)
  --instances <k>    app instances, 2 to 6 (default 3: APP_ROLE=api for all but one, one
                     APP_ROLE=worker)
  --roles all        every instance APP_ROLE=all instead
  --cluster          on clustered engines of the run's own: a RabbitMQ cluster of three nodes
                     (quorum queues on all three), a MariaDB primary with a semi-synchronous
                     replica (DATABASE_REPLICA_URL for the api instances) and a Redis Cluster of
                     three masters with a replica each (REDIS_CLUSTER_NAT_MAP through proxies);
                     Redis faults act on a master (failed over past its 3 s node timeout); adds
                     the faults that kill a broker node, fail the database over and fail a Redis
                     master over
  --out <dir>        where schedule.json, history.jsonl, report.html and the logs go
                     (default chaos-results/seed-<seed>)
  --schedule <file>  replay a schedule.json: its seed, minutes, instances, REDIS_DOWN_MODE and
                     faults (the seed draws the mode: database two runs in three, else closed)
  --help             show this help

Needs MariaDB/MySQL on 127.0.0.1:3306 (root), RabbitMQ on 127.0.0.1:5672 with rabbitmqctl, and
redis-server on PATH; it makes its own database, vhost and Redis server, and removes them after.
The database, the vhost and the queues' prefix are named CHAOS_STORE_NAME (lower case, with
"chaos" in it; default seckill_chaos_<pid>): give each run at once on one machine its own.`;

export interface ChaosOptions {
  /** The schedule given to replay; otherwise drawn from seed, minutes and instances. */
  schedule?: Schedule;
  seed: number;
  durationMs: number;
  instances: InstanceSpec[];
  /** On the clustered engines (a replayed schedule says). */
  cluster: boolean;
  outDir: string;
}

export function topology(count: number, roles: 'split' | 'all'): InstanceSpec[] {
  if (roles === 'all') {
    return Array.from({ length: count }, (_, i) => ({ name: `app-${i + 1}`, role: 'all' }));
  }
  return [
    ...Array.from({ length: count - 1 }, (_, i) => ({
      name: `api-${i + 1}`,
      role: 'api' as const,
    })),
    { name: 'worker-1', role: 'worker' },
  ];
}

function minutesFlag(raw: string): number {
  const minutes = Number(raw);
  if (!/^[0-9]+(\.[0-9]+)?$/.test(raw) || minutes < 0.2 || minutes > 120) {
    throw new UsageError(`--minutes must be a number from 0.2 to 120, got ${raw}`);
  }
  return minutes;
}

/** A schedule.json as a run wrote it; a hand-edited one is checked before it is trusted. */
export function readSchedule(path: string): Schedule {
  let schedule: Schedule;
  try {
    schedule = JSON.parse(readFileSync(path, 'utf8')) as Schedule;
  } catch (error) {
    throw new UsageError(
      `--schedule ${path}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const names = new Set(schedule.instances?.map((instance) => instance.name));
  const valid =
    Number.isSafeInteger(schedule.seed) &&
    Number.isFinite(schedule.durationMs) &&
    Array.isArray(schedule.faults) &&
    schedule.faults.every(
      (fault) =>
        fault.kind in FAULT_KINDS &&
        Number.isFinite(fault.atMs) &&
        Number.isFinite(fault.holdMs) &&
        (fault.instance === undefined || fault.instance === 'all' || names.has(fault.instance)),
    );
  if (!valid) throw new UsageError(`--schedule ${path}: not a schedule this run wrote`);
  return {
    ...schedule,
    cluster: schedule.cluster === true,
    redisDownMode: schedule.redisDownMode === 'closed' ? 'closed' : 'database',
    // A schedule written before slow steps existed has none.
    slowSteps: Array.isArray(schedule.slowSteps) ? schedule.slowSteps.map(String) : [],
    // One written before the consumer's settings were drawn ran with the app's defaults.
    consumer: consumerOf(schedule.consumer),
  };
}

function consumerOf(consumer: unknown): Schedule['consumer'] {
  if (typeof consumer !== 'object' || consumer === null) return undefined;
  const { prefetch, batchSize } = consumer as Record<string, unknown>;
  return Number.isSafeInteger(prefetch) && Number.isSafeInteger(batchSize)
    ? { prefetch: Number(prefetch), batchSize: Number(batchSize) }
    : undefined;
}

export function parseChaosOptions(argv: string[]): ChaosOptions | 'help' {
  const values = readFlags(argv, {
    random: { type: 'boolean', default: false },
    seed: { type: 'string' },
    minutes: { type: 'string', default: '2' },
    instances: { type: 'string', default: '3' },
    roles: { type: 'string' },
    cluster: { type: 'boolean', default: false },
    out: { type: 'string' },
    schedule: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  if (!values.random && values.schedule === undefined) {
    throw new UsageError('--random or --schedule is needed for a random run');
  }
  if (values.roles !== undefined && values.roles !== 'all') {
    throw new UsageError(`--roles takes only "all", got ${values.roles}`);
  }
  const schedule = values.schedule === undefined ? undefined : readSchedule(values.schedule);
  const seed =
    schedule?.seed ??
    (values.seed === undefined ? randomSeed() : integerFlag('seed', values.seed, 0, 2 ** 31 - 1));
  const count = integerFlag('instances', values.instances, 2, 6);
  return {
    ...(schedule === undefined ? {} : { schedule }),
    seed,
    durationMs: schedule?.durationMs ?? Math.round(minutesFlag(values.minutes) * 60_000),
    instances: schedule?.instances ?? topology(count, values.roles === 'all' ? 'all' : 'split'),
    cluster: schedule ? schedule.cluster === true : values.cluster === true,
    outDir: values.out ?? `chaos-results/seed-${seed}`,
  };
}
