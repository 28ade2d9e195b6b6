import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from '@opentelemetry/sdk-trace';
import type { TraceSampler, TracingConfig } from '../../config/tracing.config.js';

export { SpanKind };

/**
 * OpenTelemetry, set up once per process when OTEL_EXPORTER_OTLP_ENDPOINT is set: a tracer
 * provider exporting over OTLP/HTTP (JSON) in batches, the sampler OTEL_TRACES_SAMPLER names, an
 * AsyncLocalStorage context (a span is the parent of what runs inside it) and W3C trace-context
 * propagation (`traceparent`, in HTTP headers and in the broker's message headers). Off, none of
 * it is registered and every helper below is a plain call: the purchase path pays a branch.
 */
let provider: TracerProvider | null = null;
const TRACER = 'seckill';

function sampler(config: TracingConfig): Sampler {
  const ratio = new TraceIdRatioBasedSampler(config.samplerRatio);
  const samplers: Record<TraceSampler, () => Sampler> = {
    always_on: () => new AlwaysOnSampler(),
    always_off: () => new AlwaysOffSampler(),
    traceidratio: () => ratio,
    parentbased_always_on: () => new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    parentbased_always_off: () => new ParentBasedSampler({ root: new AlwaysOffSampler() }),
    parentbased_traceidratio: () => new ParentBasedSampler({ root: ratio }),
  };
  return samplers[config.sampler]();
}

/** Starts tracing if the config says so; the returned stop flushes and unregisters it. */
export function startTracing(config: TracingConfig): () => Promise<void> {
  if (config.endpoint === null || provider !== null) return async () => undefined;
  const started = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName }),
    sampler: sampler(config),
    // A consumer batch links to every purchase in it (CONSUMER_BATCH_SIZE is at most 5,000).
    spanLimits: { linkCountLimit: 5_000 },
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: `${config.endpoint}/v1/traces` }),
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(started);
  provider = started;
  return async () => {
    if (provider !== started) return;
    provider = null;
    await started.shutdown();
    trace.disable();
    propagation.disable();
    context.disable();
  };
}

export function tracingOn(): boolean {
  return provider !== null;
}

/** Exports what has ended so far (a test reads it at once). */
export async function flushSpans(): Promise<void> {
  await provider?.forceFlush();
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  /** The parent, when not the active span (e.g. a context read from a message's headers). */
  parent?: Context;
}

/**
 * Runs `step` inside a new span (the active one meanwhile), ended when it settles: an error is
 * recorded on it and thrown on. Off, `step` is called as it is.
 */
export async function inSpan<T>(
  name: string,
  options: SpanOptions,
  step: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (provider === null) return step(undefined);
  const parent = options.parent ?? context.active();
  const span = trace
    .getTracer(TRACER)
    .startSpan(
      name,
      { kind: options.kind, attributes: options.attributes, links: options.links },
      parent,
    );
  try {
    return await context.with(trace.setSpan(parent, span), () => step(span));
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    span.end();
  }
}

/** Starts a span left open (its end is the caller's), the parent read from `carrier` if any. */
export function startSpan(name: string, options: SpanOptions): Span | undefined {
  if (provider === null) return undefined;
  return trace
    .getTracer(TRACER)
    .startSpan(
      name,
      { kind: options.kind, attributes: options.attributes, links: options.links },
      options.parent ?? context.active(),
    );
}

/** `fn` with `span` as the active span (so what it starts is its child). */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  if (span === undefined) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** The active context's trace headers (`traceparent`), to send along; empty when off or none. */
export function traceHeaders(): Record<string, string> {
  if (provider === null) return {};
  const headers: Record<string, string> = {};
  propagation.inject(context.active(), headers);
  return headers;
}

/** The context a sender's `traceparent` stands for (the root context when there is none). */
export function contextFrom(headers: Record<string, unknown> | undefined): Context {
  return propagation.extract(context.active(), headers ?? {}, {
    get: (carrier, key) => {
      const value = carrier[key];
      return typeof value === 'string' ? value : undefined;
    },
    keys: (carrier) => Object.keys(carrier),
  });
}

/** A link to the span a `traceparent` names, or undefined when it names none. */
export function linkTo(traceparent: string | undefined): Link | undefined {
  if (provider === null || traceparent === undefined) return undefined;
  const spanContext: SpanContext | undefined = trace.getSpanContext(contextFrom({ traceparent }));
  return spanContext === undefined ? undefined : { context: spanContext };
}

/** The active span's `traceparent`, or undefined when off or there is none. */
export function activeTraceparent(): string | undefined {
  return traceHeaders().traceparent;
}
