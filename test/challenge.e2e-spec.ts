import { solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { describe, expect, it } from 'vitest';
import { bearer, createSale, useApp, waitFor } from './support/harness.js';

/** What the ALTCHA v2 widget submits: base64 of the JSON {challenge, solution}. */
async function solve(challenge: Challenge): Promise<string> {
  const solution = await solveChallenge({ challenge, deriveKey });
  if (!solution) throw new Error('no solution found');
  return Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
}

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');

describe('proof-of-work challenge before the purchase token (SECKILL_REQUIRE_CHALLENGE=true)', () => {
  // A low cost keeps the solves short; the default is measured in the README.
  const t = useApp({
    SECKILL_REQUIRE_CHALLENGE: 'true',
    SECKILL_REQUIRE_TOKEN: 'true',
    CHALLENGE_COST: '20',
  });
  const stores = t.stores;

  const challengeFor = async (goodsId: number, userId: number): Promise<Challenge> => {
    const response = await t.http
      .get(`/api/v1/seckill/${goodsId}/challenge`)
      .set('Authorization', bearer(userId))
      .expect(200);
    return response.body as Challenge;
  };

  const tokenWith = (goodsId: number, userId: number, payload?: string) => {
    const call = t.http
      .get(`/api/v1/seckill/${goodsId}/token`)
      .set('Authorization', bearer(userId));
    return payload === undefined ? call : call.set('X-Seckill-Challenge', payload);
  };

  const tokensIn = async (goodsId: number) =>
    (await stores.redis.keys(`seckill:{${goodsId}}:ptoken:*`)).length;

  it("should answer altcha-lib's challenge, bound to the user and the goods and expiring", async () => {
    const goodsId = await createSale(t.http);

    const challenge = await challengeFor(goodsId, 801);

    expect(challenge).toMatchObject({
      parameters: {
        algorithm: 'PBKDF2/SHA-256',
        cost: 20,
        data: { goodsId, userId: 801 },
        nonce: expect.stringMatching(/^[0-9a-f]+$/),
        salt: expect.stringMatching(/^[0-9a-f]+$/),
        keyPrefix: expect.stringMatching(/^[0-9a-f]+$/),
      },
      signature: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(challenge.parameters.expiresAt! * 1000).toBeGreaterThan(Date.now());
  });

  it('should issue a purchase token for a solved challenge, and buy with it', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const payload = await solve(await challengeFor(goodsId, 802));

    const token = await tokenWith(goodsId, 802, payload).expect(200);

    await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(802))
      .set('X-Seckill-Token', token.body.token as string)
      .expect(202);
  });

  it('should refuse a token without a challenge with 403 and issue nothing', async () => {
    const goodsId = await createSale(t.http);

    const response = await tokenWith(goodsId, 803).expect(403);

    expect(response.body).toEqual({
      statusCode: 403,
      code: 'FORBIDDEN',
      message: expect.stringMatching(/solved challenge is required/),
    });
    expect(await tokensIn(goodsId)).toBe(0);
  });

  it('should accept a solved challenge once and refuse it the second time', async () => {
    const goodsId = await createSale(t.http);
    const payload = await solve(await challengeFor(goodsId, 804));
    await tokenWith(goodsId, 804, payload).expect(200);

    const again = await tokenWith(goodsId, 804, payload).expect(403);

    expect(again.body.message).toMatch(/already used/);
    expect(await tokensIn(goodsId)).toBe(1);
  });

  it("should refuse another user's solved challenge, and leave it usable by its owner", async () => {
    const goodsId = await createSale(t.http);
    const payload = await solve(await challengeFor(goodsId, 805));

    const stolen = await tokenWith(goodsId, 806, payload).expect(403);

    expect(stolen.body.message).toMatch(/another user/);
    await tokenWith(goodsId, 805, payload).expect(200);
  });

  it('should refuse a challenge solved for another goods', async () => {
    const [first, second] = [await createSale(t.http), await createSale(t.http)];
    const payload = await solve(await challengeFor(first, 807));

    const response = await tokenWith(second, 807, payload).expect(403);

    expect(response.body.message).toMatch(/another goods/);
    expect(await tokensIn(second)).toBe(0);
  });

  it('should refuse a wrong solution and a tampered challenge, and keep the challenge usable', async () => {
    const goodsId = await createSale(t.http);
    const challenge = await challengeFor(goodsId, 808);
    const solution = await solveChallenge({ challenge, deriveKey });
    const wrongKey = { ...solution!, derivedKey: '00'.repeat(32) };
    const otherUser = {
      ...challenge,
      parameters: { ...challenge.parameters, data: { goodsId, userId: 809 } },
    };

    const wrong = await tokenWith(goodsId, 808, encode({ challenge, solution: wrongKey })).expect(
      403,
    );
    const forged = await tokenWith(goodsId, 809, encode({ challenge: otherUser, solution })).expect(
      403,
    );

    expect(wrong.body.message).toMatch(/not solved/);
    expect(forged.body.message).toMatch(/not issued by this service/);
    await tokenWith(goodsId, 808, encode({ challenge, solution })).expect(200);
  });

  it('should refuse malformed payloads with 403 and a reason, and issue nothing', async () => {
    const goodsId = await createSale(t.http);
    const cases: [string, RegExp][] = [
      ['not base64 at all!', /not base64/],
      [Buffer.from('not json').toString('base64'), /not base64 of JSON/],
      [encode([1, 2]), /needs \{challenge, solution\}/],
      [encode({ challenge: { parameters: {} }, solution: { counter: 'x' } }), /malformed/],
      ['A'.repeat(5_000), /not base64/],
    ];

    for (const [payload, reason] of cases) {
      const response = await tokenWith(goodsId, 810, payload).expect(403);
      expect(response.body.message).toMatch(reason);
    }
    expect(await tokensIn(goodsId)).toBe(0);
  });

  it('should give no challenge for unknown goods, or outside the sale window, and none without a token', async () => {
    const upcoming = await createSale(t.http, { startsInMs: 3_600_000 });

    await t.http
      .get('/api/v1/seckill/999999999/challenge')
      .set('Authorization', bearer(811))
      .expect(404);
    const early = await t.http
      .get(`/api/v1/seckill/${upcoming}/challenge`)
      .set('Authorization', bearer(811))
      .expect(409);
    await t.http.get(`/api/v1/seckill/${upcoming}/challenge`).expect(401);

    expect(early.body.code).toBe('SALE_NOT_STARTED');
  });
});

describe('an expired challenge', () => {
  const t = useApp({
    SECKILL_REQUIRE_CHALLENGE: 'true',
    CHALLENGE_COST: '20',
    CHALLENGE_TTL_MS: '5000',
  });

  it('should be refused with 403 once its time is up', async () => {
    const goodsId = await createSale(t.http);
    const challenge = (
      await t.http
        .get(`/api/v1/seckill/${goodsId}/challenge`)
        .set('Authorization', bearer(812))
        .expect(200)
    ).body as Challenge;
    const payload = await solve(challenge);
    await waitFor(async () => Date.now() > challenge.parameters.expiresAt! * 1000 + 1_000, {
      timeoutMs: 15_000,
      what: 'the challenge to expire',
    });

    const response = await t.http
      .get(`/api/v1/seckill/${goodsId}/token`)
      .set('Authorization', bearer(812))
      .set('X-Seckill-Challenge', payload)
      .expect(403);

    expect(response.body.message).toMatch(/expired/);
  });
});
