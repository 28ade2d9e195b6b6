import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { Cluster, Redis } from 'ioredis';
import { InjectConfig } from '../../config/config-namespace.js';
import { redisConfig, type RedisConfig } from '../../config/redis.config.js';
import {
  isCluster,
  keyInScope,
  keySlot,
  nodeKey,
  SLOT_COUNT,
  type RedisClient,
  type SlotScope,
} from './redis-client.js';
import { REDIS_CLIENT } from './redis.constants.js';
import { allBucketKeys, saleKeys } from './seckill-keys.js';

/** A Redis server behind some slots is a new one: what it holds may be gone or out of date. */
export interface RedisRestart {
  /** The run_id that served these slots before. */
  previous: string;
  /** The run_id that serves them now. */
  current: string;
  slots: SlotScope;
  /** When this instance noticed it (epoch ms): the server was new by then. */
  detectedAt: number;
}

export type { SlotScope };

/**
 * Whether a sale's keys live in the scope: its one slot (they share the `{goodsId}` tag), or with
 * several stock buckets any bucket's (the sale is then recovered as a whole).
 */
export function saleInScope(scope: SlotScope, goodsId: number, shards = 1): boolean {
  return (
    keyInScope(scope, saleKeys(goodsId).stock) ||
    allBucketKeys(goodsId, shards).some((keys) => keyInScope(scope, keys.stock))
  );
}

const runIdOf = (info: string) => /run_id:(\w+)/.exec(info)?.[1];

/** ioredis' error for a command that got no answer within `commandTimeout`. */
const isTimeout = (error: unknown) =>
  error instanceof Error && error.message === 'Command timed out';

/**
 * Notices when a Redis server behind the client is a new one (its `run_id` changed): a restart
 * or a failover, after which the sales it held may be gone (Redis here keeps nothing on disk) or
 * older than the truth.
 *
 * On a cluster it does so per master: every check reads `INFO server` on each master the client
 * routes slots to, and remembers the run_id that served each slot. A slot served by another
 * run_id than before (its master restarted, or a replica took over) is announced with the other
 * slots of the same change, and only the sales in those slots are concerned. Purchases are closed
 * per master too: from the moment the client's connection to a master drops until the master it
 * reconnects to is identified.
 *
 * A connection that stays open but gets no answer (a half-open TCP connection whose peer or path
 * is gone: a NAT or firewall that forgot the flow, a server frozen and failed over) is never
 * closed by ioredis itself: every command on it would time out, for as long as the socket lives.
 * So a check whose `INFO` times out drops that connection (the one server's: reconnect; a
 * master's: the cluster dials whoever serves its slots now), which closes its sales as any drop
 * does until the server behind the new connection is identified.
 */
@Injectable()
export class RedisWatchdogService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RedisWatchdogService.name);
  private timer?: NodeJS.Timeout;
  private readonly listeners: ((restart: RedisRestart) => void)[] = [];
  private readonly dropListeners: ((master: string) => void)[] = [];
  /** Serialises checks: each compares against what the previous one stored. */
  private checking?: Promise<void>;
  private checkAgain = false;

  // One server.
  private runId: string | null = null;
  /** The server behind the current connection has been identified since it connected. */
  private identified = false;
  /** Counts dropped connections, so that a reply from before a drop identifies nothing. */
  private drops = 0;

  // A cluster.
  /** The run_id that served each slot when last read. */
  private readonly runIdBySlot: (string | undefined)[] = new Array<string | undefined>(SLOT_COUNT);
  /** Masters (`host:port`) identified since the client's connection to them was made. */
  private readonly identifiedNodes = new Set<string>();
  private readonly nodeDrops = new Map<string, number>();
  private readonly watchedNodes = new WeakSet<Redis>();

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    @InjectConfig(redisConfig) private readonly config: RedisConfig,
  ) {}

  onModuleInit(): void {
    if (isCluster(this.redis)) {
      const cluster = this.redis;
      for (const node of cluster.nodes('all')) this.watchNode(node);
      cluster.on('+node', (node: Redis) => this.watchNode(node));
      cluster.on('-node', (node: Redis) => this.nodeDropped(nodeKey(node)));
      cluster.on('close', () => {
        for (const key of [...this.identifiedNodes]) this.nodeDropped(key);
      });
    } else {
      // Between a reconnect and the first run_id read, the server may be a new one holding an
      // old snapshot: nothing may be sold against it until it is identified.
      this.redis.on('close', () => {
        this.drops++;
        this.identified = false;
        for (const listener of this.dropListeners) listener('');
      });
    }
    this.redis.on('ready', () => void this.check());
    this.timer = setInterval(() => void this.check(), this.config.watchIntervalMs);
    this.timer.unref();
    void this.check();
  }

  /**
   * False from the moment the connection to a server holding this sale (any of its buckets) drops until the server
   * it reconnected to is known to be the same one (or its restart has been announced to the
   * listeners).
   */
  identifiedFor(goodsId: number, shards = 1): boolean {
    if (!isCluster(this.redis)) return this.identified;
    const cluster = this.redis;
    return allBucketKeys(goodsId, shards).every((keys) => {
      const master = cluster.slots[keySlot(keys.stock)]?.[0];
      return master !== undefined && this.identifiedNodes.has(master);
    });
  }

  onRestart(listener: (restart: RedisRestart) => void): void {
    this.listeners.push(listener);
  }

  /** Told each time the connection to the server (to a master: its `host:port`) drops. */
  onDrop(listener: (master: string) => void): void {
    this.dropListeners.push(listener);
  }

  /**
   * The masters holding this sale (`host:port`): its goods-wide keys' and, with several stock
   * buckets, every bucket's; [''] on a single server.
   */
  mastersOf(goodsId: number, shards = 1): string[] {
    if (!isCluster(this.redis)) return [''];
    const slots = this.redis.slots;
    const keys = [saleKeys(goodsId), ...(shards > 1 ? allBucketKeys(goodsId, shards) : [])];
    return [...new Set(keys.map((each) => slots[keySlot(each.stock)]?.[0] ?? ''))];
  }

  /** The masters (as mastersOf names them) not identified since their connection dropped. */
  unidentified(): string[] {
    if (!isCluster(this.redis)) return this.identified ? [] : [''];
    const masters = new Set(this.redis.slots.map((nodes) => nodes?.[0] ?? ''));
    return [...masters].filter((master) => !this.identifiedNodes.has(master));
  }

  /**
   * Reads the run_id of the server (of every master); tells the listeners of each change from the
   * run_id seen before.
   */
  async check(): Promise<void> {
    if (this.checking) {
      this.checkAgain = true;
      return this.checking;
    }
    this.checking = (async () => {
      do {
        this.checkAgain = false;
        if (isCluster(this.redis)) await this.checkCluster(this.redis);
        else await this.checkServer();
      } while (this.checkAgain);
    })().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async checkServer(): Promise<void> {
    const drops = this.drops;
    let current: string | undefined;
    try {
      current = runIdOf(await this.redis.info('server'));
    } catch (error) {
      // Down: nothing to compare yet; the purchase path answers 503 meanwhile. Silent: dropped.
      if (isTimeout(error)) this.dropSilent(this.redis as Redis, 'the server');
      return;
    }
    if (!current) return;
    const previous = this.runId;
    this.runId = current;
    if (previous !== null && previous !== current)
      this.announce({ previous, current, slots: 'all', detectedAt: Date.now() });
    if (drops === this.drops) this.identified = true;
  }

  private async checkCluster(cluster: Cluster): Promise<void> {
    const slotsByMaster = new Map<string, number[]>();
    cluster.slots.forEach((nodes, slot) => {
      const master = nodes?.[0];
      if (!master) return;
      const slots = slotsByMaster.get(master);
      if (slots) slots.push(slot);
      else slotsByMaster.set(master, [slot]);
    });
    const connected = new Map(cluster.nodes('master').map((node) => [nodeKey(node), node]));
    let missing = false;
    await Promise.all(
      [...slotsByMaster].map(async ([master, slots]) => {
        const node = connected.get(master);
        if (!node) {
          missing = true;
          return;
        }
        const drops = this.nodeDrops.get(master) ?? 0;
        let current: string | undefined;
        try {
          current = runIdOf(await node.info('server'));
        } catch (error) {
          // Down: its slots stay closed; the client answers 503 for them meanwhile. Silent:
          // dropped, and dialled again below.
          if (isTimeout(error)) {
            this.dropSilent(node, `master ${master}`);
            missing = true;
          }
          return;
        }
        if (!current) return;
        this.compareSlots(slots, current);
        if (drops === (this.nodeDrops.get(master) ?? 0)) this.identifiedNodes.add(master);
      }),
    );
    // A master the client dropped is not redialled by itself: learning the slot map again
    // connects to whoever serves its slots now (the same master back, or a promoted replica).
    if (missing) cluster.refreshSlotsCache();
  }

  /** Stores who serves these slots now; announces each change, grouped by the run_id before. */
  private compareSlots(slots: number[], current: string): void {
    const changed = new Map<string, Set<number>>();
    for (const slot of slots) {
      const previous = this.runIdBySlot[slot];
      this.runIdBySlot[slot] = current;
      if (previous === undefined || previous === current) continue;
      changed.set(previous, (changed.get(previous) ?? new Set()).add(slot));
    }
    for (const [previous, moved] of changed) {
      this.announce({ previous, current, slots: moved, detectedAt: Date.now() });
    }
  }

  /**
   * Drops a connection that got no answer within the command timeout; ioredis dials again (the
   * one server: its retry strategy; a cluster's master: the slot map, learnt again). The commands
   * it still held fail as after any drop: their outcome unknown to their callers.
   */
  private dropSilent(connection: Redis, what: string): void {
    this.logger.warn(`redis connection dropped: ${what} did not answer within the command timeout`);
    connection.disconnect(!isCluster(this.redis));
  }

  private announce(restart: RedisRestart): void {
    const where = restart.slots === 'all' ? '' : ` slots=${restart.slots.size}`;
    this.logger.error(
      `redis server changed: run_id ${restart.previous} -> ${restart.current}${where}`,
    );
    for (const listener of this.listeners) listener(restart);
  }

  private watchNode(node: Redis): void {
    if (this.watchedNodes.has(node)) return;
    this.watchedNodes.add(node);
    node.on('close', () => this.nodeDropped(nodeKey(node)));
  }

  private nodeDropped(key: string): void {
    this.nodeDrops.set(key, (this.nodeDrops.get(key) ?? 0) + 1);
    this.identifiedNodes.delete(key);
    for (const listener of this.dropListeners) listener(key);
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
