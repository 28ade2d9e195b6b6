import type { RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS, type ErrorCode } from '../src/common/errors/domain-error.js';
import {
  adminAuth,
  bearer,
  createSale,
  startApp,
  Stores,
  token,
  useApp,
  waitFor,
  type TestApp,
} from './support/harness.js';

const errorBody = (statusCode: number, code: string) => ({
  statusCode,
  code,
  message: expect.any(String),
});

describe('contract errors', () => {
  let t: TestApp;
  let goodsId: number;
  const stores = new Stores();

  beforeAll(async () => {
    t = await startApp({ BODY_LIMIT_BYTES: '4096' });
    goodsId = await createSale(t.http, { stock: 5 });
  });

  afterAll(async () => {
    await t.close();
    await stores.close();
  });

  describe('identity', () => {
    const purchaseWith = (authorization?: string) => {
      const call = t.http.post(`/api/v1/seckill/${goodsId}`);
      return authorization === undefined ? call : call.set('Authorization', authorization);
    };

    it.each([
      ['no token', undefined],
      ['a malformed header', 'Bearer not-a-jwt'],
      ['a non-bearer scheme', `Basic ${token(7)}`],
      [
        'an expired token',
        `Bearer ${token(7, { claims: { exp: Math.floor(Date.now() / 1000) - 60 } })}`,
      ],
      ['a token without exp', `Bearer ${token(7, { claims: { exp: undefined } })}`],
      ['a wrongly signed token', `Bearer ${token(7, { secret: 'someone-else' })}`],
      ['an HS512 token', `Bearer ${token(7, { alg: 'HS512' })}`],
      ['a non-numeric subject', `Bearer ${token('alice')}`],
      ['a zero subject', `Bearer ${token(0)}`],
    ])('should answer 401 for %s', async (_name, authorization) => {
      const response = await purchaseWith(authorization).expect(401);
      expect(response.body).toEqual(errorBody(401, 'UNAUTHORIZED'));
    });

    it('should answer 401 for an unsigned alg:none token', async () => {
      const [, payload] = token(7).split('.');
      const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
      const response = await purchaseWith(`Bearer ${header}.${payload}.`).expect(401);
      expect(response.body.code).toBe('UNAUTHORIZED');
    });

    it('should accept a numeric sub claim', async () => {
      const fresh = await createSale(t.http, { stock: 1 });
      await t.http
        .post(`/api/v1/seckill/${fresh}`)
        .set('Authorization', `Bearer ${token(7, { claims: { sub: 7 } })}`)
        .expect(202);
    });

    it('should accept the bearer scheme in any case', async () => {
      for (const scheme of ['bearer', 'BEARER', 'bEaReR']) {
        await t.http
          .get(`/api/v1/seckill/${goodsId}/result`)
          .set('Authorization', `${scheme} ${token(12)}`)
          .expect(200);
      }
    });

    it('should answer 403 when a user calls an admin route', async () => {
      const response = await t.http
        .post(`/api/v1/admin/goods/${goodsId}/preheat`)
        .set('Authorization', bearer(8))
        .expect(403);
      expect(response.body).toEqual(errorBody(403, 'FORBIDDEN'));
    });

    it("should answer 403 for another user's order and 404 for an unknown one", async () => {
      const fresh = await createSale(t.http, { stock: 1 });
      await t.http.post(`/api/v1/seckill/${fresh}`).set('Authorization', bearer(9)).expect(202);
      const orderNo = await waitForOrderNo(fresh);
      await t.http.get(`/api/v1/orders/${orderNo}`).set('Authorization', bearer(9)).expect(200);
      await t.http.get(`/api/v1/orders/${orderNo}`).set('Authorization', adminAuth()).expect(200);
      const other = await t.http
        .get(`/api/v1/orders/${orderNo}`)
        .set('Authorization', bearer(10))
        .expect(403);
      expect(other.body).toEqual(errorBody(403, 'FORBIDDEN'));
      for (const unknown of ['SK0000', 'nope', '%27%20OR%201%3D1', 'x'.repeat(200)]) {
        const response = await t.http
          .get(`/api/v1/orders/${unknown}`)
          .set('Authorization', bearer(9))
          .expect(404);
        expect(response.body).toEqual(errorBody(404, 'ORDER_NOT_FOUND'));
      }
    });
  });

  describe('echoes', () => {
    const long = 'X'.repeat(4_096);
    /** What the filter's messages may quote of a client's value: 40 characters and the cut. */
    const expectQuotedAtMost40 = (body: { message: string }) => {
      expect(body.message).not.toContain('X'.repeat(41));
      expect(body.message.length).toBeLessThan(120);
    };

    it('should quote at most 40 characters of a 4,096-character order number on every order route', async () => {
      for (const call of [
        t.http.get(`/api/v1/orders/${long}`),
        t.http.post(`/api/v1/orders/${long}/pay`),
        t.http.post(`/api/v1/orders/${long}/cancel`),
      ]) {
        const response = await call.set('Authorization', bearer(25)).expect(404);
        expect(response.body).toEqual(errorBody(404, 'ORDER_NOT_FOUND'));
        expect(response.body.message).toContain('X'.repeat(40));
        expectQuotedAtMost40(response.body);
      }
    });

    it('should quote at most 40 characters of a long goods id or unknown field name, and take nothing', async () => {
      const badId = await t.http
        .get(`/api/v1/goods/${long}`)
        .set('Authorization', bearer(26))
        .expect(400);
      expectQuotedAtMost40(badId.body);
      const purchase = await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(26))
        .send({ ['X'.repeat(900)]: 1 })
        .expect(400);
      expect(purchase.body).toEqual(errorBody(400, 'VALIDATION_FAILED'));
      expectQuotedAtMost40(purchase.body);
      expect(await stores.redisStock(goodsId)).toBe(5);
      const goods = await t.http
        .post('/api/v1/admin/goods')
        .set('Authorization', adminAuth())
        .send({
          name: 'Echo',
          price: 1,
          stock: 1,
          startAt: '2030-01-01T00:00:00Z',
          endAt: '2030-01-02T00:00:00Z',
          [long.slice(0, 3_000)]: 1,
        })
        .expect(400);
      expect(goods.body).toEqual(errorBody(400, 'VALIDATION_FAILED'));
      expectQuotedAtMost40(goods.body);
    });
  });

  describe('input', () => {
    it.each(['abc', '0', '-1', '1.5', '99999999999999999999'])(
      'should answer 400 for the goods id %s and take nothing',
      async (badId) => {
        const response = await t.http
          .post(`/api/v1/seckill/${badId}`)
          .set('Authorization', bearer(20))
          .expect(400);
        expect(response.body).toEqual(errorBody(400, 'VALIDATION_FAILED'));
      },
    );

    it('should answer 404 GOODS_NOT_FOUND for a goods that does not exist', async () => {
      for (const call of [
        t.http.get('/api/v1/goods/987654321'),
        // Not user 20: its bad-id purchases above spent its purchase budget for this second.
        t.http.post('/api/v1/seckill/987654321').set('Authorization', bearer(21)),
        t.http.get('/api/v1/seckill/987654321/result').set('Authorization', bearer(21)),
        t.http.post('/api/v1/admin/goods/987654321/preheat').set('Authorization', adminAuth()),
      ]) {
        expect((await call.expect(404)).body).toEqual(errorBody(404, 'GOODS_NOT_FOUND'));
      }
    });

    it.each([
      ['NUL', 'Ctl-nul\u0000phone'],
      ['a newline', 'Ctl-nl\nphone'],
      ['a C1 control (NEL)', 'Ctl-nel\u0085phone'],
      ['the right-to-left override U+202E', 'Ctl-rlo\u202Eenohp'],
      ['a right-to-left isolate U+2067', 'Ctl-rli\u2067phone\u2069'],
      ['the left-to-right mark U+200E', 'Ctl-lrm\u200Ephone'],
    ])(
      'should refuse a goods name with %s with 400 VALIDATION_FAILED and create nothing',
      async (_what, name) => {
        const response = await t.http
          .post('/api/v1/admin/goods')
          .set('Authorization', adminAuth())
          .send({
            name,
            price: 1,
            stock: 1,
            startAt: '2030-01-01T00:00:00Z',
            endAt: '2030-01-02T00:00:00Z',
          })
          .expect(400);
        expect(response.body).toEqual(errorBody(400, 'VALIDATION_FAILED'));
        expect(response.body.message).toMatch(/^name /);
        const [rows] = await stores.mysql.query<RowDataPacket[]>(
          'SELECT COUNT(*) AS n FROM seckill_goods WHERE name = ?',
          [name],
        );
        expect(Number(rows[0].n)).toBe(0);
      },
    );

    it('should answer 400 for malformed JSON and change nothing', async () => {
      const response = await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(21))
        .set('Content-Type', 'application/json')
        .send('{"quantity": ')
        .expect(400);
      expect(response.body).toEqual(errorBody(400, 'VALIDATION_FAILED'));
      expect(await stores.redisStock(goodsId)).toBe(5);
    });

    it('should accept an empty JSON body as a purchase of one', async () => {
      const fresh = await createSale(t.http, { stock: 2 });
      await t.http
        .post(`/api/v1/seckill/${fresh}`)
        .set('Authorization', bearer(22))
        .set('Content-Type', 'application/json')
        .expect(202);
      expect(await stores.redisStock(fresh)).toBe(1);
    });

    it.each([
      ['a userId', { userId: 1 }],
      ['a zero quantity', { quantity: 0 }],
      ['a fractional quantity', { quantity: 1.5 }],
      ['a string quantity', { quantity: '1' }],
      ['an array', [1]],
    ])('should answer 400 for a purchase body with %s and take nothing', async (_name, body) => {
      const response = await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(23))
        .send(body)
        .expect(400);
      expect(response.body).toEqual(errorBody(400, 'VALIDATION_FAILED'));
      expect(await stores.redisStock(goodsId)).toBe(5);
      expect(await stores.redisBuyers(goodsId)).toEqual({});
    });

    it('should answer 413 for a body over the limit', async () => {
      const response = await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(24))
        .set('Content-Type', 'application/json')
        .send(JSON.stringify({ quantity: 1, pad: 'x'.repeat(10_000) }))
        .expect(413);
      expect(response.body).toEqual(errorBody(413, 'PAYLOAD_TOO_LARGE'));
    });

    it('should answer 404 in the contract shape for an unknown route', async () => {
      const response = await t.http.get('/api/v1/nowhere').expect(404);
      expect(response.body).toEqual(errorBody(404, 'NOT_FOUND'));
    });

    it.each([
      ['no name', { price: 1, stock: 1 }],
      ['a zero stock', { stock: 0 }],
      ['a fractional stock', { stock: 1.5 }],
      ['a negative price', { price: -1 }],
      ['endAt before startAt', { startAt: '2030-01-02T00:00:00Z', endAt: '2030-01-01T00:00:00Z' }],
      ['a bad date', { startAt: 'tomorrow' }],
      ['a zero perUserLimit', { perUserLimit: 0 }],
      ['zero stockShards', { stockShards: 0 }],
      ['65 stockShards', { stockShards: 65 }],
      ['stockShards "x"', { stockShards: 'x' }],
      ['fractional stockShards', { stockShards: 1.5 }],
      ['an unknown field', { status: 'PAID' }],
    ])('should answer 400 when creating goods with %s', async (_name, patch) => {
      const base = {
        name: 'Bad',
        price: 1,
        stock: 1,
        startAt: '2030-01-01T00:00:00Z',
        endAt: '2030-01-02T00:00:00Z',
      };
      const body = Object.fromEntries(
        Object.entries({ ...base, ...patch }).filter(
          ([key]) => !(_name === 'no name' && key === 'name'),
        ),
      );
      const response = await t.http
        .post('/api/v1/admin/goods')
        .set('Authorization', adminAuth())
        .send(body)
        .expect(400);
      expect(response.body).toEqual(errorBody(400, 'VALIDATION_FAILED'));
    });
  });

  it('should answer DUPLICATE_REQUEST to a click while the same user holds the purchase lock', async () => {
    const fresh = await createSale(t.http, { stock: 5 });
    const userId = 30;
    // Hold the user's lock as a concurrent click on another instance would.
    await stores.redis.set(`seckill:{${fresh}}:lock:user:${userId}`, 'other-instance', 'PX', 5_000);
    const response = await t.http
      .post(`/api/v1/seckill/${fresh}`)
      .set('Authorization', bearer(userId))
      .expect(409);
    expect(response.body).toEqual(errorBody(409, 'DUPLICATE_REQUEST'));
    expect(await stores.redisStock(fresh)).toBe(5);
  });

  it('should serve Swagger UI at /docs with bearer auth', async () => {
    await t.http.get('/docs').expect(200);
    const spec = await t.http.get('/docs-json').expect(200);
    expect(spec.body.components.securitySchemes.bearer).toMatchObject({ scheme: 'bearer' });
    expect(Object.keys(spec.body.paths)).toEqual(
      expect.arrayContaining(['/api/v1/seckill/{goodsId}', '/api/v1/admin/goods']),
    );
  });

  it("should document in /docs-json every error the contract gives each route, in the contract's body", async () => {
    const spec = (await t.http.get('/docs-json').expect(200)).body as OpenApiDocument;
    const missing: string[] = [];
    for (const [route, codes] of Object.entries(CONTRACT_ERRORS)) {
      const [method, path] = route.split(' ');
      const responses = spec.paths[path]?.[method.toLowerCase()]?.responses;
      if (responses === undefined) {
        missing.push(`${route}: not in the document`);
        continue;
      }
      for (const code of codes) {
        const status = String(ERROR_STATUS[code]);
        // JSON on every route, the event-stream ones too: that is how the filter answers.
        const schema = resolve(spec, responses[status]?.content?.['application/json']?.schema);
        const documented =
          schema?.properties?.code?.enum?.includes(code) === true &&
          ['statusCode', 'code', 'message'].every((field) => schema.properties?.[field]);
        if (!documented) missing.push(`${route}: ${status} ${code}`);
      }
    }

    expect(missing).toEqual([]);
  });

  it('should answer health and metrics', async () => {
    await t.http.get('/health/live').expect(200);
    const ready = await t.http.get('/health/ready').expect(200);
    expect(ready.body.details).toMatchObject({
      mysql: { status: 'up' },
      redis: { status: 'up' },
      rabbitmq: { status: 'up' },
    });
    const metrics = await t.http.get('/metrics').expect(200);
    expect(metrics.text).toContain('seckill_purchases_total');
  });

  async function waitForOrderNo(id: number): Promise<string> {
    return waitFor(async () => (await stores.orders(id))[0]?.order_no, { what: 'an order' });
  }
});

describe('readiness while a dependency is down', () => {
  const t = useApp({}, { behindProxy: 'REDIS_URL' });

  it("should answer /health/ready 503 UNAVAILABLE naming Redis in our words, with no library's", async () => {
    t.proxy.down();
    const down = await waitFor(
      async () => {
        const response = await t.http.get('/health/ready');
        return response.status === 503 ? response : null;
      },
      { what: 'readiness to drop' },
    );

    expect(down.body).toEqual({
      statusCode: 503,
      code: 'UNAVAILABLE',
      message: 'Not ready: Redis is unreachable',
    });
    expect(down.text).not.toMatch(
      /exception|ECONNREFUSED|connection is closed|timeout|127\.0\.0\.1/i,
    );

    t.proxy.up();
    await waitFor(async () => (await t.http.get('/health/ready')).status === 200, {
      timeoutMs: 30_000,
      what: 'ready again once Redis is back',
    });
  });
});

interface OpenApiSchema {
  $ref?: string;
  properties?: Record<string, OpenApiSchema | undefined>;
  enum?: unknown[];
}

interface OpenApiDocument {
  paths: Record<
    string,
    | Record<
        string,
        | {
            responses: Record<
              string,
              { content?: Record<string, { schema?: OpenApiSchema } | undefined> } | undefined
            >;
          }
        | undefined
      >
    | undefined
  >;
  components: { schemas: Record<string, OpenApiSchema> };
}

function resolve(spec: OpenApiDocument, schema: OpenApiSchema | undefined) {
  const name = schema?.$ref?.replace('#/components/schemas/', '');
  return name === undefined ? schema : spec.components.schemas[name];
}

/**
 * Per route, the errors the contract's "Errors" gives it: a goods id that is not a positive
 * integer, no token, a user on an admin route or another user's order, a blocklisted buyer or a
 * bad purchase token or challenge on the purchase, token and challenge routes, no such goods or
 * order, the purchase's refusals, paying a cancelled and cancelling a paid order, a body over the
 * limit, a rate limit, a dependency down.
 */
const USER: ErrorCode[] = ['UNAUTHORIZED', 'UNAVAILABLE'];
const ADMIN: ErrorCode[] = [...USER, 'FORBIDDEN'];
const CONTRACT_ERRORS: Record<string, ErrorCode[]> = {
  'POST /api/v1/admin/goods': [...ADMIN, 'VALIDATION_FAILED', 'PAYLOAD_TOO_LARGE'],
  'POST /api/v1/admin/goods/{goodsId}/preheat': [...ADMIN, 'VALIDATION_FAILED', 'GOODS_NOT_FOUND'],
  'GET /api/v1/admin/goods/{goodsId}/reconcile': [...ADMIN, 'VALIDATION_FAILED', 'GOODS_NOT_FOUND'],
  'POST /api/v1/admin/goods/{goodsId}/reconcile/repair': [
    ...ADMIN,
    'VALIDATION_FAILED',
    'GOODS_NOT_FOUND',
  ],
  'GET /api/v1/goods/{goodsId}': [
    'VALIDATION_FAILED',
    'GOODS_NOT_FOUND',
    'TOO_MANY_REQUESTS',
    'UNAVAILABLE',
  ],
  'POST /api/v1/seckill/{goodsId}': [
    ...USER,
    'VALIDATION_FAILED',
    'FORBIDDEN',
    'GOODS_NOT_FOUND',
    'SOLD_OUT',
    'ALREADY_PURCHASED',
    'DUPLICATE_REQUEST',
    'SALE_NOT_STARTED',
    'SALE_ENDED',
    'NOT_PREHEATED',
    'NOT_ADMITTED',
    'NOT_SELECTED',
    'PAYLOAD_TOO_LARGE',
    'TOO_MANY_REQUESTS',
  ],
  'GET /api/v1/seckill/{goodsId}/token': [
    ...USER,
    'VALIDATION_FAILED',
    'FORBIDDEN',
    'GOODS_NOT_FOUND',
    'SALE_NOT_STARTED',
    'SALE_ENDED',
    'NOT_ADMITTED',
    'NOT_SELECTED',
    'TOO_MANY_REQUESTS',
  ],
  'POST /api/v1/seckill/{goodsId}/queue': [
    ...USER,
    'VALIDATION_FAILED',
    'FORBIDDEN',
    'GOODS_NOT_FOUND',
    'QUEUE_NOT_OPEN',
    'TOO_MANY_REQUESTS',
  ],
  'GET /api/v1/seckill/{goodsId}/queue': [
    ...USER,
    'VALIDATION_FAILED',
    'GOODS_NOT_FOUND',
    'QUEUE_NOT_OPEN',
    'TOO_MANY_REQUESTS',
  ],
  'POST /api/v1/admin/goods/{goodsId}/queue/pause': [
    ...ADMIN,
    'VALIDATION_FAILED',
    'GOODS_NOT_FOUND',
    'QUEUE_NOT_OPEN',
  ],
  'POST /api/v1/admin/goods/{goodsId}/queue/resume': [
    ...ADMIN,
    'VALIDATION_FAILED',
    'GOODS_NOT_FOUND',
    'QUEUE_NOT_OPEN',
  ],
  'PATCH /api/v1/admin/goods/{goodsId}/queue': [
    ...ADMIN,
    'VALIDATION_FAILED',
    'GOODS_NOT_FOUND',
    'QUEUE_NOT_OPEN',
    'PAYLOAD_TOO_LARGE',
  ],
  'GET /api/v1/seckill/{goodsId}/queue/stream': [
    ...USER,
    'VALIDATION_FAILED',
    'GOODS_NOT_FOUND',
    'QUEUE_NOT_OPEN',
    'TOO_MANY_REQUESTS',
  ],
  'POST /api/v1/seckill/{goodsId}/entry': [
    ...USER,
    'VALIDATION_FAILED',
    'FORBIDDEN',
    'GOODS_NOT_FOUND',
    'ENTRIES_CLOSED',
    'TOO_MANY_REQUESTS',
  ],
  'GET /api/v1/seckill/{goodsId}/entry': [
    ...USER,
    'VALIDATION_FAILED',
    'GOODS_NOT_FOUND',
    'ENTRIES_CLOSED',
    'TOO_MANY_REQUESTS',
  ],
  'GET /api/v1/seckill/{goodsId}/entry/stream': [
    ...USER,
    'VALIDATION_FAILED',
    'GOODS_NOT_FOUND',
    'ENTRIES_CLOSED',
    'TOO_MANY_REQUESTS',
  ],
  'GET /api/v1/seckill/{goodsId}/challenge': [
    ...USER,
    'VALIDATION_FAILED',
    'FORBIDDEN',
    'TOO_MANY_REQUESTS',
  ],
  'GET /api/v1/seckill/{goodsId}/result': [...USER, 'VALIDATION_FAILED', 'TOO_MANY_REQUESTS'],
  'GET /api/v1/seckill/{goodsId}/result/stream': [
    ...USER,
    'VALIDATION_FAILED',
    'GOODS_NOT_FOUND',
    'TOO_MANY_REQUESTS',
  ],
  'GET /api/v1/orders/{orderNo}': [...USER, 'FORBIDDEN', 'ORDER_NOT_FOUND', 'TOO_MANY_REQUESTS'],
  'POST /api/v1/orders/{orderNo}/pay': [
    ...USER,
    'FORBIDDEN',
    'ORDER_NOT_FOUND',
    'ORDER_CANCELLED',
    'TOO_MANY_REQUESTS',
  ],
  'POST /api/v1/orders/{orderNo}/cancel': [
    ...USER,
    'FORBIDDEN',
    'ORDER_NOT_FOUND',
    'ORDER_PAID',
    'TOO_MANY_REQUESTS',
  ],
  'POST /api/v1/admin/blocklist': [...ADMIN, 'VALIDATION_FAILED', 'PAYLOAD_TOO_LARGE'],
  'GET /api/v1/admin/blocklist': [...ADMIN],
  'DELETE /api/v1/admin/blocklist/{type}/{value}': [...ADMIN, 'VALIDATION_FAILED'],
  'GET /api/v1/admin/events': [...ADMIN],
};
