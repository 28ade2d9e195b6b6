import type { RowDataPacket } from 'mysql2/promise';
import { describe, expect, it } from 'vitest';
import {
  resultChannel,
  streamAddressSlotsKey,
  streamSlotsKey,
} from '../src/infra/redis/seckill-keys.js';
import { PurchaseLedgerStore } from '../src/modules/sale-store/purchase-ledger.store.js';
import { bearer, createSale, startApp, useApp, waitFor, type Stores } from './support/harness.js';
import { baseUrlOf, SseClient } from './support/sse.js';

const streamPath = (goodsId: number) => `/api/v1/seckill/${goodsId}/result/stream`;

/** When MySQL wrote the order (epoch ms, by MySQL's clock, this machine's). */
async function landedAt(stores: Stores, requestId: string): Promise<number | null> {
  const [rows] = await stores.mysql.query<RowDataPacket[]>(
    'SELECT UNIX_TIMESTAMP(created_at) * 1000 AS landed FROM seckill_order WHERE request_id = ?',
    [requestId],
  );
  return rows.length === 0 ? null : Number(rows[0].landed);
}

async function subscribers(stores: Stores, goodsId: number, userId: number): Promise<number> {
  const [, count] = (await stores.redis.pubsub('NUMSUB', resultChannel(goodsId, userId))) as [
    string,
    number,
  ];
  return Number(count);
}

describe('result stream', () => {
  const t = useApp();
  const open = (goodsId: number, userId?: number) =>
    SseClient.open(
      `${baseUrlOf(t.app)}${streamPath(goodsId)}`,
      userId === undefined ? undefined : bearer(userId),
    );

  it('should push NONE, then QUEUED, then SUCCESS with the order number within a second of the order landing in MySQL, and end', async () => {
    const goodsId = await createSale(t.http);
    const stream = await open(goodsId, 91_001);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    await stream.waitForStatus('NONE');

    const purchase = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(91_001))
      .expect(202);
    const requestId = purchase.body.requestId as string;

    const success = await stream.waitForStatus('SUCCESS');
    await stream.waitForEnd();
    const landed = await waitFor(() => landedAt(t.stores, requestId), { what: 'the order' });
    const [order] = await t.stores.orders(goodsId);
    expect(success.data).toEqual({ status: 'SUCCESS', requestId, orderNo: order.order_no });
    expect(stream.statuses).toEqual(['NONE', 'QUEUED', 'SUCCESS']);
    expect(success.at - landed).toBeLessThanOrEqual(1_000);
    // Nothing left behind: the channel and the user's slot are given back.
    await waitFor(async () => (await subscribers(t.stores, goodsId, 91_001)) === 0, {
      what: 'the channel to be unsubscribed',
    });
    await waitFor(
      async () => (await t.stores.redis.zcard(streamSlotsKey('result', 91_001))) === 0,
      {
        what: 'the slot to be given back',
      },
    );
  });

  it('should start with a final result and end at once when the purchase is done already', async () => {
    const goodsId = await createSale(t.http);
    await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(91_002))
      .expect(202);
    await waitFor(async () => (await t.stores.orders(goodsId)).length === 1, { what: 'the order' });

    const stream = await open(goodsId, 91_002);
    await stream.waitForEnd();
    expect(stream.statuses).toEqual(['SUCCESS']);
  });

  it("should show a user only their own result, not another buyer's", async () => {
    const goodsId = await createSale(t.http);
    const mine = await open(goodsId, 91_003);
    await mine.waitForStatus('NONE');

    await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(91_004))
      .expect(202);
    await waitFor(async () => (await t.stores.orders(goodsId)).length === 1, { what: 'the order' });
    await waitFor(async () => (await t.stores.inflight(goodsId)) === 0, { what: 'it to settle' });
    expect(mine.statuses).toEqual(['NONE']);

    await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(91_003))
      .expect(202);
    await mine.waitForStatus('SUCCESS');
    const orderNos = (await t.stores.orders(goodsId)).map((order) => order.order_no);
    expect(mine.events.at(-1)!.data.orderNo).toBe(orderNos[1]);
    mine.close();
  });

  it('should refuse a third stream of one user with 429 TOO_MANY_REQUESTS, and open one again once a stream closes', async () => {
    const goodsId = await createSale(t.http);
    const first = await open(goodsId, 91_005);
    const second = await open(goodsId, 91_005);
    expect([first.status, second.status]).toEqual([200, 200]);

    const third = await open(goodsId, 91_005);
    expect(third.status).toBe(429);
    expect(third.refusal).toMatchObject({ statusCode: 429, code: 'TOO_MANY_REQUESTS' });
    expect(third.headers.get('retry-after')).toMatch(/^[0-9]+$/);
    // Another user is not held back by this one's streams.
    const other = await open(goodsId, 91_006);
    expect(other.status).toBe(200);

    first.close();
    const again = await waitFor(
      async () => {
        const stream = await open(goodsId, 91_005);
        return stream.status === 200 ? stream : null;
      },
      { what: 'a slot to be free again' },
    );
    for (const stream of [second, other, again]) stream.close();
  });

  it('should answer 401 without a token and 404 for goods that do not exist', async () => {
    const goodsId = await createSale(t.http);
    const anonymous = await open(goodsId);
    expect(anonymous.status).toBe(401);
    expect(anonymous.refusal).toMatchObject({ statusCode: 401, code: 'UNAUTHORIZED' });

    const unknown = await open(987_654_321, 91_007);
    expect(unknown.status).toBe(404);
    expect(unknown.refusal).toMatchObject({ code: 'GOODS_NOT_FOUND' });
    // The refused stream gave its slot back.
    await waitFor(
      async () => (await t.stores.redis.zcard(streamSlotsKey('result', 91_007))) === 0,
      {
        what: 'the slot to be given back',
      },
    );
  });

  it('should unsubscribe and give the slot back when the client goes away', async () => {
    const goodsId = await createSale(t.http);
    const stream = await open(goodsId, 91_008);
    await stream.waitForStatus('NONE');
    expect(await subscribers(t.stores, goodsId, 91_008)).toBe(1);
    expect(await t.stores.redis.zcard(streamSlotsKey('result', 91_008))).toBe(1);

    stream.close();
    await waitFor(async () => (await subscribers(t.stores, goodsId, 91_008)) === 0, {
      what: 'the channel to be unsubscribed',
    });
    await waitFor(
      async () => (await t.stores.redis.zcard(streamSlotsKey('result', 91_008))) === 0,
      {
        what: 'the slot to be given back',
      },
    );
  });
});

describe('result stream, per client address', () => {
  const t = useApp({ TRUSTED_PROXIES: '127.0.0.1', RESULT_STREAM_MAX_PER_IP: '3' });
  const from = (goodsId: number, userId: number, address: string) =>
    SseClient.open(`${baseUrlOf(t.app)}${streamPath(goodsId)}`, bearer(userId), {
      'X-Forwarded-For': address,
    });

  it('should refuse a stream beyond RESULT_STREAM_MAX_PER_IP from one address, whatever its users, with 429, serving other addresses', async () => {
    const goodsId = await createSale(t.http);
    const crowd = '198.51.100.7';
    const held = [];
    for (const userId of [95_001, 95_002, 95_003]) {
      const stream = await from(goodsId, userId, crowd);
      expect(stream.status).toBe(200);
      held.push(stream);
    }

    // A fourth account behind the same address, each of them under its own per-user limit.
    const refused = await Promise.all(
      [95_004, 95_005].map((userId) => from(goodsId, userId, crowd)),
    );
    for (const stream of refused) {
      expect(stream.status).toBe(429);
      expect(stream.refusal).toMatchObject({
        statusCode: 429,
        code: 'TOO_MANY_REQUESTS',
        message: expect.stringContaining('address'),
      });
      expect(stream.headers.get('retry-after')).toMatch(/^[0-9]+$/);
    }
    expect(await t.stores.redis.zcard(streamAddressSlotsKey('result', crowd))).toBe(3);
    // The refused stream gave its user's slot back.
    await waitFor(
      async () => (await t.stores.redis.zcard(streamSlotsKey('result', 95_004))) === 0,
      {
        what: "the refused stream's user slot to be given back",
      },
    );
    const elsewhere = await from(goodsId, 95_004, '198.51.100.8');
    expect(elsewhere.status).toBe(200);

    held[0].close();
    const again = await waitFor(
      async () => {
        const stream = await from(goodsId, 95_005, crowd);
        return stream.status === 200 ? stream : null;
      },
      { what: "a slot of the address's to be free again" },
    );
    for (const stream of [...held, elsewhere, again]) stream.close();
  });

  it("should give a trusted proxy's own streams (no X-Forwarded-For) no address slot: each buyer behind it is bounded per user only", async () => {
    const goodsId = await createSale(t.http);
    const users = [95_011, 95_012, 95_013, 95_014, 95_015];

    const streams = await Promise.all(
      users.map((userId) =>
        SseClient.open(`${baseUrlOf(t.app)}${streamPath(goodsId)}`, bearer(userId)),
      ),
    );

    expect(streams.map((stream) => stream.status)).toEqual(users.map(() => 200));
    expect(await t.stores.redis.zcard(streamAddressSlotsKey('result', '127.0.0.1'))).toBe(0);
    const third = await Promise.all(
      [0, 1].map(() => SseClient.open(`${baseUrlOf(t.app)}${streamPath(goodsId)}`, bearer(95_011))),
    );
    expect(third.map((stream) => stream.status).sort()).toEqual([200, 429]);
    for (const stream of [...streams, ...third]) stream.close();
  });
});

describe('result stream, orders not consumed', () => {
  const t = useApp({ CONSUMER_ENABLED: 'false' });

  it('should push QUEUED after a purchase and end after a FAILED result', async () => {
    const goodsId = await createSale(t.http);
    const stream = await SseClient.open(
      `${baseUrlOf(t.app)}${streamPath(goodsId)}`,
      bearer(92_001),
    );
    await stream.waitForStatus('NONE');

    const purchase = await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(92_001))
      .expect(202);
    await stream.waitForStatus('QUEUED');
    expect(stream.ended).toBe(false);

    // What a consumer does with a purchase MySQL refuses for good: stock back, FAILED.
    await t.app
      .get(PurchaseLedgerStore)
      .release(goodsId, purchase.body.requestId as string, 'REJECTED', 'a-consumer', 92_001);
    const failed = await stream.waitForStatus('FAILED');
    await stream.waitForEnd();
    expect(failed.data).toEqual({
      status: 'FAILED',
      requestId: purchase.body.requestId,
      reason: 'REJECTED',
    });
    expect(stream.statuses).toEqual(['NONE', 'QUEUED', 'FAILED']);
  });
});

describe('result stream lifetime', () => {
  const t = useApp({ RESULT_STREAM_LIFETIME_MS: '2500', RESULT_STREAM_HEARTBEAT_MS: '1000' });

  it('should end at its lifetime, with heartbeat comments while nothing changes', async () => {
    const goodsId = await createSale(t.http);
    const openedAt = Date.now();
    const stream = await SseClient.open(
      `${baseUrlOf(t.app)}${streamPath(goodsId)}`,
      bearer(93_001),
    );
    await stream.waitForStatus('NONE');
    await stream.waitForEnd(10_000);

    expect(stream.endedAt - openedAt).toBeGreaterThanOrEqual(2_400);
    expect(stream.statuses).toEqual(['NONE']);
    expect(stream.comments.filter((comment) => comment === 'heartbeat').length).toBeGreaterThan(1);
    await waitFor(
      async () => (await t.stores.redis.zcard(streamSlotsKey('result', 93_001))) === 0,
      {
        what: 'the slot to be given back',
      },
    );
  });
});

describe('result stream at shutdown', () => {
  it('should end the open streams when the server shuts down, so that it closes at once', async () => {
    const app = await startApp();
    const goodsId = await createSale(app.http);
    const stream = await SseClient.open(
      `${baseUrlOf(app.app)}${streamPath(goodsId)}`,
      bearer(94_001),
    );
    await stream.waitForStatus('NONE');

    const closing = Date.now();
    await app.close();
    await stream.waitForEnd();
    // Not held until the stream's lifetime (10 min) or the shutdown timeout.
    expect(Date.now() - closing).toBeLessThan(5_000);
  });
});
