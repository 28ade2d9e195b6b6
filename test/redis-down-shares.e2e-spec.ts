import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createSale, startApp, waitFor, type TestApp } from './support/harness.js';
import { PrivateRedis } from './support/private-redis.js';
import { proxyInFront, type TcpProxy } from './support/tcp-proxy.js';

/**
 * Counts the commands the app sends MySQL through the proxy: each starts a packet with sequence
 * number 0 (a 3-byte length, then the sequence byte), followed on each connection.
 */
function countCommands(proxy: TcpProxy): { readonly sent: number } {
  const tally = { sent: 0 };
  const pending = new WeakMap<Socket, Buffer>();
  proxy.tapClient((chunk, client) => {
    let bytes = Buffer.concat([pending.get(client) ?? Buffer.alloc(0), chunk]);
    while (bytes.length >= 4) {
      const length = bytes.readUIntLE(0, 3);
      if (bytes.length < 4 + length) break;
      if (bytes[3] === 0) tally.sent++;
      bytes = bytes.subarray(4 + length);
    }
    pending.set(client, bytes);
  });
  return tally;
}

const answerOf = (response: { status: number; body: { code?: string } }) =>
  response.status === 202 ? '202' : `${response.status} ${response.body.code ?? ''}`.trim();

describe('Redis down: one account flooding the MySQL fallback and its reads', () => {
  let redis: PrivateRedis;
  let mysql: TcpProxy;
  let commands: { readonly sent: number };
  let t: TestApp;

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    const through = await proxyInFront(process.env.DATABASE_URL!, 3306);
    mysql = through.proxy;
    commands = countCommands(mysql);
    t = await startApp({
      REDIS_URL: redis.url,
      DATABASE_URL: through.url,
      REDIS_WATCH_INTERVAL_MS: '200',
      PUBLISH_CONFIRM_TIMEOUT_MS: '1000',
      TRUSTED_PROXIES: '127.0.0.1',
      // A minute's window: the budgets' share is then the same however long the flood takes
      // on a loaded box.
      THROTTLE_WINDOW_MS: '60000',
    });
  });

  afterAll(async () => {
    await t.close();
    await mysql.close();
    await redis.kill();
  });

  // An address of each buyer's own (a valid one: an octet over 255 would count as the proxy's).
  const address = (userId: number) => `10.5.${(userId >> 8) & 255}.${userId & 255}`;
  const buy = (goodsId: number, userId: number) =>
    t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(userId))
      .set('X-Forwarded-For', address(userId));
  const result = (goodsId: number, userId: number) =>
    t.http
      .get(`/api/v1/seckill/${goodsId}/result`)
      .set('Authorization', bearer(userId))
      .set('X-Forwarded-For', address(userId));

  it("should hold one user's flood of purchases and result reads to its own share, other buyers still served, MySQL sent fewer commands than the flood", async () => {
    const attacker = 70_000;
    const goodsId = await createSale(t.http, { stock: 200 });
    await buy(goodsId, attacker).expect(202);
    await waitFor(async () => (await result(goodsId, attacker)).body.status === 'SUCCESS', {
      intervalMs: 250,
      what: "the attacker's order",
    });
    await redis.kill();
    // Open once the fallback sells: each try by a buyer of its own, so none spends a budget.
    let opener = 72_000;
    await waitFor(async () => (await buy(goodsId, opener++)).status === 202, {
      intervalMs: 100,
      what: 'the fallback to sell',
    });

    const before = commands.sent;
    const startedAt = Date.now();
    const waves = 20;
    const perWave = 40;
    const flood = { purchases: [] as string[], reads: [] as string[], retryAfter: [] as string[] };
    const others: string[] = [];
    for (let wave = 0; wave < waves; wave++) {
      const [purchases, reads, buyers] = await Promise.all([
        Promise.all(Array.from({ length: perWave }, () => buy(goodsId, attacker))),
        Promise.all(Array.from({ length: perWave }, () => result(goodsId, attacker))),
        // Three other buyers a wave, each once, from addresses of their own.
        Promise.all([0, 1, 2].map((i) => buy(goodsId, 71_000 + wave * 3 + i))),
      ]);
      flood.purchases.push(...purchases.map(answerOf));
      flood.reads.push(...reads.map((r) => (r.status === 200 ? '200' : answerOf(r))));
      for (const refused of [...purchases, ...reads].filter((r) => r.status === 429)) {
        flood.retryAfter.push(String(refused.headers['retry-after']));
      }
      others.push(...buyers.map(answerOf));
    }
    const sent = commands.sent - before;
    console.log(
      `FIGURES seconds=${(Date.now() - startedAt) / 1000} sent=${sent} purchases429=${flood.purchases.filter((a) => a.startsWith('429')).length} reads429=${flood.reads.filter((a) => a.startsWith('429')).length} others=${JSON.stringify(others.reduce((m: Record<string, number>, a) => ({ ...m, [a]: (m[a] ?? 0) + 1 }), {}))} purchases=${JSON.stringify(flood.purchases.reduce((m: Record<string, number>, a) => ({ ...m, [a]: (m[a] ?? 0) + 1 }), {}))}`,
    );

    // Every other buyer bought: none turned away because the attacker held the fallback.
    expect(others).toEqual(Array(waves * 3).fill('202'));
    for (const answer of flood.purchases) {
      expect(['409 ALREADY_PURCHASED', '429 TOO_MANY_REQUESTS']).toContain(answer);
    }
    for (const answer of flood.reads) expect(['200', '429 TOO_MANY_REQUESTS']).toContain(answer);
    expect(flood.retryAfter.every((seconds) => Number(seconds) >= 1)).toBe(true);
    const floodSize = waves * perWave * 2;
    // Without the share each flooding request reaches MySQL (a purchase is four commands).
    expect(sent).toBeLessThan(floodSize);
    expect(flood.purchases.filter((a) => a === '429 TOO_MANY_REQUESTS').length).toBeGreaterThan(
      waves * perWave * 0.8,
    );
    expect(flood.reads.filter((a) => a === '429 TOO_MANY_REQUESTS').length).toBeGreaterThan(
      waves * perWave * 0.5,
    );
  });
});
