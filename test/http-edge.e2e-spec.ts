import type { RowDataPacket } from 'mysql2/promise';
import { describe, expect, it, vi } from 'vitest';
import { SECURITY_HEADERS } from '../src/common/http/security-headers.js';
import { AuthenticatorService } from '../src/modules/auth/authenticator.service.js';
import { adminAuth, bearer, createSale, useApp, waitFor } from './support/harness.js';
import { portOf, rawExchange, type RawAnswer } from './support/raw-http.js';

const get = (path: string, extraHeaders = '') =>
  `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${extraHeaders}Connection: close\r\n\r\n`;

/** The answer is the contract's error body, says nothing of the framework, echoes nothing back. */
function expectContractError(answer: RawAnswer, status: number, code: string, echoed?: string) {
  expect(answer.status).toBe(status);
  const body = JSON.parse(answer.body);
  expect(body).toEqual({ statusCode: status, code, message: expect.any(String) });
  expect(answer.body).not.toMatch(/fastify|FST_|HPE_|nest/i);
  if (echoed !== undefined) expect(answer.body).not.toContain(echoed);
}

describe('answers from every layer', () => {
  const t = useApp();
  const port = () => portOf(t.app);

  /** The security headers of an ordinary answer from the app, as the reference. */
  async function appSecurityHeaders(): Promise<Record<string, string>> {
    const answer = await rawExchange(port(), [get('/health/live')]);
    expect(answer.status).toBe(200);
    const names = SECURITY_HEADERS.map(([name]) => name.toLowerCase());
    expect(names).toEqual(
      expect.arrayContaining(['content-security-policy', 'x-content-type-options']),
    );
    return Object.fromEntries(names.map((name) => [name, answer.headers[name]]));
  }

  it('should answer a malformed URL with 400 VALIDATION_FAILED and the security headers', async () => {
    const answer = await rawExchange(port(), [get('/api/v1/goods/%zz')]);

    expectContractError(answer, 400, 'VALIDATION_FAILED', '%zz');
    expect(answer.headers).toMatchObject(await appSecurityHeaders());
  });

  it('should answer a path segment over 4,096 characters with 414 URI_TOO_LONG, not echoing it', async () => {
    const segment = '7'.repeat(5_000);
    const answer = await rawExchange(port(), [get(`/api/v1/goods/${segment}`)]);

    expectContractError(answer, 414, 'URI_TOO_LONG', '7777777777');
    expect(answer.headers).toMatchObject(await appSecurityHeaders());
  });

  it('should answer an unknown route with 404 NOT_FOUND without repeating the URL', async () => {
    const answer = await rawExchange(port(), [get('/api/v1/no-such-route-here')]);

    expectContractError(answer, 404, 'NOT_FOUND', 'no-such-route-here');
    expect(answer.headers).toMatchObject(await appSecurityHeaders());
  });

  it('should answer a header block over the limit with 431 HEADERS_TOO_LARGE and close', async () => {
    const answer = await rawExchange(port(), [
      get('/health/live', `X-Padding: ${'p'.repeat(20_000)}\r\n`),
    ]);

    expectContractError(answer, 431, 'HEADERS_TOO_LARGE', 'ppppp');
    expect(answer.headers).toMatchObject(await appSecurityHeaders());
    expect(answer.headers.connection).toBe('close');
  });

  it('should answer a body of a type no route reads with 415 UNSUPPORTED_MEDIA_TYPE in the contract shape, creating nothing', async () => {
    const body = 'name=Phone&price=1&stock=1';
    const answer = await rawExchange(port(), [
      `POST /api/v1/admin/goods HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${adminAuth()}\r\n` +
        `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    ]);

    expectContractError(answer, 415, 'UNSUPPORTED_MEDIA_TYPE', 'x-www-form-urlencoded');
    expect(answer.headers).toMatchObject(await appSecurityHeaders());
    const [rows] = await t.stores.mysql.query<RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM seckill_goods WHERE name = 'Phone' AND price = 1",
    );
    expect(Number(rows[0].n)).toBe(0);
  });

  it('should answer a purchase sent as XML with 415 UNSUPPORTED_MEDIA_TYPE and take nothing', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const response = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(45))
      .set('Content-Type', 'application/xml')
      .send('<quantity>1</quantity>')
      .expect(415);

    expect(response.body).toEqual({
      statusCode: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message: expect.any(String),
    });
    expect(await t.stores.redisStock(goodsId)).toBe(2);
    expect(await t.stores.redisBuyers(goodsId)).toEqual({});
  });

  it('should answer bytes that are not HTTP with 400 VALIDATION_FAILED and close', async () => {
    const answer = await rawExchange(port(), [
      'GET /health/live HTTP/1.1\r\nHost: localhost\r\nNot A Header\r\n\r\n',
    ]);

    expectContractError(answer, 400, 'VALIDATION_FAILED', 'Not A Header');
    expect(answer.headers).toMatchObject(await appSecurityHeaders());
  });
});

describe('slow and unwanted bodies', () => {
  const requestTimeoutMs = 1_000;
  const t = useApp({ REQUEST_TIMEOUT_MS: String(requestTimeoutMs) });
  const port = () => portOf(t.app);
  const post = (path: string, headers: string) =>
    `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${headers}\r\n`;

  async function openConnections(): Promise<number> {
    const server = t.app.getHttpServer();
    return new Promise((resolve, reject) =>
      server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    );
  }

  it('should answer 408 REQUEST_TIMEOUT and close requests whose body stalls, freeing what they held', async () => {
    const declared = 1_048_000;
    const stalled = Array.from({ length: 20 }, () =>
      rawExchange(
        port(),
        [
          post(
            '/api/v1/admin/goods',
            `Authorization: ${adminAuth()}\r\nContent-Length: ${declared}\r\n`,
          ),
          Buffer.alloc(500_000, 'x'),
        ],
        { timeoutMs: requestTimeoutMs * 10 },
      ),
    );

    for (const answer of await Promise.all(stalled)) {
      expectContractError(answer, 408, 'REQUEST_TIMEOUT');
      expect(answer.headers.connection).toBe('close');
      expect(answer.elapsedMs).toBeGreaterThanOrEqual(requestTimeoutMs - 50);
      expect(answer.elapsedMs).toBeLessThan(requestTimeoutMs * 5);
    }
    // Every socket, with the half-read body it buffered, is gone.
    await waitFor(async () => (await openConnections()) === 0, {
      timeoutMs: requestTimeoutMs * 3,
      what: 'the stalled connections to be closed',
    });
  });

  it('should answer 401 to an unauthenticated POST with a large declared body without reading it', async () => {
    // Only the headers are sent: the answer cannot wait for the body.
    const answer = await rawExchange(port(), [
      post('/api/v1/seckill/1', 'Content-Length: 1048000\r\n'),
    ]);

    expectContractError(answer, 401, 'UNAUTHORIZED');
    expect(answer.headers.connection).toBe('close');
  });

  it('should answer 403 to a user token on an admin route with a body, without reading it', async () => {
    const answer = await rawExchange(port(), [
      post('/api/v1/admin/goods', `Authorization: ${bearer(41)}\r\nContent-Length: 1048000\r\n`),
    ]);

    expectContractError(answer, 403, 'FORBIDDEN');
  });

  it('should refuse a 2 KiB purchase body with 413 PAYLOAD_TOO_LARGE and take nothing', async () => {
    const goodsId = await createSale(t.http, { stock: 2 });
    const envelope = JSON.stringify({ quantity: 1, note: '' });
    const body = JSON.stringify({ quantity: 1, note: 'n'.repeat(2_048 - envelope.length) });
    expect(Buffer.byteLength(body)).toBe(2_048);

    const response = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(42))
      .set('Content-Type', 'application/json')
      .send(body)
      .expect(413);

    expect(response.body).toEqual({
      statusCode: 413,
      code: 'PAYLOAD_TOO_LARGE',
      message: expect.any(String),
    });
    expect(await t.stores.redisStock(goodsId)).toBe(2);
  });

  it('should verify the bearer token once per request', async () => {
    const verify = vi.spyOn(t.app.get(AuthenticatorService), 'authenticate');
    try {
      await t.http.get('/api/v1/seckill/1/result').set('Authorization', bearer(43));
      expect(verify).toHaveBeenCalledTimes(1);
    } finally {
      verify.mockRestore();
    }
  });
});
