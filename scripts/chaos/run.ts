// One random chaos run: the stores and instances up, the sales open, the workload and the
// nemesis for the duration, the heal, reopen and quiet measured, the stores read and checked.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { rabbitUrl } from '../../bench/lib/stores.js';
import { DRAW_ADMIT_PER_SECOND } from '../../src/modules/waiting-room/room-sale.js';
import { onCleanup } from '../lib/cleanup.js';
import { UsageError } from '../lib/errors.js';
import { signToken } from '../lib/jwt.js';
import { readWrittenPoints } from './app-logs.js';
import { check, REDIS_FAULT_EXPLAINS_MS } from './checker.js';
import { describeFault, type Fault } from './faults.js';
import { History } from './history.js';
import { generateSchedule, startNemesis } from './nemesis.js';
import type { ChaosOptions } from './options.js';
import { Rng } from './random.js';
import type { FaultSpan, QueueFacts } from './queue-checks.js';
import { buildReport, spans, terminalSummary, type RunRecord } from './report.js';
import {
  queueDepths,
  readQueueJournal,
  readQueueDraw,
  readQueueRoom,
  readSale,
  sampleAdmissions,
  type Stores,
} from './snapshot.js';
import {
  AFTER_QUIET_BUDGET_MS,
  measureReopen,
  probeUndersell,
  READING_BOUND_MS,
  REOPEN_BOUND_MS,
  waitQuiet,
  within,
} from './settle.js';
import { ChaosSystem } from './system.js';
import { ClusterStores } from './cluster-stores.js';
import { MerchantReceiver } from '../fake-provider/merchant-receiver.js';
import { openSales, saleProfiles, Workload } from './workload.js';

const PAYMENT_TIMEOUT_MS = 10_000;
/**
 * The run's database, vhost and queue prefix: CHAOS_STORE_NAME (it must contain "chaos"), so that
 * two runs at once on one machine can be told apart by name; else seckill_chaos_<pid>.
 */
/** Whether a fault may stop a queue room's admission clock (see FaultSpan.stopsClock). */
function stopsClock(fault: Fault | undefined): boolean {
  if (fault === undefined) return true;
  if (fault.kind.startsWith('redis-') || fault.service === 'redis') return true;
  // The pacer writes each step to the room's MySQL journal before it steps again: a MySQL link
  // held up holds the steps back, and a gap between steps stops the clock.
  if (fault.service === 'mysql') return true;
  return ['reopen-then-restart', 'channel-flap', 'app-kill', 'app-pause', 'slow-steps'].includes(
    fault.kind,
  );
}

function storeName(): string {
  const given = process.env.CHAOS_STORE_NAME;
  if (given === undefined || given === '') return `seckill_chaos_${process.pid}`;
  if (!/^[a-z0-9_]*chaos[a-z0-9_]*$/.test(given)) {
    throw new UsageError(
      `CHAOS_STORE_NAME must be lower-case letters, digits and _ and contain "chaos", got ${given}`,
    );
  }
  return given;
}
const LANES_PER_SERVING_INSTANCE = 6;
const REPAIR_EVERY_MS: readonly [number, number] = [15_000, 40_000];
/** The faults after which Redis holds another waiting room than before (empty, or a snapshot's). */
const REDIS_DATA_FAULTS: ReadonlySet<string> = new Set([
  'redis-kill',
  'redis-restart',
  'reopen-then-restart',
  'channel-flap',
  'redis-failover',
]);
/**
 * On the Redis Cluster a paused master is failed over (its pause outlasts the node timeout): its
 * promoted replica may lack what it had not received yet.
 */
const CLUSTER_REDIS_DATA_FAULTS: ReadonlySet<string> = new Set([
  ...REDIS_DATA_FAULTS,
  'redis-pause',
]);

/** The final repairs wait this long after the heal: past the checker's window for a fault. */
const FINAL_REPAIR_AFTER_HEAL_MS = REDIS_FAULT_EXPLAINS_MS + 1_000;

/** Every instance's settings: short timers, so that expiries and sweeps happen during faults. */
const APP_ENV: Record<string, string> = {
  NODE_ENV: 'development',
  LOG_LEVEL: 'log',
  LOG_FORMAT: 'json',
  ORDER_PAYMENT_TIMEOUT_MS: String(PAYMENT_TIMEOUT_MS),
  EXPIRY_SWEEP_INTERVAL_MS: '5000',
  EXPIRY_SWEEP_GRACE_MS: '5000',
  RECONCILE_INTERVAL_MS: '15000',
  SALE_EVICTION_ENABLED: 'false',
  TRUSTED_PROXIES: '127.0.0.1',
  SWAGGER_ENABLED: 'false',
  // Low enough that the purchases a fault holds up fill it and the next ones are shed (503
  // OVERLOADED), so that every run checks that a shed purchase took nothing.
  OVERLOAD_MAX_IN_FLIGHT: '8',
};

function commit(repoRoot: string): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: repoRoot,
      encoding: 'utf8',
    }).trim();
  } catch {
    return 'unknown';
  }
}

const progress = (line: string) => console.error(line);

export async function runChaos(options: ChaosOptions, repoRoot: string): Promise<boolean> {
  // First, so that even a run that fails to start can be replayed.
  console.log(`seed ${options.seed}`);
  const outDir = resolve(options.outDir);
  mkdirSync(outDir, { recursive: true });
  const schedule =
    options.schedule ??
    generateSchedule(options.seed, options.durationMs, options.instances, options.cluster);
  writeFileSync(join(outDir, 'schedule.json'), `${JSON.stringify(schedule, null, 2)}\n`);
  const replay = `npm run chaos -- --schedule ${join(outDir, 'schedule.json')}`;
  progress(`${schedule.faults.length} faults over ${schedule.durationMs / 1000} s; out: ${outDir}`);

  // The run's clock is the wall clock: the checker compares its times with the stores' and the
  // instances' (order stamps, MySQL's and Redis's times, the logs), and under a run's load
  // performance.now() was seen falling 0.4 % behind them (445 ms after 110 s).
  let zero = Date.now();
  const now = () => Date.now() - zero;
  const jwtSecret = `chaos-${options.seed}-${process.pid}`;
  const name = storeName();
  // The payment provider's secret, and the shop that hears every order event: it fails one
  // delivery in ten (its retries and their order are part of what is checked).
  const paymentSecret = `whsec_chaos_${options.seed}_${process.pid}_0123456789`;
  const merchantSecret = `whsec_shop_${options.seed}_${process.pid}_0123456789`;
  const merchant = await MerchantReceiver.start(merchantSecret);
  onCleanup(() => merchant.close());
  const shopRng = new Rng(schedule.seed).fork('shop');
  merchant.answer = () => (shopRng.chance(0.1) ? 503 : 200);
  let cluster: ClusterStores | undefined;
  if (schedule.cluster) {
    progress('starting a RabbitMQ cluster of three nodes, a MariaDB pair and a Redis Cluster…');
    cluster = await ClusterStores.start(name, join(repoRoot, 'dist', 'migrations', '*.js'));
    // Stopped with the system; this is for a run that fails before the system is up.
    const clusterStores = cluster;
    onCleanup(() => clusterStores.stop());
  }
  const system = await ChaosSystem.start({
    repoRoot,
    outDir,
    name,
    instances: schedule.instances,
    jwtSecret,
    now,
    cluster,
    env: {
      ...APP_ENV,
      RABBITMQ_PREFIX: name,
      REDIS_DOWN_MODE: schedule.redisDownMode,
      PAYMENT_WEBHOOK_SECRET: paymentSecret,
      MERCHANT_WEBHOOK_URL: merchant.url,
      MERCHANT_WEBHOOK_SECRET: merchantSecret,
      MERCHANT_WEBHOOK_TIMEOUT_MS: '2000',
      ...(schedule.slowSteps.length > 0 ? { FAULT_DELAYS: schedule.slowSteps.join(',') } : {}),
      ...(schedule.consumer
        ? {
            CONSUMER_PREFETCH: String(schedule.consumer.prefetch),
            CONSUMER_BATCH_SIZE: String(schedule.consumer.batchSize),
          }
        : {}),
    },
  });
  onCleanup(() => system.stop());
  const admin = signToken({ userId: 1, admin: true, secret: jwtSecret });
  const endpoints = system.serving.map((i) => ({ name: i.spec.name, baseUrl: i.baseUrl }));
  const sales = await openSales(
    endpoints[0],
    admin,
    saleProfiles(schedule.durationMs / 60_000, new Rng(schedule.seed).fork('sales')),
  );
  progress(`sales: ${sales.map((sale) => `${sale.name} ${sale.stock}`).join(', ')}`);
  for (const sale of sales.filter((s) => s.queue)) {
    progress(
      `${sale.queue?.draw ? 'draw' : 'queue'} sale ${sale.name}: opens now, starts +${((sale.startAtEpochMs - Date.now()) / 1000).toFixed(1)} s, ${sale.queue?.endInMs == null ? 'ends after the run' : `ends +${((sale.endAtEpochMs - Date.now()) / 1000).toFixed(1)} s`}`,
    );
  }
  const stores: Stores = {
    mysql: system.mysql,
    redis: system.redisClient,
    rabbitUrl: cluster
      ? `amqp://guest:guest@127.0.0.1:${cluster.brokerPorts[0]}/`
      : rabbitUrl(name),
    prefix: name,
    paymentTimeoutMs: PAYMENT_TIMEOUT_MS,
  };

  const startedAt = new Date();
  zero = startedAt.getTime();
  const history = new History(join(outDir, 'history.jsonl'));
  const workload = new Workload({
    sales,
    endpoints,
    jwtSecret,
    rng: new Rng(schedule.seed).fork('workload'),
    history,
    now,
    startedAtEpochMs: startedAt.getTime(),
    payments: { secret: paymentSecret, paymentTimeoutMs: PAYMENT_TIMEOUT_MS },
  });
  const queueSales = sales.filter((sale) => sale.queue);
  const admissions = sampleAdmissions(stores.redis, queueSales);
  const load = workload.run(LANES_PER_SERVING_INSTANCE * endpoints.length, REPAIR_EVERY_MS);
  const nemesis = startNemesis(system, schedule, now);
  const ticker = setInterval(() => {
    const last = nemesis.events.at(-1);
    progress(
      `${(now() / 1000).toFixed(0)} s: ${history.entries.length} requests; last fault step: ${last ? `${last.phase} ${last.what}${last.error ? ` (${last.error})` : ''}` : 'none'}`,
    );
  }, 10_000);
  await sleep(schedule.durationMs);
  await nemesis.stop();
  await system.healEverything();
  const healedAt = now();
  clearInterval(ticker);
  progress(`${(healedAt / 1000).toFixed(0)} s: healed; stopping the buyers, probing every sale`);
  workload.stop();
  await load;
  // Within the quiet's wait: the queue buyers still waiting are asked once their room answers.
  const askedAfterHeal = workload.askAfterHeal();

  const reopens = await measureReopen(workload, sales, endpoints, now, healedAt);
  progress(`${(now() / 1000).toFixed(0)} s: reopened; waiting for the sales to be quiet`);
  const quietFrom = now();
  const quiet = await waitQuiet(stores, sales);
  await askedAfterHeal;
  // Every queue buyer who joined and was told nothing final yet is asked once more (and again).
  await workload.tellEveryone();
  const toldMs = now();
  const { admissions: admissionLog, rooms: roomSamples } = await admissions.stop();
  // Nothing moves now: every purchase left unknown is told by its result (result-tells-truth),
  // and a sale both stores say has units sells one (no-undersell); then quiet again.
  const afterQuietUntil = now() + AFTER_QUIET_BUDGET_MS;
  const unknownRead = await workload.readUnknownOutcomes(afterQuietUntil);
  const underProbes = await probeUndersell(
    workload,
    stores,
    sales,
    endpoints,
    afterQuietUntil,
    now,
  );
  progress(
    `${(now() / 1000).toFixed(0)} s: ${unknownRead} unknown outcomes read, ${underProbes} under-sell probes; waiting for quiet again`,
  );
  const quietAgain = await waitQuiet(stores, sales);
  // Each read bounded: a store that answers nothing ends the run with its name, never holds it.
  const read = <T>(what: string, promise: Promise<T>) => within(promise, READING_BOUND_MS, what);
  const snapshot = {
    sales: await read(
      'the sales',
      Promise.all(sales.map((sale) => readSale(stores, sale, endpoints[0], admin))),
    ),
    deadLetters: (await read('the queues', queueDepths(stores)))['orders.dead'] ?? 0,
    quiet: quiet.reached ? quietAgain : quiet,
    rooms: await read(
      'the waiting rooms',
      Promise.all(queueSales.map((sale) => readQueueRoom(stores.redis, sale))),
    ),
    journals: await read(
      'the journals',
      Promise.all(queueSales.map((sale) => readQueueJournal(stores.mysql, sale))),
    ),
    draws: await read(
      'the draws',
      Promise.all(queueSales.map((sale) => readQueueDraw(sale, endpoints[0], admin))),
    ),
  };
  // After the stores were read (a repair rewrites Redis): one more repair of every sale, late
  // enough after the heal that no fault explains what it finds.
  await sleep(Math.max(0, healedAt + FINAL_REPAIR_AFTER_HEAL_MS - now()));
  await workload.repairEverySale();
  await history.close();
  const kinds = new Map(schedule.faults.map((fault) => [fault.id, fault.kind]));
  const faults: FaultSpan[] = spans(nemesis.events).map((span) => {
    const kind = kinds.get(span.faultId) ?? 'unknown';
    const fault = schedule.faults.find((f) => f.id === span.faultId);
    return {
      from: span.from,
      to: span.to,
      what: span.what,
      kind,
      redisData: (cluster ? CLUSTER_REDIS_DATA_FAULTS : REDIS_DATA_FAULTS).has(kind),
      ...(fault?.service === undefined ? {} : { service: fault.service }),
      ...(fault?.instance === undefined ? {} : { instance: fault.instance }),
      stopsClock: stopsClock(fault),
    };
  });
  const queue: QueueFacts = {
    sales: queueSales.map((sale) => ({
      goodsId: sale.goodsId,
      name: sale.name,
      startMs: sale.startAtEpochMs - startedAt.getTime(),
      endMs: sale.endAtEpochMs - startedAt.getTime(),
      // A draw's rights are not paced (the pace check then holds trivially).
      admitPerSecond: sale.queue!.draw ? DRAW_ADMIT_PER_SECOND : sale.queue!.admitPerSecond,
      admissionTtlMs: sale.queue!.admissionTtlSeconds * 1000,
    })),
    admissions: admissionLog,
    rooms: snapshot.rooms,
    roomSamples,
    journals: snapshot.journals,
    draws: snapshot.draws,
    faults,
    healedMs: healedAt,
    toldMs,
  };
  writeFileSync(join(outDir, 'admissions.json'), `${JSON.stringify(admissionLog)}\n`);
  writeFileSync(join(outDir, 'room-samples.json'), `${JSON.stringify(roomSamples)}\n`);
  const verdict = check({
    history: history.entries,
    snapshot,
    liveness: { boundMs: REOPEN_BOUND_MS, reopens },
    brokerCloses: system.brokerCloses,
    startedAtEpochMs: startedAt.getTime(),
    writtenPoints: readWrittenPoints(join(outDir, 'logs')),
    queue,
    faults,
    merchantReceived: merchant.events.map((event) => ({
      id: event.id,
      orderNo: event.data.orderNo,
      type: event.type,
    })),
  });
  const record: RunRecord = {
    seed: schedule.seed,
    schedule,
    startedAt: startedAt.toISOString(),
    commit: commit(repoRoot),
    elapsedMs: Math.round(now()),
    replay,
    history: history.entries,
    nemesis: nemesis.events,
    system: system.events,
    reopens,
    reopenBoundMs: REOPEN_BOUND_MS,
    quietAfterMs: Math.round(quiet.reached ? now() - quietFrom : quiet.waitedMs),
    check: verdict,
  };
  writeFileSync(join(outDir, 'snapshot.json'), `${JSON.stringify(snapshot, null, 2)}\n`);
  writeFileSync(
    join(outDir, 'summary.json'),
    `${JSON.stringify({ ...record, history: undefined, faults: schedule.faults.map(describeFault) }, null, 2)}\n`,
  );
  writeFileSync(join(outDir, 'report.html'), buildReport(record));
  console.log(terminalSummary(record));
  console.log(`report: ${join(outDir, 'report.html')}`);
  if (!verdict.ok)
    console.log(
      `schedule to replay (${join(outDir, 'schedule.json')}):\n${JSON.stringify(schedule)}`,
    );
  return verdict.ok;
}
