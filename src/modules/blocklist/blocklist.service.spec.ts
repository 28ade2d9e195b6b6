import { Logger } from '@nestjs/common';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { HttpConfig } from '../../config/http.config.js';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import type { RedisSubscriberService } from '../../infra/redis/redis-subscriber.service.js';
import type { BlocklistScripts } from './blocklist.scripts.js';
import { BlocklistStore } from './blocklist.store.js';
import { BlocklistService } from './blocklist.service.js';

/** A Redis whose HGETALL answers when the test says, and a subscriber the test speaks through. */
function fakes(stored: Record<string, string> = {}, trustedProxies: string[] = []) {
  const reads: ((value: Record<string, string>) => void)[] = [];
  const redis = {
    hgetall: vi.fn(() => new Promise<Record<string, string>>((resolve) => reads.push(resolve))),
    hset: vi.fn(async () => 1),
    hdel: vi.fn(async () => 1),
    publish: vi.fn(async () => 1),
  };
  let heard: (message: string) => void = () => undefined;
  const subscriber = {
    onBack: vi.fn(),
    listen: vi.fn(async (_channel: string, handler: (message: string) => void) => {
      heard = handler;
      return () => undefined;
    }),
  };
  const scripts = { prune: vi.fn(async () => 1) };
  const service = new BlocklistService(
    new BlocklistStore(redis as unknown as RedisClient, scripts as unknown as BlocklistScripts),
    subscriber as unknown as RedisSubscriberService,
    { trustedProxies } as HttpConfig,
  );
  return {
    service,
    redis,
    scripts,
    hear: (message: string) => heard(message),
    /** Answers every HGETALL sent so far with `stored`. */
    answerReads: async () => {
      for (const read of reads.splice(0)) read(stored);
      await vi.waitFor(() => undefined);
    },
  };
}

const userEntry = (value: string) => ({ type: 'user', value, reason: null, expiresAt: null });

describe('BlocklistService', () => {
  const services: BlocklistService[] = [];
  afterEach(() => services.splice(0).forEach((service) => service.onApplicationShutdown()));

  it('keeps a change heard while the hash was being read, which the read may not have seen', async () => {
    const f = fakes();
    services.push(f.service);
    f.service.onModuleInit();
    await vi.waitFor(() => expect(f.redis.hgetall).toHaveBeenCalled());

    f.hear(JSON.stringify({ set: userEntry('7') }));
    await f.answerReads();

    expect(f.service.blockedAs(7, '10.0.0.1')).toBe('user');
  });

  it('applies an announced entry and an announced removal without reading the hash', async () => {
    const f = fakes({ 'user:8': JSON.stringify(userEntry('8')) });
    services.push(f.service);
    f.service.onModuleInit();
    await f.answerReads();
    const reads = f.redis.hgetall.mock.calls.length;

    f.hear(JSON.stringify({ set: { ...userEntry('9'), type: 'ip', value: '10.0.0.9' } }));
    f.hear(JSON.stringify({ removed: { type: 'user', value: '8' } }));
    await f.service.add({ type: 'user', value: '10' });

    expect(f.service.blockedAs(8, '10.0.0.9')).toBe('ip');
    expect(f.service.blockedAs(8, '10.0.0.1')).toBeNull();
    expect(f.service.blockedAs(10, '10.0.0.1')).toBe('user');
    expect(f.redis.hgetall).toHaveBeenCalledTimes(reads);
    expect(f.redis.publish).toHaveBeenCalledWith(
      'seckill:blocklist-changed',
      JSON.stringify({ set: userEntry('10') }),
    );
  });

  it("refuses to block a trusted proxy's address, or a /64 overlapping one, and writes nothing", async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const f = fakes({}, ['127.0.0.1', '10.8.0.0/16', '2001:db8:5:6::1', '2001:db9::/32']);
    services.push(f.service);

    for (const value of [
      '127.0.0.1',
      '[::ffff:127.0.0.1]:80',
      '10.8.200.1',
      '2001:db8:5:6::ff',
      '2001:db9:1:2::/64',
    ]) {
      await expect(f.service.add({ type: 'ip', value, reason: 'x' })).rejects.toMatchObject({
        code: 'VALIDATION_FAILED',
      });
    }
    expect(f.redis.hset).not.toHaveBeenCalled();
    expect(f.redis.publish).not.toHaveBeenCalled();
    expect(warn).toHaveBeenCalledTimes(5);
    expect(warn.mock.calls[2][0]).toBe(
      `blocklist entry refused: ip=10.8.200.1 is a trusted proxy's address (TRUSTED_PROXIES 10.8.0.0/16) reason="x"`,
    );
    // Its neighbours, another /64 and a user are blocked as before.
    for (const value of ['127.0.0.2', '10.9.0.1', '2001:db8:5:7::1']) {
      await f.service.add({ type: 'ip', value });
    }
    await f.service.add({ type: 'user', value: '127' });
    expect(f.redis.hset).toHaveBeenCalledTimes(4);
    expect(f.service.blockedAs(undefined, '127.0.0.2')).toBe('ip');
    // A trusted proxy's own request is never refused by address, whatever the copy holds.
    expect(f.service.blockedAs(undefined, null)).toBeNull();
    expect(f.service.blockedAs(127, null)).toBe('user');
    warn.mockRestore();
  });

  it('reads the whole hash again on a notice it cannot apply (an older instance, or garbage)', async () => {
    const f = fakes();
    services.push(f.service);
    f.service.onModuleInit();
    await f.answerReads();
    const reads = f.redis.hgetall.mock.calls.length;

    f.hear('1');
    f.hear(JSON.stringify({ set: { type: 'user', value: '1', expiresAt: 'soon' } }));

    expect(f.redis.hgetall).toHaveBeenCalledTimes(reads + 2);
  });

  it('pages the live entries in expiry order, and refuses a cursor it never gave', async () => {
    const now = Date.now();
    const entry = (value: string, inMs: number | null) => ({
      ...userEntry(value),
      expiresAt: inMs === null ? null : new Date(now + inMs).toISOString(),
    });
    const stored = Object.fromEntries(
      [entry('1', null), entry('2', 50_000), entry('3', 10_000), entry('4', null)].map((e) => [
        `user:${e.value}`,
        JSON.stringify(e),
      ]),
    );
    const f = fakes(stored);
    services.push(f.service);
    f.service.onModuleInit();
    await f.answerReads();

    const first = await f.service.list(3);
    const second = await f.service.list(3, first.next!);

    expect(first.entries.map((e) => e.value)).toEqual(['3', '2', '1']);
    expect(f.scripts.prune).not.toHaveBeenCalled();
    expect(second).toEqual({ entries: [expect.objectContaining({ value: '4' })], next: null });
    await expect(f.service.list(3, 'bm90IGEgY3Vyc29y')).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });
  });

  it('prunes what it read as expired or unreadable, each as it was read (one written again is kept)', async () => {
    const lapsed = JSON.stringify({ ...userEntry('5'), expiresAt: new Date(0).toISOString() });
    const f = fakes({
      'user:5': lapsed,
      'user:6': 'not json',
      'user:7': JSON.stringify(userEntry('7')),
    });
    services.push(f.service);
    f.service.onModuleInit();
    await f.answerReads();

    expect(f.scripts.prune).toHaveBeenCalledWith('seckill:blocklist', [
      ['user:5', lapsed],
      ['user:6', 'not json'],
    ]);
    expect(f.service.blockedAs(5, '10.0.0.1')).toBeNull();
    expect(f.service.blockedAs(7, '10.0.0.1')).toBe('user');
  });
});
