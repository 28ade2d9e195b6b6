import { context, ROOT_CONTEXT, trace as otel } from '@opentelemetry/api';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TracingConfig } from '../../config/tracing.config.js';
import { inSpan, startServerSpan, startTracing, traceHeaders, type Trace } from './tracing.js';

// Takes the exports of the specs' spans (their content is test/tracing.e2e-spec.ts's concern).
let sink: Server;
const config = (sampler: TracingConfig['sampler']): TracingConfig => ({
  endpoint: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
  sampler,
  samplerRatio: 1,
  serviceName: 'tracing-spec',
});

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('tracing', () => {
  beforeAll(async () => {
    sink = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.end('{}'));
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => sink.close(() => resolve())));

  let stop: () => Promise<void> = async () => undefined;
  afterEach(async () => {
    await stop();
    stop = async () => undefined;
  });

  it('should call each step as it is, with no trace, while tracing is off', async () => {
    expect(startServerSpan('GET /', {}, {})).toBeUndefined();
    await expect(inSpan('x', ROOT_CONTEXT, {}, async (trace) => trace)).resolves.toBeUndefined();
    expect(traceHeaders(undefined)).toEqual({});
  });

  it("should hand a child's trace down without entering any context (no AsyncLocalStorage)", async () => {
    stop = startTracing(config('parentbased_always_on'));
    const request = startServerSpan('POST /buy', { traceparent: TRACEPARENT }, {});
    expect(request).toBeDefined();
    const requestSpan = request!.span.spanContext();
    expect(requestSpan.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    let inside: Trace;
    await inSpan('redis deduct', request!.trace, {}, async (trace) => {
      inside = trace;
      // Entering a context would cost every promise of the process its hooks on Node 20.
      expect(context.active()).toBe(ROOT_CONTEXT);
    });
    const child = otel.getSpan(inside!)!;
    expect(child.spanContext().traceId).toBe(requestSpan.traceId);
    expect(child.spanContext().spanId).not.toBe(requestSpan.spanId);
    expect(traceHeaders(inside).traceparent).toBe(
      `00-${requestSpan.traceId}-${child.spanContext().spanId}-01`,
    );
    request!.span.end();
  });

  it('should open no span under no trace, nor one the sampler drops', async () => {
    stop = startTracing(config('always_off'));
    expect(startServerSpan('POST /buy', {}, {})).toBeUndefined();
    await expect(inSpan('x', undefined, {}, async (trace) => trace)).resolves.toBeUndefined();
    await expect(inSpan('x', ROOT_CONTEXT, {}, async (trace) => trace)).resolves.toBeUndefined();
  });

  it('should record a failed step on its span and throw it on', async () => {
    stop = startTracing(config('always_on'));
    const failure = new Error('refused');
    await expect(
      inSpan('x', ROOT_CONTEXT, {}, async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
  });
});
