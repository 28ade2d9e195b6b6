// The scenarios, and how one of them is run against one side and measured.
import { setTimeout as sleep } from 'node:timers/promises';

import { buyerAddress, runLoad, type LoadRequest } from '../../scripts/lib/load.js';
import { signToken } from '../../scripts/lib/jwt.js';
import { pipelineOrdersPerSec, summarizeLoad, type LoadFigures } from './figures.js';
import {
  commandFigures,
  commandStats,
  diffCommands,
  localPid,
  sampleProcess,
  saleMemoryBytes,
  type CommandFigures,
  type ProcFigures,
} from './probes.js';
import { countOrders, saleCounts, type Side, type SideName } from './sides.js';

export interface Scenario {
  name: string;
  /** What it shows, for the report. */
  title: string;
  stock: number;
  /** Sell the whole stock before the load, so that every answer is SOLD_OUT. */
  soldOutFirst: boolean;
  /** Load for this long with a new buyer per request ... */
  durationMs?: number;
  /** ... or send exactly buyers × clicks requests, a buyer's clicks side by side. */
  buyers?: number;
  clicks: number;
}

export interface ScenarioSizes {
  durationMs: number;
  crowdBuyers: number;
  crowdStock: number;
  drainBuyers: number;
}

export function scenarios(sizes: ScenarioSizes): Scenario[] {
  const { durationMs } = sizes;
  const scale = (exponent: number): Scenario => ({
    name: `scale-1e${exponent}`,
    title: `stock 10^${exponent}, the same load as the others (${durationMs / 2000} s)`,
    stock: 10 ** exponent,
    soldOutFirst: false,
    durationMs: durationMs / 2,
    clicks: 1,
  });
  return [
    {
      name: 'success',
      title: 'a huge stock, every request a new buyer: every answer is a purchase',
      stock: 10_000_000,
      soldOutFirst: false,
      durationMs,
      clicks: 1,
    },
    {
      name: 'soldout',
      title: 'the stock is gone: every answer is 409 SOLD_OUT',
      stock: 1,
      soldOutFirst: true,
      durationMs,
      clicks: 1,
    },
    {
      name: 'crowd',
      title: `${sizes.crowdBuyers} buyers clicking twice on ${sizes.crowdStock} units`,
      stock: sizes.crowdStock,
      soldOutFirst: false,
      buyers: sizes.crowdBuyers,
      clicks: 2,
    },
    {
      name: 'drain',
      title: `${sizes.drainBuyers} purchases at once, then until the last order is in MySQL`,
      stock: sizes.drainBuyers,
      soldOutFirst: false,
      buyers: sizes.drainBuyers,
      clicks: 1,
    },
    scale(2),
    scale(4),
    scale(6),
  ];
}

export interface Invariants {
  ok: boolean;
  problems: string[];
  orders: number;
  users: number;
  stock: number;
  totalStock: number;
}

export interface RunRecord extends LoadFigures {
  round: number;
  scenario: string;
  side: SideName;
  /** 1 when this side ran first in the round's pair, 2 when second. */
  position: number;
  goodsId: number;
  stock: number;
  drainSeconds: number | null;
  pipelineOrdersPerSec: number;
  redis: {
    load: CommandFigures;
    loadAndDrain: CommandFigures;
    /** Every command executed per answer during the load (scripts' own commands included). */
    perAnswer: number;
    /** Every command executed per accepted purchase, the consumer's included. */
    perAccepted: number | null;
    scriptsPerAnswer: number;
  };
  proc: ProcFigures;
  /** The side's redis-server, and this load generator, over the same span. */
  redisCpuPercent: number;
  loadGeneratorCpuPercent: number;
  /** The project's worker process (`--worker`) over the same span; null when there is none. */
  workerCpuPercent?: number | null;
  /** The shared local RabbitMQ and MySQL over the same span; null when they are not local. */
  brokerCpuPercent: number | null;
  mysqlCpuPercent: number | null;
  redisBytesPerBuyer: number | null;
  /** Tokens that had to be signed during the load because the pre-signed ones ran out. */
  lateTokens: number;
  invariants: Invariants;
}

const DRAIN_TIMEOUT_MS = 120_000;
const BROKER_PID = localPid(['beam.smp']);
const MYSQL_PID = localPid(['mariadbd', 'mysqld']);
const DRAIN_POLL_MS = 50;
const FIRST_BUYER_ID = 1_000_000;
// A guess for the first run's token supply; later runs size it from the fastest run seen.
const INITIAL_RATE = 8_000;

/** Hands out new buyers (a user id and a client address each) to one side, run after run. */
export class Buyers {
  private next: number;
  private fastest = INITIAL_RATE;

  /** `firstId`: where this supply's user ids start (apart from another's on the same stores). */
  constructor(
    private readonly secret: string,
    private readonly firstId = FIRST_BUYER_ID,
  ) {
    this.next = firstId;
  }

  noteRate(answersPerSec: number): void {
    this.fastest = Math.max(this.fastest, answersPerSec);
  }

  take(): Record<string, string> {
    const userId = this.next++;
    return {
      authorization: `Bearer ${signToken({ userId, secret: this.secret })}`,
      'x-forwarded-for': buyerAddress(userId - this.firstId),
    };
  }

  /** Enough for the scenario, signed now so that signing does not compete with the load. */
  presign(scenario: Scenario): Record<string, string>[] {
    const count =
      scenario.buyers ?? Math.ceil(((this.fastest * (scenario.durationMs ?? 0)) / 1000) * 1.3);
    return Array.from({ length: count }, () => this.take());
  }
}

async function waitForOrders(side: Side, goodsId: number, expected: number): Promise<number> {
  const deadline = performance.now() + DRAIN_TIMEOUT_MS;
  for (;;) {
    const orders = await countOrders(side.db, goodsId);
    if (orders >= expected || performance.now() > deadline) return orders;
    await sleep(DRAIN_POLL_MS);
  }
}

async function sellOut(side: Side, goodsId: number, buyers: Buyers): Promise<number> {
  const headers = buyers.take();
  const run = await runLoad({
    origin: side.origin,
    connections: 1,
    next: (i) =>
      i === 0 ? { method: 'POST', path: `/api/v1/seckill/${goodsId}`, headers } : undefined,
  });
  const accepted = run.results.filter((r) => r.status === 202).length;
  await waitForOrders(side, goodsId, accepted);
  return accepted;
}

function checkInvariants(
  counts: Awaited<ReturnType<typeof saleCounts>>,
  accepted: number,
): Invariants {
  const problems: string[] = [];
  if (counts.quantity > counts.totalStock) {
    problems.push(`oversold: ${counts.quantity} ordered of ${counts.totalStock}`);
  }
  if (counts.users !== counts.orders) {
    problems.push(`${counts.orders - counts.users} users with more than one order`);
  }
  if (counts.orders !== accepted) {
    problems.push(`${accepted} accepted but ${counts.orders} orders in MySQL`);
  }
  if (counts.stock + counts.quantity !== counts.totalStock) {
    problems.push(
      `MySQL stock ${counts.stock} + ordered ${counts.quantity} != total ${counts.totalStock}`,
    );
  }
  return { ok: problems.length === 0, problems, ...counts };
}

export interface RunContext {
  round: number;
  position: number;
  connections: number;
  buyers: Buyers;
  /** Called with each answer, for a progress display. */
  onAnswer: () => void;
}

export async function runScenario(
  side: Side,
  scenario: Scenario,
  context: RunContext,
): Promise<RunRecord> {
  const goodsId = await side.createSale(scenario.stock);
  const presold = scenario.soldOutFirst ? await sellOut(side, goodsId, context.buyers) : 0;
  const pool = context.buyers.presign(scenario);
  const path = `/api/v1/seckill/${goodsId}`;
  const clicks = scenario.clicks;
  const fixedCount = scenario.buyers === undefined ? undefined : scenario.buyers * clicks;
  let lateTokens = 0;
  const next = (index: number): LoadRequest | undefined => {
    if (fixedCount !== undefined && index >= fixedCount) return undefined;
    const buyer = Math.floor(index / clicks);
    let headers = pool[buyer];
    if (headers === undefined) {
      lateTokens++;
      headers = pool[buyer] = context.buyers.take();
    }
    return { method: 'POST', path, headers };
  };

  const before = await commandStats(side.redis);
  const proc = sampleProcess(side.pid);
  const redisProc = sampleProcess(side.redisPid, 1_000);
  const workerProc =
    side.workerPid === undefined ? undefined : sampleProcess(side.workerPid, 1_000);
  const brokerProc = BROKER_PID === undefined ? undefined : sampleProcess(BROKER_PID, 1_000);
  const mysqlProc = MYSQL_PID === undefined ? undefined : sampleProcess(MYSQL_PID, 1_000);
  const ownCpu = process.cpuUsage();
  const run = await runLoad({
    origin: side.origin,
    connections: context.connections,
    next,
    durationMs: scenario.durationMs,
    onResult: context.onAnswer,
  });
  const procFigures = proc.stop();
  const redisCpuPercent = redisProc.stop().cpuPercent;
  const workerCpuPercent = workerProc?.stop().cpuPercent ?? null;
  const brokerCpuPercent = brokerProc?.stop().cpuPercent ?? null;
  const mysqlCpuPercent = mysqlProc?.stop().cpuPercent ?? null;
  const own = process.cpuUsage(ownCpu);
  const loadGeneratorCpuPercent = Number(
    (((own.user + own.system) / 1000 / run.elapsedMs) * 100).toFixed(1),
  );
  const afterLoad = await commandStats(side.redis);
  const figures = summarizeLoad(run.results, run.elapsedMs);
  context.buyers.noteRate(figures.answersPerSec);

  const expected = presold + figures.accepted;
  const landed = await waitForOrders(side, goodsId, expected);
  const drainSeconds = landed >= expected ? (performance.now() - run.endedAt) / 1000 : null;
  const afterDrain = await commandStats(side.redis);
  const load = commandFigures(diffCommands(before, afterLoad));
  const loadAndDrain = commandFigures(diffCommands(before, afterDrain));
  const buyersHeld = Number(await side.redis.hlen(`seckill:{${goodsId}}:buyers`));
  const bytes = await saleMemoryBytes(side.redis, goodsId);

  return {
    round: context.round,
    scenario: scenario.name,
    side: side.name,
    position: context.position,
    goodsId,
    stock: scenario.stock,
    ...figures,
    drainSeconds: drainSeconds === null ? null : Number(drainSeconds.toFixed(3)),
    pipelineOrdersPerSec: pipelineOrdersPerSec(
      figures.accepted,
      figures.loadSeconds,
      drainSeconds ?? DRAIN_TIMEOUT_MS / 1000,
    ),
    redis: {
      load,
      loadAndDrain,
      perAnswer: figures.answers > 0 ? Number((load.total / figures.answers).toFixed(2)) : 0,
      perAccepted:
        figures.accepted > 0 ? Number((loadAndDrain.total / figures.accepted).toFixed(2)) : null,
      scriptsPerAnswer:
        figures.answers > 0 ? Number((load.scripts / figures.answers).toFixed(2)) : 0,
    },
    proc: procFigures,
    redisCpuPercent,
    loadGeneratorCpuPercent,
    workerCpuPercent,
    brokerCpuPercent,
    mysqlCpuPercent,
    redisBytesPerBuyer: buyersHeld > 0 ? Math.round(bytes / buyersHeld) : null,
    lateTokens,
    invariants: checkInvariants(await saleCounts(side.db, goodsId), expected),
  };
}

/** A short unrecorded load first, so that neither side's first recorded run pays for its JIT warm-up. */
export async function warmUp(side: Side, buyers: Buyers, connections: number, ms: number) {
  const goodsId = await side.createSale(10_000_000);
  const path = `/api/v1/seckill/${goodsId}`;
  const run = await runLoad({
    origin: side.origin,
    connections,
    durationMs: ms,
    next: () => ({ method: 'POST', path, headers: buyers.take() }),
  });
  const accepted = run.results.filter((r) => r.status === 202).length;
  await waitForOrders(side, goodsId, accepted);
}
