import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  adminAuth,
  bearer,
  counter,
  createSale,
  startApp,
  Stores,
  waitFor,
  type TestApp,
} from './support/harness.js';
import { addressSpellings } from './support/address-spellings.js';
import { PrivateRedis } from './support/private-redis.js';

/**
 * User ids and addresses of their own (9,1xx,xxx; 198.18.0.0/15 and 2001:db8:91::/48), since
 * every test file shares the test Redis and a blocked user would be blocked for them too.
 */
describe('blocklist and autoban', () => {
  const stores = new Stores();
  const apps: TestApp[] = [];

  const start = async (env: Record<string, string> = {}) => {
    const app = await startApp({ TRUSTED_PROXIES: '127.0.0.1', ...env });
    apps.push(app);
    return app;
  };

  afterEach(async () => {
    while (apps.length > 0) await apps.pop()!.close();
    const fields = (await stores.redis.hkeys('seckill:blocklist')).filter((f) =>
      // The test proxy's own address too, were it ever blocked: it would refuse every test after.
      /^(user:91\d{5}|ip:198\.1[89]\.|ip:2001:db8:91:|ip:127\.0\.0\.1$)/.test(f),
    );
    if (fields.length > 0) await stores.redis.hdel('seckill:blocklist', ...fields);
    const keys = [
      ...(await stores.redis.keys('seckill:autoban:*')),
      ...(await stores.redis.keys('seckill:throttle:*')),
    ];
    if (keys.length > 0) await stores.redis.del(...keys);
  });

  afterAll(async () => {
    await stores.close();
  });

  const block = (t: TestApp, body: object) =>
    t.http.post('/api/v1/admin/blocklist').set('Authorization', adminAuth()).send(body);
  const purchase = (t: TestApp, goodsId: number, userId: number, from = '198.19.0.1') =>
    t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(userId))
      .set('X-Forwarded-For', from);

  it('should refuse a blocked user with 403 on the purchase, token and challenge routes, and take nothing', async () => {
    const t = await start();
    const goodsId = await createSale(t.http, { stock: 5 });
    const created = await block(t, { type: 'user', value: '9100001', reason: 'scalper' }).expect(
      201,
    );
    expect(created.body).toEqual({
      type: 'user',
      value: '9100001',
      reason: 'scalper',
      expiresAt: null,
    });

    const refused = await purchase(t, goodsId, 9100001).expect(403);
    const token = await t.http
      .get(`/api/v1/seckill/${goodsId}/token`)
      .set('Authorization', bearer(9100001))
      .expect(403);
    await t.http
      .get(`/api/v1/seckill/${goodsId}/challenge`)
      .set('Authorization', bearer(9100001))
      .expect(403);

    expect(refused.body).toEqual({
      statusCode: 403,
      code: 'FORBIDDEN',
      message: 'This user or client address is blocked',
    });
    expect(token.body.code).toBe('FORBIDDEN');
    expect(await stores.redisStock(goodsId)).toBe(5);
    expect(await stores.redisBuyers(goodsId)).toEqual({});
    // Reads are not refused, and another user from the same address buys.
    await t.http
      .get(`/api/v1/seckill/${goodsId}/result`)
      .set('Authorization', bearer(9100001))
      .expect(200);
    await purchase(t, goodsId, 9100002).expect(202);
    expect(await counter(t.app, 'seckill_blocked_total', 'user')).toBeGreaterThanOrEqual(3);
  });

  it('should refuse a blocked client address, whoever the user, even for a sold-out sale', async () => {
    const t = await start();
    const goodsId = await createSale(t.http, { stock: 1 });
    await purchase(t, goodsId, 9100010, '198.19.1.1').expect(202);
    await purchase(t, goodsId, 9100011, '198.19.1.1').expect(409); // the memo knows: SOLD_OUT
    await block(t, { type: 'ip', value: '198.19.1.2' }).expect(201);

    const blocked = await purchase(t, goodsId, 9100012, '198.19.1.2').expect(403);
    const other = await purchase(t, goodsId, 9100013, '198.19.1.3').expect(409);

    expect(blocked.body.code).toBe('FORBIDDEN');
    expect(other.body.code).toBe('SOLD_OUT');
  });

  it('should block an IPv6 client by its /64, and list and unblock it in that form', async () => {
    const t = await start();
    const goodsId = await createSale(t.http, { stock: 5 });
    const created = await block(t, { type: 'ip', value: '2001:db8:7:7::1' }).expect(201);
    expect(created.body.value).toBe('2001:db8:7:7::/64');

    await purchase(t, goodsId, 9100020, '2001:db8:7:7:abcd::9').expect(403);
    await t.http
      .delete(`/api/v1/admin/blocklist/ip/${encodeURIComponent('2001:db8:7:7::/64')}`)
      .set('Authorization', adminAuth())
      .expect(204);
    await purchase(t, goodsId, 9100020, '2001:db8:7:7:abcd::9').expect(202);
  });

  it('should list live entries, lift an entry when deleted, and let a timed one lapse by itself', async () => {
    const t = await start();
    const goodsId = await createSale(t.http, { stock: 5 });
    await block(t, { type: 'user', value: '9100030' }).expect(201);
    await block(t, { type: 'user', value: '9100031', ttlSeconds: 1 }).expect(201);

    const listed = await t.http
      .get('/api/v1/admin/blocklist')
      .set('Authorization', adminAuth())
      .expect(200);
    expect(listed.body).toEqual(
      expect.arrayContaining([
        { type: 'user', value: '9100030', reason: null, expiresAt: null },
        { type: 'user', value: '9100031', reason: null, expiresAt: expect.any(String) },
      ]),
    );
    await purchase(t, goodsId, 9100031).expect(403);
    await t.http
      .delete('/api/v1/admin/blocklist/user/9100030')
      .set('Authorization', adminAuth())
      .expect(204);

    await purchase(t, goodsId, 9100030).expect(202);
    await waitFor(async () => (await purchase(t, goodsId, 9100031)).status === 202, {
      what: 'the one-second block to lapse',
    });
    const after = await t.http
      .get('/api/v1/admin/blocklist')
      .set('Authorization', adminAuth())
      .expect(200);
    expect(after.body.map((entry: { value: string }) => entry.value)).not.toContain('9100031');
  });

  it('should apply a block made on one instance on another at once', async () => {
    const [a, b] = [await start(), await start()];
    const goodsId = await createSale(a.http, { stock: 5 });

    await block(a, { type: 'user', value: '9100040' }).expect(201);

    // Probed on the token route, which takes no stock, until the other instance has it.
    await waitFor(
      async () =>
        (
          await b.http
            .get(`/api/v1/seckill/${goodsId}/token`)
            .set('Authorization', bearer(9100040))
            .set('X-Forwarded-For', '198.19.0.1')
        ).status === 403,
      { timeoutMs: 5_000, what: 'the other instance to refuse the blocked user' },
    );
    await purchase(b, goodsId, 9100040).expect(403);
    expect(await stores.redisStock(goodsId)).toBe(5);
  });

  it('should refuse malformed entries with 400 (a null or zero ttlSeconds too) and non-admins with 403, and accept deleting an unknown entry', async () => {
    const t = await start();

    for (const body of [
      { type: 'host', value: '1.2.3.4' },
      { type: 'user', value: 'abc' },
      { type: 'user', value: '0' },
      { type: 'ip', value: '300.1.1.1' },
      { type: 'ip', value: '1.2.3.4', ttlSeconds: 0 },
      { type: 'ip', value: '1.2.3.4', ttlSeconds: null },
      { type: 'ip', value: '1.2.3.4', ttlSeconds: '60' },
      { type: 'ip', value: '1.2.3.4', extra: true },
    ]) {
      const response = await block(t, body).expect(400);
      expect(response.body.code).toBe('VALIDATION_FAILED');
    }
    await t.http
      .post('/api/v1/admin/blocklist')
      .set('Authorization', bearer(9100050))
      .send({ type: 'user', value: '9100051' })
      .expect(403);
    await t.http
      .delete('/api/v1/admin/blocklist/user/9100052')
      .set('Authorization', adminAuth())
      .expect(204);
    await t.http
      .delete('/api/v1/admin/blocklist/host/1')
      .set('Authorization', adminAuth())
      .expect(400);
    expect(await stores.redis.hexists('seckill:blocklist', 'user:9100051')).toBe(0);
    expect(await stores.redis.hexists('seckill:blocklist', 'ip:1.2.3.4')).toBe(0);
  });

  it('should blocklist a user throttled more than AUTOBAN_THRESHOLD times in the window, and count it', async () => {
    const t = await start({
      THROTTLE_WINDOW_MS: '60000',
      THROTTLE_PURCHASE_USER_LIMIT: '1',
      THROTTLE_BLOCK_MS: '1000',
      AUTOBAN_THRESHOLD: '3',
      AUTOBAN_WINDOW_SECONDS: '60',
      AUTOBAN_SECONDS: '120',
    });
    const goodsId = await createSale(t.http, { stock: 5 });
    await purchase(t, goodsId, 9100060).expect(202);

    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await purchase(t, goodsId, 9100060)).status);
    expect(statuses).toEqual([429, 429, 429, 429]);

    await waitFor(async () => (await purchase(t, goodsId, 9100060)).status === 403, {
      what: 'the autoban to apply',
    });
    const listed = await t.http
      .get('/api/v1/admin/blocklist')
      .set('Authorization', adminAuth())
      .expect(200);
    const entry = (listed.body as { value: string; reason: string; expiresAt: string }[]).find(
      (e) => e.value === '9100060',
    );
    expect(entry?.reason).toMatch(/autoban: throttled 4 times within 60 s/);
    expect(Date.parse(entry!.expiresAt) - Date.now()).toBeGreaterThan(100_000);
    expect(await counter(t.app, 'seckill_autobans_total', 'user')).toBe(1);
    // Another user from the same address is not caught up in it.
    await purchase(t, goodsId, 9100061).expect(202);
  });

  it("should refuse to block a trusted proxy's address, in any form or by a /64 overlapping it, with 400 and one log line, storing nothing", async () => {
    const t = await start({ TRUSTED_PROXIES: '127.0.0.1,198.18.80.0/24,2001:db8:91:9::1' });
    const goodsId = await createSale(t.http, { stock: 5 });
    const warn = vi.spyOn(Logger.prototype, 'warn');
    const before = await stores.redis.hlen('seckill:blocklist');

    try {
      for (const value of [
        '127.0.0.1',
        '[::ffff:127.0.0.1]:80',
        '198.18.80.77',
        '2001:db8:91:9::5',
      ]) {
        const refused = await block(t, { type: 'ip', value, reason: 'flood' }).expect(400);
        expect(refused.body).toEqual({
          statusCode: 400,
          code: 'VALIDATION_FAILED',
          message: expect.stringContaining('trusted proxy'),
        });
      }
      const refusals = warn.mock.calls
        .map(([line]) => String(line))
        .filter((line) => line.startsWith('blocklist entry refused:'));
      expect(refusals).toEqual([
        `blocklist entry refused: ip=127.0.0.1 is a trusted proxy's address (TRUSTED_PROXIES 127.0.0.1) reason="flood"`,
        `blocklist entry refused: ip=127.0.0.1 is a trusted proxy's address (TRUSTED_PROXIES 127.0.0.1) reason="flood"`,
        `blocklist entry refused: ip=198.18.80.77 is a trusted proxy's address (TRUSTED_PROXIES 198.18.80.0/24) reason="flood"`,
        `blocklist entry refused: ip=2001:db8:91:9::/64 is a trusted proxy's address (TRUSTED_PROXIES 2001:db8:91:9::1) reason="flood"`,
      ]);
    } finally {
      warn.mockRestore();
    }
    expect(await stores.redis.hlen('seckill:blocklist')).toBe(before);
    await purchase(t, goodsId, 9_100_070, '').expect(202);
    // Its neighbours, and a user behind it, are blocked as before.
    await block(t, { type: 'ip', value: '198.18.81.1' }).expect(201);
    await block(t, { type: 'ip', value: '2001:db8:91:a::1' }).expect(201);
    await block(t, { type: 'user', value: '9100071' }).expect(201);
    await purchase(t, goodsId, 9_100_071, '').expect(403);
  });

  it('should never autoban a trusted proxy whose buyers it names not, flooding past the threshold, and still autoban a client or user behind it', async () => {
    // Two tiers: 198.18.70.9 is an inner proxy the test client (the outer one) forwards for.
    const t = await start({
      TRUSTED_PROXIES: '127.0.0.1,198.18.70.9',
      THROTTLE_WINDOW_MS: '60000',
      THROTTLE_PURCHASE_IP_LIMIT: '1',
      THROTTLE_PURCHASE_USER_LIMIT: '1',
      THROTTLE_BLOCK_MS: '1000',
      AUTOBAN_THRESHOLD: '3',
      AUTOBAN_WINDOW_SECONDS: '60',
      AUTOBAN_SECONDS: '120',
    });
    const goodsId = await createSale(t.http, { stock: 20 });
    const own = (userId: number) =>
      t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));

    // Five buyers each through the outer proxy naming nobody and the inner one naming garbage:
    // five times the per-address limit, past the threshold, were they counted on its address.
    const unnamed: number[] = [];
    for (let i = 0; i < 5; i++) unnamed.push((await own(9_170_200 + i)).status);
    for (let i = 0; i < 5; i++) {
      unnamed.push((await purchase(t, goodsId, 9_170_210 + i, 'garbage, 198.18.70.9')).status);
    }
    expect(unnamed).toEqual(Array(10).fill(202));

    // A client the proxy names is counted on its address and autobanned, as before.
    const named: number[] = [];
    for (let i = 0; i < 5; i++) {
      named.push((await purchase(t, goodsId, 9_170_220 + i, '198.18.74.1')).status);
    }
    expect(named).toEqual([202, 429, 429, 429, 429]);
    // And a user through the proxy on their own budget.
    const hammering: number[] = [];
    for (let i = 0; i < 5; i++) hammering.push((await own(9_170_230)).status);
    expect(hammering).toEqual([202, 429, 429, 429, 429]);
    await waitFor(
      async () => (await purchase(t, goodsId, 9_170_240, '198.18.74.1')).status === 403,
      {
        what: 'the named client to be autobanned',
      },
    );
    await waitFor(async () => (await own(9_170_230)).status === 403, {
      what: 'the hammering user to be autobanned',
    });

    // A later buyer through either proxy is served; neither proxy was ever listed.
    await own(9_170_250).expect(202);
    await purchase(t, goodsId, 9_170_251, 'garbage, 198.18.70.9').expect(202);
    const fields = await stores.redis.hkeys('seckill:blocklist');
    expect(fields).toEqual(expect.arrayContaining(['ip:198.18.74.1', 'user:9170230']));
    expect(fields).not.toContain('ip:127.0.0.1');
    expect(fields).not.toContain('ip:198.18.70.9');
    // Counted just after the entry is applied.
    for (const type of ['ip', 'user']) {
      await waitFor(async () => (await counter(t.app, 'seckill_autobans_total', type)) > 0);
    }
    expect(await counter(t.app, 'seckill_autobans_total', 'ip')).toBe(1);
    expect(await counter(t.app, 'seckill_autobans_total', 'user')).toBe(1);
  });

  it('should list the entries a page at a time, each X-Next-Cursor leading to the next page, oldest expiry first', async () => {
    const t = await start();
    // 105 of this test's own: past the default page of 100; the later ones lapse sooner.
    const ids = Array.from({ length: 105 }, (_, i) => String(9_190_001 + i));
    for (const [i, value] of ids.entries()) {
      await block(t, { type: 'user', value, ttlSeconds: 10_000 - i }).expect(201);
    }
    const list = (query: Record<string, string>) =>
      t.http.get('/api/v1/admin/blocklist').query(query).set('Authorization', adminAuth());

    const first = await list({}).expect(200);
    expect(first.body).toHaveLength(100);
    expect(first.headers['x-next-cursor']).toEqual(expect.any(String));

    const pages: { value: string; expiresAt: string }[][] = [];
    let cursor: string | undefined;
    do {
      const page = await list({ limit: '40', ...(cursor ? { cursor } : {}) }).expect(200);
      expect(page.body.length).toBeLessThanOrEqual(40);
      pages.push(page.body);
      cursor = page.headers['x-next-cursor'];
    } while (cursor !== undefined);
    const ours = pages.flat().filter((entry) => ids.includes(entry.value));
    // Every entry once, in expiry order: the last one created lapses first.
    expect(ours.map((entry) => entry.value)).toEqual([...ids].reverse());
    const expiries = pages.flat().map((entry) => Date.parse(entry.expiresAt ?? '9999'));
    expect(expiries).toEqual([...expiries].sort((a, b) => a - b));

    const bad: Record<string, string>[] = [
      { limit: '0' },
      { limit: '1001' },
      { limit: 'ten' },
      { cursor: 'x' },
    ];
    for (const query of bad) {
      const refused = await list(query).expect(400);
      expect({ query, code: refused.body.code }).toEqual({ query, code: 'VALIDATION_FAILED' });
    }
  });

  describe('client addresses written in any form, behind a trusted proxy', () => {
    /** Polled on the admin list: a purchase polled instead would be throttled into a ban itself. */
    const bannedEntry = (t: TestApp, value: string) =>
      waitFor(
        async () => {
          const listed = await t.http
            .get('/api/v1/admin/blocklist')
            .set('Authorization', adminAuth())
            .expect(200);
          return (listed.body as { value: string; reason: string }[]).find(
            (e) => e.value === value,
          );
        },
        { what: `the autoban of ${value}` },
      );

    it('should refuse a blocked IPv4 address written with a port, brackets, as mapped IPv6 or with leading zeros', async () => {
      const t = await start();
      const goodsId = await createSale(t.http, { stock: 20 });
      await block(t, { type: 'ip', value: '198.18.60.1' }).expect(201);

      const forms = addressSpellings('198.18.60.1');
      const answers = [];
      for (const [i, form] of forms.entries()) {
        const answer = await purchase(t, goodsId, 9_170_001 + i, form);
        answers.push({ form, status: answer.status, code: answer.body.code });
      }

      expect(answers).toEqual(forms.map((form) => ({ form, status: 403, code: 'FORBIDDEN' })));
      await purchase(t, goodsId, 9_170_010, '198.18.60.2:5555').expect(202);
      expect(await stores.redisStock(goodsId)).toBe(19);
    });

    it('should refuse a blocked IPv6 client written in brackets with a port, by its /64', async () => {
      const t = await start();
      const goodsId = await createSale(t.http, { stock: 5 });
      await block(t, { type: 'ip', value: '2001:db8:91:2::5' }).expect(201);

      for (const [i, form] of [
        '[2001:db8:91:2::5]:443',
        '[2001:DB8:91:2::5]',
        '2001:0db8:0091:0002:0000:0000:0000:0009',
      ].entries()) {
        const answer = await purchase(t, goodsId, 9_170_020 + i, form);
        expect({ form, status: answer.status }).toEqual({ form, status: 403 });
      }
      await purchase(t, goodsId, 9_170_029, '[2001:db8:91:3::5]:443').expect(202);
    });

    it('should store a block given in any form as the one form requests are matched in', async () => {
      const t = await start();
      const goodsId = await createSale(t.http, { stock: 5 });

      const stored = [];
      for (const value of [
        '[::ffff:198.18.61.1]:80',
        '198.018.061.002',
        '[2001:db8:91:4::1]:443',
      ]) {
        stored.push((await block(t, { type: 'ip', value }).expect(201)).body.value);
      }
      expect(stored).toEqual(['198.18.61.1', '198.18.61.2', '2001:db8:91:4::/64']);
      await purchase(t, goodsId, 9_170_030, '198.18.61.2').expect(403);
      await purchase(t, goodsId, 9_170_031, '198.18.61.1:1234').expect(403);
      // Lifted by another form of it.
      await t.http
        .delete(`/api/v1/admin/blocklist/ip/${encodeURIComponent('198.18.61.01:9')}`)
        .set('Authorization', adminAuth())
        .expect(204);
      await purchase(t, goodsId, 9_170_031, '198.18.61.1').expect(202);
      for (const value of ['198.18.61.1:99999', '10.1', '[198.18.61.1', 'garbage']) {
        const refused = await block(t, { type: 'ip', value }).expect(400);
        expect(refused.body.code).toBe('VALIDATION_FAILED');
      }
    });

    it('should autoban an address throttled through a different port each time', async () => {
      const forwarded = (i: number) => `198.18.73.1:${5_555 + i}`;
      const banned = '198.18.73.1';
      // Another form of the banned address is refused too.
      const refused = '[::ffff:198.18.73.1]';
      const served = '198.18.73.2';
      const t = await start({
        THROTTLE_WINDOW_MS: '60000',
        THROTTLE_PURCHASE_IP_LIMIT: '1',
        THROTTLE_BLOCK_MS: '1000',
        AUTOBAN_THRESHOLD: '3',
        AUTOBAN_WINDOW_SECONDS: '60',
        AUTOBAN_SECONDS: '120',
      });
      const goodsId = await createSale(t.http, { stock: 10 });

      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        statuses.push((await purchase(t, goodsId, 9_170_100 + i, forwarded(i))).status);
      }
      expect(statuses).toEqual([202, 429, 429, 429, 429]);

      const entry = await bannedEntry(t, banned);
      expect(entry.reason).toMatch(/autoban: throttled 4 times/);
      // Refused as soon as this instance's copy has it (each try before is one more 429).
      await waitFor(async () => (await purchase(t, goodsId, 9_170_110, refused)).status === 403, {
        what: `${refused} to be refused`,
      });
      await purchase(t, goodsId, 9_170_111, served).expect(202);
      await waitFor(async () => (await counter(t.app, 'seckill_autobans_total', 'ip')) > 0);
      expect(await counter(t.app, 'seckill_autobans_total', 'ip')).toBe(1);
    });
  });
});

describe('blocklist writes on a Redis of their own', () => {
  let redis: PrivateRedis;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    for (let i = 0; i < 2; i++) apps.push(await startApp({ REDIS_URL: redis.url }));
  });

  afterAll(async () => {
    for (const app of apps) await app.close();
    await redis.kill();
  });

  /** HGETALL calls this Redis has served: a full read of the blocklist is one. */
  async function hgetallCalls(): Promise<number> {
    const stats = new Stores(new Redis(redis.url));
    const info = await stats.redis.info('commandstats');
    await stats.close();
    return Number(/cmdstat_hgetall:calls=(\d+)/.exec(info)?.[1] ?? 0);
  }

  it('should apply each write on every instance without reading the whole list again', async () => {
    const [a, b] = apps;
    const goodsId = await createSale(a.http, { stock: 5 });
    const listed = async (t: TestApp) =>
      (
        (
          await t.http
            .get('/api/v1/admin/blocklist')
            .query({ limit: '1000' })
            .set('Authorization', adminAuth())
        ).body as { value: string }[]
      ).map((entry) => entry.value);
    // Each instance has read the list at start (and on its subscription).
    await waitFor(async () => (await hgetallCalls()) >= 4, { what: 'the start-up reads' });
    const before = await hgetallCalls();

    for (let i = 0; i < 30; i++) {
      await a.http
        .post('/api/v1/admin/blocklist')
        .set('Authorization', adminAuth())
        .send({ type: 'user', value: String(9_195_001 + i), ttlSeconds: 600 })
        .expect(201);
    }
    for (let i = 0; i < 10; i++) {
      await a.http
        .delete(`/api/v1/admin/blocklist/user/${9_195_001 + i}`)
        .set('Authorization', adminAuth())
        .expect(204);
    }
    await waitFor(async () => (await listed(b)).length === 20, { what: 'instance b to have them' });
    await b.http
      .get(`/api/v1/seckill/${goodsId}/token`)
      .set('Authorization', bearer(9_195_030))
      .expect(403);
    await b.http
      .get(`/api/v1/seckill/${goodsId}/token`)
      .set('Authorization', bearer(9_195_001))
      .expect(200);
    expect(await listed(a)).toEqual(await listed(b));

    // 40 writes and the lists: at most the periodic backstop's read on each instance (every 10 s).
    expect((await hgetallCalls()) - before).toBeLessThanOrEqual(2);
  });
});
