import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import type { ChainableCommander } from 'ioredis';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { withIncludes } from './lua-source.js';
import { isCluster, type RedisClient } from './redis-client.js';
import { REDIS_CLIENT } from './redis.constants.js';
import { inSpan, SpanKind, type Trace } from '../tracing/tracing.js';

// Same depth from src/infra/redis and dist/infra/redis: both reach the repo's lua/ folder.
const LUA_DIR = fileURLToPath(new URL('../../../lua/', import.meta.url));

/** Every script of lua/, by the command name ioredis defines it as, and its key count. */
const SCRIPTS = {
  seckillDeduct: { file: 'seckill-deduct.lua', keys: 10 },
  seckillRelease: { file: 'seckill-release.lua', keys: 9 },
  seckillClaim: { file: 'seckill-claim.lua', keys: 3 },
  seckillComplete: { file: 'seckill-complete.lua', keys: 9 },
  seckillPreheat: { file: 'seckill-preheat.lua', keys: 2 },
  seckillRestock: { file: 'seckill-restock.lua', keys: 3 },
  seckillRetake: { file: 'seckill-retake.lua', keys: 7 },
  seckillSnapshot: { file: 'seckill-snapshot.lua', keys: 5 },
  seckillRebuild: { file: 'seckill-rebuild.lua', keys: 8 },
  seckillLoan: { file: 'seckill-loan.lua', keys: 4 },
  seckillLoanSettle: { file: 'seckill-loan-settle.lua', keys: 3 },
  seckillFreeze: { file: 'seckill-freeze.lua', keys: 1 },
  // Two keys a budget: defined once per budget count (see onModuleInit).
  throttleHits: { file: 'throttle-hits.lua', keys: 'per-budget' },
  purchaseTokenConsume: { file: 'purchase-token-consume.lua', keys: 1 },
  purchaseUnlock: { file: 'purchase-unlock.lua', keys: 2 },
  lockTake: { file: 'lock-take.lua', keys: 1 },
  lockRelease: { file: 'lock-release.lua', keys: 1 },
  lockDropStale: { file: 'lock-drop-stale.lua', keys: 1 },
  idempotencyReserve: { file: 'idempotency-reserve.lua', keys: 1 },
  idempotencySettle: { file: 'idempotency-settle.lua', keys: 1 },
  autobanCount: { file: 'autoban-count.lua', keys: 1 },
  redisTime: { file: 'redis-time.lua', keys: 1 },
  barrierTick: { file: 'barrier-tick.lua', keys: 3 },
  streamSlot: { file: 'stream-slot.lua', keys: 1 },
  blocklistPrune: { file: 'blocklist-prune.lua', keys: 1 },
  queueJoin: { file: 'queue-join.lua', keys: 4 },
  queueTick: { file: 'queue-tick.lua', keys: 8 },
  queueStatus: { file: 'queue-status.lua', keys: 11 },
  queueRoom: { file: 'queue-room.lua', keys: 9 },
  queueRestore: { file: 'queue-restore.lua', keys: 8 },
  queuePreRead: { file: 'queue-pre-read.lua', keys: 2 },
  // The key count varies with the window: the caller passes it first.
  dashboardSale: { file: 'dashboard-sale.lua', keys: 'first-argument' },
} as const satisfies Record<
  string,
  { file: string; keys: number | 'per-budget' | 'first-argument' }
>;

type RegisteredName = keyof typeof SCRIPTS;

/** The most budgets one request spends (per user, per IP and global are three). */
export const MAX_THROTTLE_BUDGETS = 8;

/** The throttle script's commands, one per budget count (1 to MAX_THROTTLE_BUDGETS). */
export type ThrottleCommand = `throttleHits${number}`;

export type ScriptName = Exclude<RegisteredName, 'throttleHits'> | ThrottleCommand;

type ScriptArgs = (string | number)[];
type ScriptFn = (...args: ScriptArgs) => Promise<unknown>;

/**
 * Each registered script's body, read from `dir`. Throws, naming the file, when the folder and
 * the registry disagree (a registered file missing, a .lua file with no entry): the process then
 * fails at start, not at the script's first call, or with a script that never runs.
 */
export function readScripts(dir: string = LUA_DIR): Map<RegisteredName, string> {
  const present = new Set(readdirSync(dir).filter((file) => file.endsWith('.lua')));
  const registered = new Set<string>(Object.values(SCRIPTS).map(({ file }) => file));
  const unregistered = [...present].filter((file) => !registered.has(file)).sort();
  if (unregistered.length > 0) {
    throw new Error(
      `${unregistered.join(', ')} in ${dir}: no entry in the script registry (src/infra/redis/lua-scripts.service.ts)`,
    );
  }
  const bodies = new Map<RegisteredName, string>();
  for (const [name, { file }] of Object.entries(SCRIPTS) as [RegisteredName, { file: string }][]) {
    if (!present.has(file)) throw new Error(`${file} (script ${name}) is missing from ${dir}`);
    bodies.set(name, withIncludes(dir, file));
  }
  return bodies;
}

/**
 * The Lua scripts in lua/, each registered once with ioredis `defineCommand` (EVALSHA, with a
 * transparent re-send of the body after NOSCRIPT). The contracts live in each file's header; the
 * typed wrappers, with their features.
 */
@Injectable()
export class LuaScriptsService implements OnModuleInit {
  constructor(@Inject(REDIS_CLIENT) private readonly redis: RedisClient) {}

  onModuleInit(): void {
    for (const [name, lua] of readScripts()) {
      const { keys } = SCRIPTS[name];
      if (keys === 'first-argument') {
        this.redis.defineCommand(name, { lua });
      } else if (keys === 'per-budget') {
        // The throttle script as one command per budget count, each with a fixed key count:
        // ioredis then knows its keys, which a cluster client needs to route it (a key count
        // passed as the first argument is taken for a key there). All defined here, before any
        // command is sent:
        // a command defined later is missing from an auto-pipeline already gathering, and the
        // other commands of that pipeline then never get an answer.
        for (let budgets = 1; budgets <= MAX_THROTTLE_BUDGETS; budgets++) {
          this.redis.defineCommand(`${name}${budgets}`, { numberOfKeys: budgets * 2, lua });
        }
      } else {
        this.redis.defineCommand(name, { numberOfKeys: keys, lua });
      }
    }
  }

  /** The script's raw reply (decoded by its wrapper); keys first, as the registry counts them. */
  run(name: ScriptName, ...args: ScriptArgs): Promise<unknown> {
    return (this.redis as unknown as Record<ScriptName, ScriptFn>)[name](...args);
  }

  /** `run`, in a span of its own under `trace` when there is one. */
  runIn(trace: Trace, name: ScriptName, ...args: ScriptArgs): Promise<unknown> {
    // Untraced, no closure: this is every purchase's way to Redis.
    if (trace === undefined) return this.run(name, ...args);
    return inSpan(
      `redis ${name}`,
      trace,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system.name': 'redis', 'db.operation.name': name },
      },
      () => this.run(name, ...args),
    );
  }

  /**
   * A MULTI on the client the scripts are defined on (a transaction of another client lacks
   * them); `queue` adds a script to it.
   */
  multi(): ChainableCommander {
    return this.redis.multi();
  }

  /** Queues the script on `batch` (from `multi`): its reply comes with exec(). */
  queue(batch: ChainableCommander, name: ScriptName, ...args: ScriptArgs): void {
    (batch as unknown as Record<ScriptName, (...args: ScriptArgs) => unknown>)[name](...args);
  }

  /** On a cluster, one script call may only touch keys of one slot. */
  get onCluster(): boolean {
    return isCluster(this.redis);
  }

  /** The clock (epoch ms) of the server holding `key`: on a cluster, the master of its slot. */
  async serverTimeMs(key: string): Promise<number> {
    return Number(await this.run('redisTime', key));
  }
}
