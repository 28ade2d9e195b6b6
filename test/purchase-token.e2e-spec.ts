import { describe, expect, it } from 'vitest';
import { RedisLocksService } from '../src/infra/redis/redis-locks.service.js';
import { saleKeys } from '../src/infra/redis/seckill-keys.js';
import { adminAuth, bearer, createSale, waitFor, useApp } from './support/harness.js';

describe('one-time purchase tokens (SECKILL_REQUIRE_TOKEN=true)', () => {
  // No sold-out memo: it would answer a sold-out sale's purchases before their token is read.
  const t = useApp({
    SECKILL_REQUIRE_TOKEN: 'true',
    SECKILL_TOKEN_EARLY_MS: '5000',
    SOLD_OUT_MEMO_MS: '0',
  });
  const stores = t.stores;

  const tokenFor = async (goodsId: number, userId: number): Promise<string> => {
    const response = await t.http
      .get(`/api/v1/seckill/${goodsId}/token`)
      .set('Authorization', bearer(userId))
      .expect(200);
    expect(Date.parse(response.body.expiresAt)).toBeGreaterThan(Date.now());
    return response.body.token as string;
  };

  const buy = (goodsId: number, userId: number, purchaseToken?: string) => {
    const call = t.http.post(`/api/v1/seckill/${goodsId}`).set('Authorization', bearer(userId));
    return purchaseToken ? call.set('X-Seckill-Token', purchaseToken) : call;
  };

  const preheat = (goodsId: number) =>
    t.http
      .post(`/api/v1/admin/goods/${goodsId}/preheat`)
      .set('Authorization', adminAuth())
      .expect(200);

  async function expectUntouched(goodsId: number, stock: number) {
    expect(await stores.redisStock(goodsId)).toBe(stock);
    expect(await stores.redisBuyers(goodsId)).toEqual({});
    expect(await stores.orders(goodsId)).toHaveLength(0);
  }

  it('should refuse a purchase without a token with 403 and change nothing', async () => {
    const goodsId = await createSale(t.http, { stock: 3 });

    const response = await buy(goodsId, 701).expect(403);

    expect(response.body).toEqual({
      statusCode: 403,
      code: 'FORBIDDEN',
      message: expect.stringMatching(/token is required/),
    });
    await expectUntouched(goodsId, 3);
  });

  it("should refuse another user's token with 403, and leave it usable by its owner", async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    const owners = await tokenFor(goodsId, 702);

    const stolen = await buy(goodsId, 703, owners).expect(403);

    expect(stolen.body.message).toMatch(/another user/);
    await expectUntouched(goodsId, 3);
    await buy(goodsId, 702, owners).expect(202);
  });

  it("should refuse another goods' token and a made-up one with 403", async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    const other = await createSale(t.http, { stock: 3 });
    const forOther = await tokenFor(other, 704);

    expect((await buy(goodsId, 704, forOther).expect(403)).body.message).toMatch(/not valid/);
    expect((await buy(goodsId, 704, 'A'.repeat(43)).expect(403)).body.code).toBe('FORBIDDEN');
    expect((await buy(goodsId, 704, 'short').expect(403)).body.code).toBe('FORBIDDEN');
    await expectUntouched(goodsId, 3);
  });

  it('should accept a fresh token once and refuse it when used again', async () => {
    const goodsId = await createSale(t.http, { stock: 3, perUserLimit: 2 });
    const fresh = await tokenFor(goodsId, 705);

    await buy(goodsId, 705, fresh).expect(202);
    await waitFor(async () => (await stores.orders(goodsId)).length === 1, { what: 'the order' });
    const replayed = await buy(goodsId, 705, fresh).expect(403);

    expect(replayed.body.message).toMatch(/already used/);
    expect(await stores.redisStock(goodsId)).toBe(2);
    expect(await stores.orders(goodsId)).toHaveLength(1);
  });

  it('should let only one of two concurrent purchases carrying the same token through', async () => {
    const goodsId = await createSale(t.http, { stock: 3 });
    const fresh = await tokenFor(goodsId, 706);

    const statuses = (await Promise.all([buy(goodsId, 706, fresh), buy(goodsId, 706, fresh)])).map(
      (response) => response.status,
    );

    // The loser meets the purchase lock (409, token left alone) or, once the winner is done, the
    // spent token (403); never a second purchase.
    expect(statuses.filter((status) => status === 202)).toHaveLength(1);
    expect([403, 409]).toContain(statuses.find((status) => status !== 202));
    expect(await stores.redisBuyers(goodsId)).toEqual({ '706': '1' });
  });

  it('should leave the token usable after a refusal that is not final, and spend it on the retry that is', async () => {
    const goodsId = await createSale(t.http, { stock: 3, preheat: false });
    const fresh = await tokenFor(goodsId, 707);
    const buyWithKey = () => buy(goodsId, 707, fresh).set('Idempotency-Key', 'retry-707');

    expect((await buyWithKey().expect(409)).body.code).toBe('NOT_PREHEATED');
    await preheat(goodsId);
    // A concurrent click holds the purchase lock: not the buyer's fault either.
    const lock = await t.app.get(RedisLocksService).tryLockPurchase(saleKeys(goodsId), 707, 5_000);
    expect((await buyWithKey().expect(409)).body.code).toBe('DUPLICATE_REQUEST');
    await lock!.release();

    const accepted = await buyWithKey().expect(202);
    expect(accepted.body.status).toBe('QUEUED');
    const again = await buy(goodsId, 707, fresh).expect(403);
    expect(again.body.message).toMatch(/already used/);
  });

  it('should spend the token on a SOLD_OUT answer', async () => {
    const goodsId = await createSale(t.http, { stock: 1 });
    await buy(goodsId, 708, await tokenFor(goodsId, 708)).expect(202);
    const late = await tokenFor(goodsId, 709);

    expect((await buy(goodsId, 709, late).expect(409)).body.code).toBe('SOLD_OUT');
    expect((await buy(goodsId, 709, late).expect(403)).body.message).toMatch(/already used/);
  });

  it('should issue tokens only inside the window, or SECKILL_TOKEN_EARLY_MS before it', async () => {
    const early = await createSale(t.http, { startsInMs: 3_000 });
    const upcoming = await createSale(t.http, { startsInMs: 60_000 });
    const ended = await createSale(t.http, { startsInMs: -10_000, lastsMs: 5_000 });

    await tokenFor(early, 707);
    const tooEarly = await t.http
      .get(`/api/v1/seckill/${upcoming}/token`)
      .set('Authorization', bearer(707))
      .expect(409);
    expect(tooEarly.body.code).toBe('SALE_NOT_STARTED');
    const late = await t.http
      .get(`/api/v1/seckill/${ended}/token`)
      .set('Authorization', bearer(707))
      .expect(409);
    expect(late.body.code).toBe('SALE_ENDED');
    const missing = await t.http
      .get('/api/v1/seckill/987654321/token')
      .set('Authorization', bearer(707))
      .expect(404);
    expect(missing.body.code).toBe('GOODS_NOT_FOUND');
  });

  it('should honour a token issued early once the sale opens', async () => {
    const goodsId = await createSale(t.http, { startsInMs: 2_000, stock: 2 });
    const early = await tokenFor(goodsId, 708);

    await waitFor(
      async () => (await t.http.get(`/api/v1/goods/${goodsId}`)).body.status === 'ACTIVE',
      { what: 'the sale to open', intervalMs: 100 },
    );

    await buy(goodsId, 708, early).expect(202);
  });

  it('should require a user for the token route and rate-limit it', async () => {
    await t.http.get('/api/v1/seckill/1/token').expect(401);
    const goodsId = await createSale(t.http);
    const statuses = (
      await Promise.all(
        Array.from({ length: 20 }, () =>
          t.http.get(`/api/v1/seckill/${goodsId}/token`).set('Authorization', bearer(709)),
        ),
      )
    ).map((response) => response.status);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(10);
  });

  it('should document the token route and the purchase headers in Swagger', async () => {
    const spec = (await t.http.get('/docs-json').expect(200)).body;
    expect(spec.paths['/api/v1/seckill/{goodsId}/token'].get).toBeDefined();
    const headers = spec.paths['/api/v1/seckill/{goodsId}'].post.parameters
      .filter((parameter: { in: string }) => parameter.in === 'header')
      .map((parameter: { name: string }) => parameter.name);
    expect(headers).toEqual(expect.arrayContaining(['X-Seckill-Token', 'Idempotency-Key']));
  });

  it("should refuse a token to a queue sale's buyer the waiting room has not admitted, and give one once admitted", async () => {
    const goodsId = await createSale(t.http, {
      stock: 1,
      startsInMs: 1_000,
      queue: { admitPerSecond: 100, admissionTtlSeconds: 60 },
    });
    for (const userId of [731, 732]) {
      await t.http
        .post(`/api/v1/seckill/${goodsId}/queue`)
        .set('Authorization', bearer(userId))
        .expect(200);
    }
    // Stock 1: one of the two is admitted, the other waits.
    const states = await waitFor(
      async () => {
        const both = await Promise.all(
          [731, 732].map(async (userId) => {
            const standing = await t.http
              .get(`/api/v1/seckill/${goodsId}/queue`)
              .set('Authorization', bearer(userId))
              .expect(200);
            return { userId, state: standing.body.state as string };
          }),
        );
        return both.some((b) => b.state === 'ADMITTED') ? both : null;
      },
      { what: 'an admission' },
    );
    const admitted = states.find((s) => s.state === 'ADMITTED')!.userId;
    const waiting = states.find((s) => s.state === 'WAITING')!.userId;

    const refused = await t.http
      .get(`/api/v1/seckill/${goodsId}/token`)
      .set('Authorization', bearer(waiting))
      .expect(403);
    expect(refused.body).toMatchObject({ code: 'NOT_ADMITTED', message: /WAITING/ });
    await buy(goodsId, admitted, await tokenFor(goodsId, admitted)).expect(202);
  });
});
