import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { isIPv6 } from 'node:net';
import { addressIdentity, parseAddress } from '../../common/http/client-address.js';
import { DomainError, orUnavailable } from '../../common/errors/domain-error.js';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { RedisSubscriber } from '../../infra/redis/redis-subscriber.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';
import { BLOCKLIST_CHANNEL, BLOCKLIST_KEY } from '../../infra/redis/seckill-keys.js';

export type BlockType = 'ip' | 'user';

export interface BlockEntry {
  type: BlockType;
  /** A user id, or a client address as the rate limits count it (an IPv6 address by its /64). */
  value: string;
  reason: string | null;
  /** ISO-8601, or null for an entry that stays until deleted. */
  expiresAt: string | null;
}

export interface NewBlock {
  type: BlockType;
  value: string;
  ttlSeconds?: number;
  reason?: string;
}

/** A missed change message costs at most this long of a stale copy. */
const REFRESH_MS = 10_000;
const USER_ID = /^[1-9][0-9]{0,15}$/;

const field = (type: BlockType, value: string) => `${type}:${value}`;

/**
 * The operators' blocklist of users and client addresses, shared by every instance through
 * Redis (one hash) and expiring by itself. Each instance keeps a copy in memory, reloaded when
 * the change channel says so and every REFRESH_MS, so that checking a request costs no Redis
 * call at all: the purchase, token and challenge routes ask `isBlocked` before anything else.
 */
@Injectable()
export class BlocklistService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(BlocklistService.name);
  /** `type:value` → expiry in epoch ms (Infinity: until deleted). */
  private copy = new Map<string, number>();
  private refreshTimer?: NodeJS.Timeout;

  constructor(
    @Inject(REDIS_CLIENT) private readonly redis: RedisClient,
    private readonly subscriber: RedisSubscriber,
  ) {}

  onModuleInit(): void {
    void this.reload();
    // Changes missed while the pub/sub connection was down are caught up when it is back.
    this.subscriber.onBack(() => void this.reload());
    this.subscriber
      .listen(BLOCKLIST_CHANNEL, () => void this.reload())
      .then(
        () => void this.reload(),
        (error: Error) => this.logger.warn(`blocklist subscription failed: ${error.message}`),
      );
    this.refreshTimer = setInterval(() => void this.reload(), REFRESH_MS);
    this.refreshTimer.unref();
  }

  /**
   * What is blocked of this request now: its user, its client address (`request.clientAddress`,
   * already in the form entries are stored in), or nothing (null).
   */
  blockedAs(userId: number | undefined, clientAddress: string): BlockType | null {
    if (this.copy.size === 0) return null;
    if (userId !== undefined && this.active(field('user', String(userId)))) return 'user';
    return this.active(field('ip', clientAddress)) ? 'ip' : null;
  }

  async add(block: NewBlock): Promise<BlockEntry> {
    const entry: BlockEntry = {
      type: block.type,
      value: canonicalValue(block.type, block.value),
      reason: block.reason ?? null,
      expiresAt:
        block.ttlSeconds === undefined
          ? null
          : new Date(Date.now() + block.ttlSeconds * 1000).toISOString(),
    };
    await orUnavailable('Redis', () =>
      this.redis.hset(BLOCKLIST_KEY, field(entry.type, entry.value), JSON.stringify(entry)),
    );
    await this.changed();
    this.logger.log(
      `blocklisted: ${entry.type}=${entry.value} until=${entry.expiresAt ?? 'deleted'} reason=${JSON.stringify(entry.reason)}`,
    );
    return entry;
  }

  /** Every entry that has not expired, oldest expiry first; expired ones are dropped on the way. */
  async list(): Promise<BlockEntry[]> {
    const { live, expired } = await this.read();
    if (expired.length > 0) await this.redis.hdel(BLOCKLIST_KEY, ...expired).catch(() => 0);
    return live.sort(
      (a, b) =>
        expiryMs(a) - expiryMs(b) || field(a.type, a.value).localeCompare(field(b.type, b.value)),
    );
  }

  /** Unknown entries are fine: the answer is the same. */
  async remove(type: BlockType, value: string): Promise<void> {
    const removed = await orUnavailable('Redis', () =>
      this.redis.hdel(BLOCKLIST_KEY, field(type, canonicalValue(type, value))),
    );
    if (removed > 0) {
      await this.changed();
      this.logger.log(`blocklist entry removed: ${type}=${value}`);
    }
  }

  private active(key: string): boolean {
    const until = this.copy.get(key);
    return until !== undefined && until > Date.now();
  }

  /** Every instance (this one first) reloads its copy. */
  private async changed(): Promise<void> {
    await this.reload();
    await this.redis.publish(BLOCKLIST_CHANNEL, '1').catch(() => 0);
  }

  private async reload(): Promise<void> {
    try {
      const { live } = await this.read();
      this.copy = new Map(live.map((entry) => [field(entry.type, entry.value), expiryMs(entry)]));
    } catch (error) {
      // The copy stays as it was; the next refresh tries again.
      this.logger.warn(`blocklist not reloaded: ${(error as Error).message}`);
    }
  }

  private async read(): Promise<{ live: BlockEntry[]; expired: string[] }> {
    const stored = await this.redis.hgetall(BLOCKLIST_KEY);
    const live: BlockEntry[] = [];
    const expired: string[] = [];
    const now = Date.now();
    for (const [key, json] of Object.entries(stored)) {
      const entry = parseEntry(json);
      if (entry === null || expiryMs(entry) <= now) expired.push(key);
      else live.push(entry);
    }
    return { live, expired };
  }

  onApplicationShutdown(): void {
    clearInterval(this.refreshTimer);
  }
}

const expiryMs = (entry: BlockEntry) =>
  entry.expiresAt === null ? Number.POSITIVE_INFINITY : Date.parse(entry.expiresAt);

function parseEntry(json: string): BlockEntry | null {
  try {
    const entry = JSON.parse(json) as BlockEntry;
    return (entry.type === 'ip' || entry.type === 'user') && typeof entry.value === 'string'
      ? entry
      : null;
  } catch {
    return null;
  }
}

/**
 * The form a value is stored and matched in: a user id as digits, an address as requests are
 * resolved to (client-address.ts: port and brackets dropped, a mapped IPv6 address as its IPv4,
 * leading zeros read as decimal, IPv6 by its /64). Anything else is 400 VALIDATION_FAILED.
 */
export function canonicalValue(type: BlockType, value: string): string {
  if (type === 'user') {
    if (!USER_ID.test(value) || !Number.isSafeInteger(Number(value))) {
      throw new DomainError('VALIDATION_FAILED', 'A user block needs a positive integer user id');
    }
    return value;
  }
  // The listed form of an IPv6 entry is its /64, which is taken back as it is.
  const listed = value.endsWith('/64');
  const address = parseAddress(listed ? value.slice(0, -3) : value);
  if (address === null || (listed && !isIPv6(address))) {
    throw new DomainError('VALIDATION_FAILED', 'An ip block needs an IPv4 or IPv6 address');
  }
  return addressIdentity(address);
}
