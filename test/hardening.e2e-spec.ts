import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/bootstrap.js';
import {
  adminAuth,
  bearer,
  createSale,
  startApp,
  Stores,
  token,
  useApp,
  type TestApp,
} from './support/harness.js';

describe('hardening', () => {
  const stores = new Stores();
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp();
  });

  afterAll(async () => {
    await t.close();
    await stores.close();
  });

  describe('headers and CORS', () => {
    const others: TestApp[] = [];

    afterEach(async () => {
      while (others.length > 0) await others.pop()!.close();
    });

    it('should send helmet security headers on API answers', async () => {
      const response = await t.http.get('/health/live').expect(200);

      expect(response.headers).toMatchObject({
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'DENY',
        'strict-transport-security': expect.stringContaining('max-age='),
        'content-security-policy': expect.stringContaining("default-src 'self'"),
      });
      expect(response.headers['x-powered-by']).toBeUndefined();
    });

    it("should say DENY in X-Frame-Options wherever the CSP says frame-ancestors 'none', the dashboard included", async () => {
      for (const path of ['/dashboard', '/dashboard/dashboard.js', '/health/live', '/docs']) {
        const response = await t.http.get(path).expect(200);
        expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
        expect(response.headers['x-frame-options']).toBe('DENY');
      }
    });

    it('should send no CORS headers when CORS_ORIGINS is empty', async () => {
      const response = await t.http
        .get('/health/live')
        .set('Origin', 'https://shop.example.com')
        .expect(200);

      expect(response.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('should allow only the listed origins, with the purchase headers', async () => {
      const cors = await startApp({ CORS_ORIGINS: 'https://shop.example.com' });
      others.push(cors);

      const preflight = await cors.http
        .options('/api/v1/seckill/1')
        .set('Origin', 'https://shop.example.com')
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'authorization,idempotency-key,x-seckill-token');
      expect(preflight.status).toBeLessThan(300);
      expect(preflight.headers['access-control-allow-origin']).toBe('https://shop.example.com');
      expect(preflight.headers['access-control-allow-headers']).toMatch(/Idempotency-Key/i);
      expect(preflight.headers['access-control-allow-headers']).toMatch(/X-Seckill-Token/i);

      const stranger = await cors.http
        .get('/health/live')
        .set('Origin', 'https://evil.example.net')
        .expect(200);
      expect(stranger.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('should not serve Swagger when SWAGGER_ENABLED is false', async () => {
      const hidden = await startApp({ SWAGGER_ENABLED: 'false' });
      others.push(hidden);

      await hidden.http.get('/docs').expect(404);
      await hidden.http.get('/docs-json').expect(404);
    });
  });

  it('should refuse to start in production with the default JWT secret', async () => {
    await expect(
      createApp({ ...process.env, NODE_ENV: 'production', JWT_SECRET: '' }),
    ).rejects.toThrow(/JWT_SECRET/);
  });

  it("should refuse a purchase body carrying another user's id, price or status, and take nothing", async () => {
    const goodsId = await createSale(t.http, { stock: 3 });

    for (const body of [{ userId: 999 }, { quantity: 1, price: 0 }, { status: 'PAID' }]) {
      const response = await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(501))
        .send(body)
        .expect(400);
      expect(response.body).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });
    }

    expect(await stores.redisStock(goodsId)).toBe(3);
    expect(await stores.redisBuyers(goodsId)).toEqual({});
  });

  it('should answer 400 VALIDATION_FAILED, not a 500, to an admin body nested 3,000 deep', async () => {
    const depth = 3_000;
    const response = await t.http
      .post('/api/v1/admin/goods')
      .set('Authorization', adminAuth())
      .set('Content-Type', 'application/json')
      .send(`{"name":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)},"price":1,"stock":1}`)
      .expect(400);

    expect(response.body).toEqual({
      statusCode: 400,
      code: 'VALIDATION_FAILED',
      message: expect.stringContaining('deeper than 32'),
    });
  });

  it('should never put a stack trace in an error body', async () => {
    const response = await t.http
      .post('/api/v1/seckill/1')
      .set('Authorization', bearer(502))
      .set('Content-Type', 'application/json')
      .send('{"quantity":')
      .expect(400);

    expect(Object.keys(response.body).sort()).toEqual(['code', 'message', 'statusCode']);
    expect(JSON.stringify(response.body)).not.toMatch(/\bat \S+ \(|node_modules|\.ts:\d+/);
  });
});

describe('production defaults', () => {
  const metricsToken = 'scrape-token-0123456789';
  const t = useApp({
    NODE_ENV: 'production',
    // Unset, as in a production environment that says nothing about Swagger.
    SWAGGER_ENABLED: '',
    METRICS_TOKEN: metricsToken,
    JWT_MAX_AGE_SECONDS: '3600',
  });
  const now = () => Math.floor(Date.now() / 1000);
  const orderLookup = (claims: Record<string, unknown>) =>
    t.http.get('/api/v1/orders/SK0000').set('Authorization', `Bearer ${token(7, { claims })}`);

  it('should not serve Swagger UI or its JSON in production unless SWAGGER_ENABLED=true', async () => {
    await t.http.get('/docs').expect(404);
    await t.http.get('/docs-json').expect(404);
  });

  it('should answer /metrics only with Authorization: Bearer <METRICS_TOKEN>, in any case', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${metricsToken}`]) {
      const call = t.http.get('/metrics');
      const response = await (authorization ? call.set('Authorization', authorization) : call);
      expect(response.status).toBe(401);
      expect(response.body).toEqual({
        statusCode: 401,
        code: 'UNAUTHORIZED',
        message: expect.any(String),
      });
    }
    const scraped = await t.http
      .get('/metrics')
      .set('Authorization', `bearer ${metricsToken}`)
      .expect(200);
    expect(scraped.text).toContain('seckill_purchases_total');
  });

  it('should refuse tokens whose exp is further ahead than JWT_MAX_AGE_SECONDS, from now or from iat', async () => {
    const yearsAhead = await orderLookup({ exp: now() + 10 * 365 * 86_400 }).expect(401);
    expect(yearsAhead.body.code).toBe('UNAUTHORIZED');
    const issuedLongBefore = await orderLookup({ iat: now() - 7_200, exp: now() + 1_800 });
    expect(issuedLongBefore.status).toBe(401);

    const withinAge = await orderLookup({ iat: now(), exp: now() + 3_600 }).expect(404);
    expect(withinAge.body.code).toBe('ORDER_NOT_FOUND');
  });
});
