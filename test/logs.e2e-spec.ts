import { describe, expect, it } from 'vitest';
import { ChildApp } from './support/child-app.js';
import { bearer, token, useApp, waitFor } from './support/harness.js';

type LogLine = Record<string, unknown>;

/** Every line of a production server's stdout, each of which must be a JSON object. */
function jsonLines(stdout: string): LogLine[] {
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as LogLine;
      } catch {
        throw new Error(`not a JSON line: ${line}`);
      }
    });
}

describe('logs: a production server', () => {
  it('should write JSON lines, the request, user and goods ids on a purchase line, and no token in any', async () => {
    const server = await ChildApp.start({
      NODE_ENV: 'production',
      LOG_LEVEL: 'debug',
      // Every line of the request with its ids, whatever the Node version.
      LOG_REQUEST_CONTEXT: 'true',
      SECKILL_REQUIRE_TOKEN: 'true',
    });
    let stopped = false;
    try {
      const goodsId = await server.createSale(5);
      const userToken = token(81_001);
      const issued = await fetch(`${server.baseUrl}/api/v1/seckill/${goodsId}/token`, {
        headers: { authorization: `Bearer ${userToken}` },
      });
      expect(issued.status).toBe(200);
      const { token: purchaseToken } = (await issued.json()) as { token: string };

      const purchase = await fetch(`${server.baseUrl}/api/v1/seckill/${goodsId}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${userToken}`,
          'content-type': 'application/json',
          'x-seckill-token': purchaseToken,
          'x-request-id': 'purchase-81001',
          'idempotency-key': 'secret-ish-key-81001',
          cookie: 'session=cookie-value-81001',
        },
        body: JSON.stringify({ quantity: 1 }),
      });
      expect(purchase.status).toBe(202);
      expect(purchase.headers.get('x-request-id')).toBe('purchase-81001');
      // A refused one too: its line must not carry the token it was refused for.
      const forged = await fetch(`${server.baseUrl}/api/v1/seckill/${goodsId}?token=${userToken}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${userToken}x`, 'x-seckill-token': purchaseToken },
      });
      expect(forged.status).toBe(401);

      expect(await server.stop('SIGTERM')).toBe(0);
      stopped = true;
      const lines = jsonLines(server.stdout);

      const completed = lines.find(
        (line) => line.msg === 'request completed' && line.reqId === 'purchase-81001',
      );
      expect(completed).toMatchObject({
        userId: 81_001,
        goodsId,
        method: 'POST',
        url: `/api/v1/seckill/${goodsId}`,
        statusCode: 202,
      });
      const accepted = lines.find((line) => String(line.msg).startsWith('purchase accepted'));
      expect(accepted).toMatchObject({ reqId: 'purchase-81001', userId: 81_001, goodsId });

      const secrets = [userToken, userToken.split('.')[2], purchaseToken, 'cookie-value-81001'];
      for (const line of server.stdout.split('\n')) {
        for (const secret of secrets) expect(line).not.toContain(secret);
      }
    } finally {
      if (!stopped) await server.stop('SIGKILL');
    }
  });

  it('should stop the boot on a bad PREHEAT_CRON with a JSON line naming it', async () => {
    const server = await ChildApp.start(
      { NODE_ENV: 'production', PREHEAT_CRON: '*/10 * * *' },
      { waitReady: false },
    );
    await waitFor(() => server.exited, { what: 'the server to exit' });
    expect(server.process.exitCode).toBe(1);
    const [line] = jsonLines(server.stdout);
    expect(line).toMatchObject({ level: 60 });
    expect(line.msg).toContain('PREHEAT_CRON must be a cron expression');
  });
});

describe('logs: request ids', () => {
  const t = useApp();

  it('should echo a sane X-Request-Id and replace one that is not', async () => {
    const kept = await t.http.get('/health/live').set('X-Request-Id', 'lb-7f3a:0001').expect(200);
    expect(kept.headers['x-request-id']).toBe('lb-7f3a:0001');

    for (const bad of ['two words', 'x'.repeat(129), 'quote"d', 'a,b']) {
      const replaced = await t.http.get('/health/live').set('X-Request-Id', bad).expect(200);
      expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('should give answers from the request hooks an id too (a 401 before the body)', async () => {
    const refused = await t.http
      .post('/api/v1/seckill/1')
      .set('Content-Type', 'application/json')
      .send({ quantity: 1 })
      .expect(401);
    expect(refused.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const anonymous = await t.http
      .get('/api/v1/seckill/1/result')
      .set('Authorization', bearer(81_002).slice(0, -2))
      .expect(401);
    expect(anonymous.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
