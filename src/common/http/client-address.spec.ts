import { Logger } from '@nestjs/common';
import Fastify from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  addressIdentity,
  installClientAddress,
  parseAddress,
  resolveClient,
  trustedProxies,
  trustedProxyCovered,
} from './client-address.js';

describe('parseAddress', () => {
  it.each([
    ['10.60.0.1', '10.60.0.1'],
    ['10.60.0.1:5555', '10.60.0.1'],
    ['[10.60.0.1]', '10.60.0.1'],
    ['[10.60.0.1]:80', '10.60.0.1'],
    ['[::ffff:10.60.0.1]', '10.60.0.1'],
    ['::ffff:10.60.0.1', '10.60.0.1'],
    ['::FFFF:a3c:1', '10.60.0.1'],
    ['0:0:0:0:0:ffff:10.60.0.1', '10.60.0.1'],
    ['[::ffff:010.060.000.001]:1', '10.60.0.1'],
    ['010.060.000.001', '10.60.0.1'],
    ['10.60.0.01', '10.60.0.1'],
    ['  10.60.0.1 ', '10.60.0.1'],
    ['2001:db8:1:2::5', '2001:db8:1:2::5'],
    ['[2001:db8:1:2::5]:443', '2001:db8:1:2::5'],
    ['2001:DB8:0001:0002:0:0:0:5', '2001:db8:1:2::5'],
    ['fe80::1%eth0', 'fe80::1'],
    ['::1', '::1'],
    ['[::1]:8080', '::1'],
  ])('reads %j as %s', (written, canonical) => {
    expect(parseAddress(written)).toBe(canonical);
  });

  it.each([
    '',
    'garbage',
    'unknown',
    '10.60.0',
    '10.60.0.256',
    '10.60.0.1.1',
    '0x0a.0.0.1',
    '167772161',
    '10.1',
    '1000.1.1.1',
    '10.60.0.1:65536',
    '10.60.0.1:',
    '10.60.0.1:port',
    '[10.60.0.1',
    '[10.60.0.1]:99999',
    '[2001:db8::1]x',
    '2001:db8::g',
    '::ffff:10.60.0.300',
    '1.2.3.4, 5.6.7.8',
    '"10.60.0.1"',
    `10.60.0.1${' '.repeat(80)}x`,
  ])('refuses %j as no address', (written) => {
    expect(parseAddress(written)).toBeNull();
  });
});

describe('addressIdentity', () => {
  it('groups IPv6 by its /64 and keeps IPv4 whole', () => {
    expect(addressIdentity('2001:db8:1:2::5')).toBe('2001:db8:1:2::/64');
    expect(addressIdentity('2001:db8:1:2:ffff::9')).toBe('2001:db8:1:2::/64');
    expect(addressIdentity('10.60.0.1')).toBe('10.60.0.1');
  });
});

describe('trustedProxies', () => {
  const trust = trustedProxies(['127.0.0.1', '10.0.0.0/8', '2001:db8:ff::/48']);

  it('trusts listed addresses and subnets in any spelling of them', () => {
    for (const address of [
      '127.0.0.1',
      '::ffff:127.0.0.1',
      '10.9.8.7',
      '[10.9.8.7]:1',
      '2001:db8:ff:1::1',
      '[2001:DB8:FF::2]:443',
    ]) {
      expect({ address, trusted: trust(address) }).toEqual({ address, trusted: true });
    }
  });

  it('trusts nothing else, and nothing that is no address', () => {
    for (const address of ['127.0.0.2', '11.0.0.1', '2001:db8:fe::1', 'garbage', '']) {
      expect({ address, trusted: trust(address) }).toEqual({ address, trusted: false });
    }
  });

  it('matches IPv4 subnets at every prefix length, and IPv4 addresses against IPv6 entries', () => {
    const cases: [string[], string, boolean][] = [
      [['0.0.0.0/0'], '203.0.113.9', true],
      [['192.168.1.1/32'], '192.168.1.1', true],
      [['192.168.1.1/32'], '192.168.1.2', false],
      [['192.168.0.0/23'], '192.168.1.255', true],
      [['192.168.0.0/23'], '192.168.2.0', false],
      [['128.0.0.0/1'], '255.255.255.255', true],
      [['128.0.0.0/1'], '127.255.255.255', false],
      [['::ffff:10.0.0.0/104'], '10.200.0.1', true],
      [['::/0'], '10.200.0.1', true],
      [['2001:db8::/32'], '10.200.0.1', false],
    ];
    for (const [entries, address, trusted] of cases) {
      expect({ entries, address, trusted: trustedProxies(entries)(address) }).toEqual({
        entries,
        address,
        trusted,
      });
    }
  });

  it('gives the same verdicts when asked again, also after more addresses than it remembers', () => {
    const asked = ['10.1.2.3', '11.1.2.3', '::ffff:10.1.2.3', 'garbage'];
    const first = asked.map(trust);
    for (let i = 0; i < 10_000; i++) trust(`172.16.${i >> 8}.${i & 255}`);
    expect(asked.map(trust)).toEqual(first);
    expect(first).toEqual([true, false, true, false]);
  });
});

describe('resolveClient', () => {
  const trust = trustedProxies(['127.0.0.1', '10.9.0.0/16']);

  it('is the peer when the peer is not a trusted proxy, whatever it forwards', () => {
    expect(resolveClient('203.0.113.9', '198.51.100.1', trust)).toEqual({
      identity: '203.0.113.9',
    });
    expect(resolveClient('::ffff:127.0.0.1', '198.51.100.1', null)).toEqual({
      identity: '127.0.0.1',
    });
  });

  it('is the nearest forwarded address that is not a trusted proxy, in canonical form', () => {
    expect(resolveClient('127.0.0.1', '10.60.0.1:5555', trust).identity).toBe('10.60.0.1');
    expect(resolveClient('::ffff:127.0.0.1', '[::ffff:10.60.0.1]', trust).identity).toBe(
      '10.60.0.1',
    );
    expect(resolveClient('127.0.0.1', '[2001:db8:1:2::5]:443', trust).identity).toBe(
      '2001:db8:1:2::/64',
    );
    // Made-up hops before the one the proxy wrote are not believed; trusted hops are passed.
    expect(resolveClient('127.0.0.1', '6.6.6.6, 198.51.100.7, 10.9.1.1:80', trust).identity).toBe(
      '198.51.100.7',
    );
    expect(resolveClient('127.0.0.1', ['6.6.6.6', '198.51.100.8'], trust).identity).toBe(
      '198.51.100.8',
    );
  });

  it('counts a forwarded value that is no address as the trusted proxy that wrote it', () => {
    expect(resolveClient('127.0.0.1', 'garbage', trust)).toEqual({
      identity: '127.0.0.1',
      trustedProxy: true,
      unreadable: { value: 'garbage', proxy: '127.0.0.1' },
    });
    expect(resolveClient('127.0.0.1', 'garbage, 10.9.3.3', trust)).toEqual({
      identity: '10.9.3.3',
      trustedProxy: true,
      unreadable: { value: 'garbage', proxy: '10.9.3.3' },
    });
    expect(resolveClient('127.0.0.1', '198.51.100.9, ', trust)).toMatchObject({
      identity: '127.0.0.1',
      trustedProxy: true,
    });
  });

  it("is a trusted proxy's own request without a header, for an empty one or only trusted hops", () => {
    for (const [forwarded, identity] of [
      [undefined, '127.0.0.1'],
      ['', '127.0.0.1'],
      ['10.9.1.1', '10.9.1.1'],
      ['10.9.2.2:80, 127.0.0.1', '10.9.2.2'],
    ]) {
      expect(resolveClient('127.0.0.1', forwarded, trust)).toEqual({
        identity,
        trustedProxy: true,
      });
    }
    expect(resolveClient(undefined, '198.51.100.1', trust)).toEqual({ identity: 'unknown' });
    // Nobody trusted: no request is a proxy's, whatever its peer.
    expect(resolveClient('127.0.0.1', undefined, null)).toEqual({ identity: '127.0.0.1' });
  });
});

describe('trustedProxyCovered', () => {
  const covered = trustedProxyCovered([
    '127.0.0.1',
    '::ffff:10.8.0.0/112',
    '2001:db8:5:6::1',
    '2001:db8:7::/48',
    '2001:db9:1:2::/96',
  ]);

  it('names the entry an IPv4 address or an IPv6 /64 overlaps', () => {
    expect(covered('127.0.0.1')).toBe('127.0.0.1');
    expect(covered('10.8.3.4')).toBe('::ffff:10.8.0.0/112');
    // The /64 of a trusted address, one inside a trusted prefix, one holding a trusted prefix.
    expect(covered('2001:db8:5:6::/64')).toBe('2001:db8:5:6::1');
    expect(covered('2001:db8:7:9::/64')).toBe('2001:db8:7::/48');
    expect(covered('2001:db9:1:2::/64')).toBe('2001:db9:1:2::/96');
  });

  it('names none for addresses and /64s beside them', () => {
    for (const identity of ['127.0.0.2', '10.9.0.1', '2001:db8:5:7::/64', '2001:db8:8::/64']) {
      expect(covered(identity)).toBeNull();
    }
    expect(trustedProxyCovered([])('127.0.0.1')).toBeNull();
  });
});

describe('installClientAddress', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  async function appAnswering() {
    const fastify = Fastify();
    installClientAddress(fastify, trustedProxies(['127.0.0.1']));
    fastify.get('/', async (request) =>
      request.clientIsTrustedProxy ? `proxy ${request.clientAddress}` : request.clientAddress,
    );
    await fastify.ready();
    return fastify;
  }

  it('gives each request its resolved address', async () => {
    const fastify = await appAnswering();
    const from = async (forwarded?: string) =>
      (
        await fastify.inject({
          url: '/',
          headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
        })
      ).body;

    expect(await from('[::ffff:10.60.0.1]:80')).toBe('10.60.0.1');
    expect(await from()).toBe('proxy 127.0.0.1');
    await fastify.close();
  });

  it('logs a forwarded value that is no address on one line, at most once every 10 s', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const fastify = await appAnswering();
    const garbage = (value: string) =>
      fastify.inject({ url: '/', headers: { 'x-forwarded-for': value } });

    for (let i = 0; i < 5; i++) {
      expect((await garbage(`junk\n${i}`)).body).toBe('proxy 127.0.0.1');
    }
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toBe(
      'forwarded client address unreadable, counted as its proxy\'s: proxy=127.0.0.1 value="junk\\n0" unlogged=0',
    );
    vi.advanceTimersByTime(10_000);
    await garbage('more junk');
    expect(warn).toHaveBeenCalledTimes(2);
    expect(warn.mock.calls[1][0]).toMatch(/value="more junk" unlogged=4$/);
    await fastify.close();
  });
});
