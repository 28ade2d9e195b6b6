import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { isIPv6 } from 'node:net';
import {
  addressIdentity,
  parseAddress,
  trustedProxyCovered,
} from '../../common/http/client-address.js';
import { DomainError, orUnavailable, UnavailableError } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { httpConfig, type HttpConfig } from '../../config/http.config.js';
import { RedisSubscriberService } from '../../infra/redis/redis-subscriber.service.js';
import { BLOCKLIST_CHANNEL } from '../../infra/redis/seckill-keys.js';
import { BlocklistStore } from './blocklist.store.js';

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
/** Entries a page of the list holds unless asked for fewer, and at most. */
export const LIST_PAGE = { default: 100, max: 1_000 } as const;

const field = (type: BlockType, value: string) => `${type}:${value}`;

/** An entry of the copy, with its expiry in epoch ms (Infinity: until deleted). */
interface Held {
  entry: BlockEntry;
  field: string;
  until: number;
}

/**
 * What the change channel carries: the one entry written or removed, so that every instance
 * applies it to its copy as it is, without reading the list again.
 */
type Change = { set: BlockEntry } | { removed: { type: BlockType; value: string } };

/** Where a page starts: after this entry in the list's order. */
interface Cursor {
  until: number;
  field: string;
}

export interface BlockPage {
  entries: BlockEntry[];
  /** The cursor of the next page; null on the last. */
  next: string | null;
}

/**
 * The operators' blocklist of users and client addresses, shared by every instance through
 * Redis (one hash) and expiring by itself. Each instance keeps a copy in memory, so that checking
 * a request costs no Redis call at all: the purchase, token and challenge routes ask `blockedAs`
 * before anything else. A write changes the hash and announces that one entry on the change
 * channel, which every instance applies to its copy; a full reload of the hash runs only at start,
 * every REFRESH_MS and after the pub/sub connection is back, to catch what a lost message missed.
 * The list is read from the copy too, a page at a time.
 */
@Injectable()
export class BlocklistService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(BlocklistService.name);
  private copy = new Map<string, Held>();
  /** The copy in the list's order, built on the first read after a change. */
  private ordered: Held[] | null = null;
  private loaded = false;
  /** For each reload reading the hash: the changes applied meanwhile, applied again after it. */
  private readonly reloadsUnderWay = new Set<Change[]>();
  private refreshTimer?: NodeJS.Timeout;
  /** The TRUSTED_PROXIES entry an ip entry would cover: such an entry is never written. */
  private readonly coveredProxy: (identity: string) => string | null;

  constructor(
    private readonly store: BlocklistStore,
    private readonly subscriber: RedisSubscriberService,
    @InjectConfig(httpConfig) http: HttpConfig,
  ) {
    this.coveredProxy = trustedProxyCovered(http.trustedProxies);
  }

  onModuleInit(): void {
    void this.reload();
    // Changes missed while the pub/sub connection was down are caught up when it is back.
    this.subscriber.onBack(() => void this.reload());
    this.subscriber
      .listen(BLOCKLIST_CHANNEL, (message) => this.heard(message))
      .then(
        () => void this.reload(),
        (error: Error) => this.logger.warn(`blocklist subscription failed: ${error.message}`),
      );
    this.refreshTimer = setInterval(() => void this.reload(), REFRESH_MS);
    this.refreshTimer.unref();
  }

  /**
   * What is blocked of this request now: its user, its client address (`countedAddress`: already
   * in the form entries are stored in, null for a trusted proxy's own request, which is never
   * blocked by address), or nothing (null).
   */
  blockedAs(userId: number | undefined, clientAddress: string | null): BlockType | null {
    if (this.copy.size === 0) return null;
    if (userId !== undefined && this.active(field('user', String(userId)))) return 'user';
    return clientAddress !== null && this.active(field('ip', clientAddress)) ? 'ip' : null;
  }

  /**
   * Writes an entry (an operator's or the autoban's). An address a trusted proxy may have (one of
   * TRUSTED_PROXIES, or an IPv6 /64 overlapping one) is refused with 400 VALIDATION_FAILED and one
   * log line: every buyer behind that proxy would be refused with it.
   */
  async add(block: NewBlock): Promise<BlockEntry> {
    const value = canonicalValue(block.type, block.value);
    const proxy = block.type === 'ip' ? this.coveredProxy(value) : null;
    if (proxy !== null) {
      this.logger.warn(
        `blocklist entry refused: ip=${value} is a trusted proxy's address (TRUSTED_PROXIES ${proxy}) reason=${JSON.stringify(block.reason ?? null)}`,
      );
      throw new DomainError(
        'VALIDATION_FAILED',
        "A trusted proxy's address (TRUSTED_PROXIES) is never blocked: block the client address it forwards for, or the user",
      );
    }
    const entry: BlockEntry = {
      type: block.type,
      value,
      reason: block.reason ?? null,
      expiresAt:
        block.ttlSeconds === undefined
          ? null
          : new Date(Date.now() + block.ttlSeconds * 1000).toISOString(),
    };
    await orUnavailable('Redis', () =>
      this.store.save(field(entry.type, entry.value), JSON.stringify(entry)),
    );
    await this.changed({ set: entry });
    this.logger.log(
      `blocklisted: ${entry.type}=${entry.value} until=${entry.expiresAt ?? 'deleted'} reason=${JSON.stringify(entry.reason)}`,
    );
    return entry;
  }

  /**
   * A page of the entries that have not expired, oldest expiry first (then by type and value),
   * from this instance's copy: a write made on another instance shows once its message is heard.
   * `cursor` is a page's `next`; a cursor this list never gave is 400 VALIDATION_FAILED.
   */
  async list(limit: number = LIST_PAGE.default, cursor?: string): Promise<BlockPage> {
    const after = cursor === undefined ? null : decodeCursor(cursor);
    if (!this.loaded) await this.reload();
    if (!this.loaded) throw new UnavailableError('The blocklist could not be read from Redis');
    const ordered = (this.ordered ??= [...this.copy.values()].sort(byListOrder));
    const now = Date.now();
    // Expired entries sort first; the next reload drops them.
    let start = firstIndex(ordered, (held) => held.until > now);
    if (after)
      start = Math.max(
        start,
        firstIndex(ordered, (held) => byListOrder(held, after) > 0),
      );
    const page = ordered.slice(start, start + limit);
    const last = page.at(-1);
    return {
      entries: page.map((held) => held.entry),
      next: last && start + limit < ordered.length ? encodeCursor(last) : null,
    };
  }

  /** Unknown entries are fine: the answer is the same. */
  async remove(type: BlockType, value: string): Promise<void> {
    const canonical = canonicalValue(type, value);
    const removed = await orUnavailable('Redis', () => this.store.delete(field(type, canonical)));
    if (removed > 0) {
      await this.changed({ removed: { type, value: canonical } });
      this.logger.log(`blocklist entry removed: ${type}=${canonical}`);
    }
  }

  private active(key: string): boolean {
    const held = this.copy.get(key);
    return held !== undefined && held.until > Date.now();
  }

  /** This instance applies the change at once, and every other one when it hears it. */
  private async changed(change: Change): Promise<void> {
    this.apply(change);
    await this.store.announce(JSON.stringify(change)).catch(() => undefined);
  }

  private heard(message: string): void {
    const change = parseChange(message);
    // Not a change this version announces (an older instance's bare notice): read it all.
    if (change === null) void this.reload();
    else this.apply(change);
  }

  private apply(change: Change): void {
    for (const during of this.reloadsUnderWay) during.push(change);
    if ('set' in change) {
      const key = field(change.set.type, change.set.value);
      this.copy.set(key, { entry: change.set, field: key, until: expiryMs(change.set) });
    } else {
      this.copy.delete(field(change.removed.type, change.removed.value));
    }
    this.ordered = null;
  }

  private async reload(): Promise<void> {
    const during: Change[] = [];
    this.reloadsUnderWay.add(during);
    try {
      const stored = await this.store.readAll();
      const copy = new Map<string, Held>();
      const expired: [string, string][] = [];
      const now = Date.now();
      for (const [key, json] of Object.entries(stored)) {
        const entry = parseEntry(json);
        const until = entry === null ? 0 : expiryMs(entry);
        if (entry === null || until <= now) expired.push([key, json]);
        else copy.set(key, { entry, field: key, until });
      }
      this.reloadsUnderWay.delete(during);
      this.copy = copy;
      this.ordered = null;
      this.loaded = true;
      // A change heard since this read was sent may be newer than what it saw; one made after
      // the read is announced after it was sent, so none is lost.
      for (const change of during) this.apply(change);
      // A failed prune is tried again by the next reload.
      if (expired.length > 0) {
        await this.store.prune(expired).catch(() => 0);
      }
    } catch (error) {
      // The copy stays as it was; the next refresh tries again.
      this.logger.warn(`blocklist not reloaded: ${(error as Error).message}`);
    } finally {
      this.reloadsUnderWay.delete(during);
    }
  }

  onApplicationShutdown(): void {
    clearInterval(this.refreshTimer);
  }
}

const byListOrder = (a: Cursor, b: Cursor) =>
  a.until - b.until || (a.field < b.field ? -1 : a.field > b.field ? 1 : 0);

/** The first index whose entry passes `test`, which is false then true along the list. */
function firstIndex(ordered: Held[], test: (held: Held) => boolean): number {
  let low = 0;
  let high = ordered.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (test(ordered[middle])) high = middle;
    else low = middle + 1;
  }
  return low;
}

function encodeCursor(held: Held): string {
  const until = Number.isFinite(held.until) ? held.until : null;
  return Buffer.from(JSON.stringify([until, held.field])).toString('base64url');
}

function decodeCursor(cursor: string): Cursor {
  try {
    const [until, key] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown[];
    if ((until === null || Number.isSafeInteger(until)) && typeof key === 'string') {
      return { until: until === null ? Number.POSITIVE_INFINITY : (until as number), field: key };
    }
  } catch {
    // Answered below.
  }
  throw new DomainError('VALIDATION_FAILED', 'cursor is not one this list gave');
}

function parseChange(message: string): Change | null {
  try {
    const change = JSON.parse(message) as Partial<{ set: unknown; removed: unknown }>;
    if (change.set !== undefined) {
      const entry = entryOf(change.set);
      return entry && { set: entry };
    }
    const removed = change.removed as { type?: unknown; value?: unknown } | undefined;
    if ((removed?.type === 'ip' || removed?.type === 'user') && typeof removed.value === 'string') {
      return { removed: { type: removed.type, value: removed.value } };
    }
  } catch {
    // Not JSON: answered below.
  }
  return null;
}

const expiryMs = (entry: BlockEntry) =>
  entry.expiresAt === null ? Number.POSITIVE_INFINITY : Date.parse(entry.expiresAt);

function parseEntry(json: string): BlockEntry | null {
  try {
    return entryOf(JSON.parse(json));
  } catch {
    return null;
  }
}

/** An entry as stored or announced, or null for anything else (it would expire at NaN). */
function entryOf(value: unknown): BlockEntry | null {
  const entry = value as Partial<BlockEntry> | null;
  const { type, reason, expiresAt } = entry ?? {};
  const valid =
    (type === 'ip' || type === 'user') &&
    typeof entry?.value === 'string' &&
    (reason === null || typeof reason === 'string') &&
    (expiresAt === null || (typeof expiresAt === 'string' && !Number.isNaN(Date.parse(expiresAt))));
  return valid ? (entry as BlockEntry) : null;
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
