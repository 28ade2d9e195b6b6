import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { orUnavailable } from '../../common/errors/domain-error.js';
import { LuaScriptsService } from './lua-scripts.service.js';
import type { RedisClient } from './redis-client.js';
import { REDIS_CLIENT } from './redis.constants.js';

/** A slot outlives its stream by this much before Redis drops it on its own. */
const SLOT_MARGIN_MS = 60_000;

/**
 * The slots that bound a kind of event stream per user and per client address across every
 * instance (lua/stream-slot.lua): one per open stream, given back when it ends, lapsing on its
 * own after the stream's longest life when an instance dies holding it.
 */
@Injectable()
export class StreamSlotsService {
  constructor(
    private readonly lua: LuaScriptsService,
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
  ) {}

  /**
   * Takes one of `key`'s at most `limit` slots for a stream that lives at most `lifetimeMs`: the
   * function giving it back, or null when all are held. 503 when Redis does not answer.
   */
  async take(key: string, limit: number, lifetimeMs: number): Promise<(() => void) | null> {
    const streamId = randomUUID();
    const taken = await orUnavailable('Redis', () =>
      this.lua.run('streamSlot', key, streamId, limit, lifetimeMs + SLOT_MARGIN_MS),
    );
    if (taken !== 1) return null;
    // Best effort: a slot not given back lapses after the stream's lifetime.
    return () => void this.redis.zrem(key, streamId).catch(() => undefined);
  }
}
