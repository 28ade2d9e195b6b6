import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomHex } from '../../common/random/random-hex.js';
import type { BarrierStore } from './barrier-store.js';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import { barrierKeys } from '../../infra/redis/seckill-keys.js';
import { OrderPublisher } from './order.publisher.js';

/** A barrier's id: this many random bytes, in hex (DatabaseBarrierService's ids are longer). */
const ID_BYTES = 8;

/** How long a consumer's heartbeat counts: it beats every CONSUMER_TICK_MS. */
const HEARTBEAT_TTL_MS = 3_000;
/** A barrier not passed by then is dropped (its opener starts another). */
const BARRIER_TTL_MS = 600_000;
/** How often a consumer beats and looks for barriers to drain. */
export const CONSUMER_TICK_MS = 200;

/** A barrier this instance opened, and every consumer session seen alive since. */
export interface OpenBarrier {
  id: string;
  /**
   * When it was opened, by the clock its users compare it with: MySQL's (epoch ms) for the
   * fallback's DatabaseBarrierService, which rebuilds stamp `rebuilt_at` by; this process's monotonic
   * clock (performance.now()) for RedisBarrierStore, whose opener measures a span of its own time.
   */
  openedAt: number;
  seen: Set<string>;
}

export type BarrierState = 'passed' | 'waiting' | 'restart';

/** What a barrier's store holds of it (step 2 and 3 marks). */
export interface BarrierMarks {
  delivered: boolean;
  drained: (session: string) => boolean;
}

/**
 * Step 4, whatever store keeps the registry and the marks (Redis here; MySQL for the barrier
 * that opens the Redis-down fallback, fallback/database-barrier.service.ts).
 */
export async function judgeBarrier(
  barrier: OpenBarrier,
  marks: BarrierMarks,
  consumers: string[],
  countConsumers: () => Promise<number>,
): Promise<BarrierState> {
  for (const session of consumers) barrier.seen.add(session);
  if (
    [...barrier.seen].some((session) => !marks.drained(session) && !consumers.includes(session))
  ) {
    return 'restart';
  }
  if (!marks.delivered || !consumers.every(marks.drained)) return 'waiting';
  // A consumer the registry does not know yet (it just started, or runs an older version).
  const counted = await countConsumers();
  return counted <= consumers.filter(marks.drained).length ? 'passed' : 'waiting';
}

/**
 * A barrier through the orders queue: proof that every order message the broker took before it
 * has been settled (written, or dropped for good), whatever else keeps arriving. The rebuild of a
 * sale that Redis lost waits for one, opened after the loss: then MySQL holds every purchase the
 * lost Redis had accepted.
 *
 * 1. The opener records the barrier in Redis, with the consumers alive then (each consumer
 *    session beats in a registry), and publishes a barrier message B into the orders queue,
 *    confirmed.
 * 2. The queue hands out its messages in order (FIFO; a message given back is ready again, and
 *    in front of B or after it, it is then delivered again before B or counted below): when B is
 *    delivered, every message taken before B has been delivered to some consumer. The consumer
 *    that gets B marks it delivered, then acks it.
 * 3. Every consumer that sees B delivered fences its channel (a round trip on it: whatever the
 *    broker sent it before is in by then), notes how many deliveries it had received, and once
 *    each of those is settled (acked, or dead-lettered) marks the barrier drained by its session.
 * 4. The barrier has passed when B was delivered, every consumer session seen alive since step 1
 *    has drained it, and the broker counts no more consumers than have drained. A session that
 *    went away before draining had its unsettled messages given back to the queue, perhaps
 *    behind B: the barrier is then restarted (a new B). So is one whose channel was re-opened
 *    (its session changes with it). A session beats before it consumes, and stays listed for
 *    a heartbeat's life after its last beat, longer than between two checks: none goes unseen.
 *
 * A message delivered before B is thus settled by a consumer that drained, or went back to the
 * queue and restarted the barrier. Messages published after B are not waited for, so a crowd on
 * other sales does not hold a rebuild back (a quiet period on the queue would).
 */
@Injectable()
export class RedisBarrierStore implements BarrierStore {
  private readonly logger = new Logger(RedisBarrierStore.name);

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly lua: LuaScriptsService,
    private readonly publisher: OrderPublisher,
  ) {}

  /** Its ids are ID_BYTES in hex (DatabaseBarrierService's are longer). */
  owns(id: string): boolean {
    return id.length === ID_BYTES * 2;
  }

  /** Opens a barrier and publishes its message; throws when the broker did not confirm it. */
  async open(): Promise<OpenBarrier> {
    const id = randomHex(ID_BYTES);
    const { consumers } = await this.tick({ open: id });
    if (!(await this.publisher.publishBarrier(id))) {
      throw new Error('the barrier message was not confirmed');
    }
    this.logger.log(`order barrier opened: id=${id} consumers=${consumers.length}`);
    return { id, openedAt: performance.now(), seen: new Set(consumers) };
  }

  /** Whether the barrier has passed, must be waited for, or must be opened again. */
  async check(barrier: OpenBarrier): Promise<BarrierState> {
    const fields = await this.redis.hgetall(barrierKeys.barrier(barrier.id));
    // Lost (its Redis server restarted) or expired.
    if (fields.openedAt === undefined) return 'restart';
    return judgeBarrier(
      barrier,
      {
        delivered: fields.delivered !== undefined,
        drained: (session) => fields[`drained:${session}`] !== undefined,
      },
      (await this.tick()).consumers,
      () => this.publisher.ordersConsumers(),
    );
  }

  /**
   * A consumer session's heartbeat, a barrier's opening, or a read without either
   * (lua/barrier-tick.lua); returns the sessions alive and the barriers open.
   */
  async tick(
    options: { session?: string; open?: string } = {},
  ): Promise<{ consumers: string[]; open: string[] }> {
    const [consumers, open] = (await this.lua.run(
      'barrierTick',
      barrierKeys.consumers,
      barrierKeys.open,
      barrierKeys.barrier(options.open ?? ''),
      options.session ?? '',
      options.open ? BARRIER_TTL_MS : HEARTBEAT_TTL_MS,
      options.open ?? '',
    )) as [string[], string[]];
    return { consumers, open };
  }

  async isDelivered(id: string): Promise<boolean> {
    return (await this.redis.hexists(barrierKeys.barrier(id), 'delivered')) === 1;
  }

  /** Step 2: the barrier message reached a consumer. Only an open barrier is marked. */
  async markDelivered(id: string): Promise<void> {
    await this.mark(id, 'delivered');
  }

  /** Step 3: this session has settled everything it received before the barrier's delivery. */
  async markDrained(id: string, session: string): Promise<void> {
    await this.mark(id, `drained:${session}`);
  }

  private async mark(id: string, field: string): Promise<void> {
    const key = barrierKeys.barrier(id);
    // HSET only on a hash that exists: a barrier that expired is not brought back half-empty.
    if ((await this.redis.exists(key)) === 1) await this.redis.hset(key, field, Date.now());
  }
}
