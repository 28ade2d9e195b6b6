import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { flushSpans } from '../src/infra/tracing/tracing.js';
import { bearer, createSale, ordersOnceSettled, useApp, waitFor } from './support/harness.js';

/** A span as OTLP/JSON carries it (ids in hex). */
interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  links?: { traceId: string; spanId: string }[];
  attributes?: { key: string; value: Record<string, unknown> }[];
}

const KIND = { server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** An OTLP/HTTP receiver in the test's process: every span any export sent it. */
async function otlpReceiver(): Promise<{ server: Server; url: string; spans: ReceivedSpan[] }> {
  const spans: ReceivedSpan[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: { scopeSpans: { spans: ReceivedSpan[] }[] }[];
        };
        for (const resource of body.resourceSpans) {
          for (const scope of resource.scopeSpans) spans.push(...scope.spans);
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, spans };
}

const receiver = await otlpReceiver();
const PAYMENT_TIMEOUT_MS = 2_000;
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

describe('traces: one purchase from the click to the MySQL row and its expiry', () => {
  const t = useApp({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_TRACES_SAMPLER: 'parentbased_always_on',
    ORDER_PAYMENT_TIMEOUT_MS: String(PAYMENT_TIMEOUT_MS),
  });
  afterAll(() => new Promise((resolve) => receiver.server.close(resolve)));

  /** Waits until a span that `match` accepts was exported, and returns it. */
  const span = (what: string, match: (span: ReceivedSpan) => boolean) =>
    waitFor(
      async () => {
        await flushSpans();
        return receiver.spans.find(match) ?? null;
      },
      { timeoutMs: 20_000, what },
    );

  it('should trace the purchase under its caller, link the consumer batch that wrote it and the expiry that cancelled it', async () => {
    const goodsId = await createSale(t.http, { stock: 5 });
    await t.http
      .post(`/api/v1/seckill/${goodsId}`)
      .set('Authorization', bearer(91_001))
      .set('traceparent', `00-${CALLER_TRACE}-${CALLER_SPAN}-01`)
      .expect(202);

    // The request: a child of the caller's span, with the deduct and the publish inside it.
    const request = await span(
      'the purchase request',
      (s) => s.traceId === CALLER_TRACE && s.kind === KIND.server,
    );
    expect(request.name).toBe('POST /api/v1/seckill/:goodsId');
    expect(request.parentSpanId).toBe(CALLER_SPAN);
    const inTrace = receiver.spans.filter((s) => s.traceId === CALLER_TRACE);
    const deduct = inTrace.find((s) => s.name === 'redis seckillDeduct');
    expect(deduct?.parentSpanId).toBe(request.spanId);
    const publish = inTrace.find((s) => s.kind === KIND.producer);
    expect(publish).toMatchObject({ name: 'seckill_test.orders publish' });
    expect(publish?.parentSpanId).toBe(request.spanId);

    // The consumer's batch: a trace of its own, linked to the purchase's publish, with the
    // MySQL write and the payment timeout's publish inside it.
    const batch = await span(
      'the consumer batch linked to the publish',
      (s) =>
        s.kind === KIND.consumer &&
        s.name === 'seckill_test.orders process' &&
        (s.links ?? []).some((l) => l.spanId === publish?.spanId),
    );
    expect(batch.traceId).not.toBe(CALLER_TRACE);
    const write = await span(
      'the MySQL write in the batch',
      (s) => s.parentSpanId === batch.spanId && s.name === 'mysql write orders',
    );
    expect(write.kind).toBe(KIND.client);
    const timeoutPublish = await span(
      'the payment timeout published in the batch',
      (s) => s.parentSpanId === batch.spanId && s.kind === KIND.producer,
    );
    expect(timeoutPublish.name).toBe(`seckill_test.orders.delay.${PAYMENT_TIMEOUT_MS}ms publish`);
    await ordersOnceSettled(t.stores, goodsId, 1);

    // Unpaid, the order expires: the expiry links to the purchase and to the batch's publish.
    const expiry = await span(
      'the expiry linked to the purchase',
      (s) =>
        s.kind === KIND.consumer &&
        s.name === 'seckill_test.orders.timeout process' &&
        (s.links ?? []).some((l) => l.traceId === CALLER_TRACE),
    );
    expect(expiry.links).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ traceId: CALLER_TRACE, spanId: publish?.spanId }),
        expect.objectContaining({ spanId: timeoutPublish.spanId }),
      ]),
    );
    await waitFor(async () => {
      const [order] = await t.stores.orders(goodsId);
      return order?.status === 'CANCELLED' ? order : null;
    });
    // The expiry's own steps (its Redis script, its MySQL update) are its children.
    await span('a step of the expiry', (s) => s.parentSpanId === expiry.spanId);
  });
});
