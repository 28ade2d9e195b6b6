import { describe, expect, it } from 'vitest';
import { SECURITY_HEADERS } from '../src/common/http/security-headers.js';
import { useApp } from './support/harness.js';
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

  it('should answer bytes that are not HTTP with 400 VALIDATION_FAILED and close', async () => {
    const answer = await rawExchange(port(), [
      'GET /health/live HTTP/1.1\r\nHost: localhost\r\nNot A Header\r\n\r\n',
    ]);

    expectContractError(answer, 400, 'VALIDATION_FAILED', 'Not A Header');
    expect(answer.headers).toMatchObject(await appSecurityHeaders());
  });
});
