import {
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  SamplingDecision,
  TracerProvider,
  type Sampler,
  type SamplingResult,
} from '@opentelemetry/sdk-trace';
import type { TraceSampler, TracingConfig } from '../../config/tracing.config.js';

export { SpanKind };

/**
 * OpenTelemetry, set up once per process when OTEL_EXPORTER_OTLP_ENDPOINT is set: a tracer
 * provider exporting over OTLP/HTTP (JSON) in batches, the sampler OTEL_TRACES_SAMPLER names and
 * W3C trace-context propagation (`traceparent`, in HTTP headers and in the broker's message
 * headers). No context manager: a span's trace is handed down as a parameter (`Trace`). Off, none
 * of it is registered and every helper below is a plain call: the purchase path pays a branch.
 */
let provider: TracerProvider | null = null;
const TRACER = 'seckill';

/**
 * A root span linked to a sampled span is sampled too: a consumer batch (or an expiry) is kept
 * whenever a purchase in it was, so that the purchase's trace leads somewhere. Otherwise `inner`
 * decides.
 */
class LinkedSampler implements Sampler {
  constructor(private readonly inner: Sampler) {}

  shouldSample(...args: Parameters<Sampler['shouldSample']>): SamplingResult {
    const [parent, , , , , links] = args;
    if (trace.getSpanContext(parent) === undefined && links.some((link) => isSampled(link))) {
      return { decision: SamplingDecision.RECORD_AND_SAMPLED };
    }
    return this.inner.shouldSample(...args);
  }

  toString(): string {
    return `LinkedSampler{${this.inner.toString()}}`;
  }
}

function isSampled(link: Link): boolean {
  return (link.context.traceFlags & TraceFlags.SAMPLED) !== 0;
}

function sampler(config: TracingConfig): Sampler {
  return new LinkedSampler(configuredSampler(config));
}

function configuredSampler(config: TracingConfig): Sampler {
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
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(started);
  provider = started;
  return async () => {
    if (provider !== started) return;
    provider = null;
    try {
      await started.shutdown();
    } finally {
      // Even when the last export failed: a provider left registered would refuse the next.
      trace.disable();
      propagation.disable();
    }
  };
}

/** Exports what has ended so far (a test reads it at once). */
export async function flushSpans(): Promise<void> {
  await provider?.forceFlush();
}

/**
 * The trace a step continues: the context of a recorded span, handed down by the caller (a
 * parameter, not a context manager: up to Node 22 AsyncLocalStorage works through promise hooks
 * that charge every promise of the process once any context is entered, 20-29 % of a purchase
 * at 1 % sampling). Undefined: nothing to continue (tracing off, or the trace is not sampled).
 */
export type Trace = Context | undefined;

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
}

/**
 * Runs `step` inside a new span, child of `parent`, ended when it settles (an error is recorded
 * on it and thrown on); `step` gets the span's trace to hand down. No parent (off, or not
 * sampled), or a span the sampler drops: `step(undefined)`, nothing started.
 */
export async function inSpan<T>(
  name: string,
  parent: Trace,
  options: SpanOptions,
  step: (trace: Trace) => Promise<T>,
): Promise<T> {
  // A Trace is a recorded span's (startServerSpan and inSpan hand out no other) or the root.
  if (provider === null || parent === undefined) return step(undefined);
  const span = trace
    .getTracer(TRACER)
    .startSpan(
      name,
      { kind: options.kind, attributes: options.attributes, links: options.links },
      parent,
    );
  if (!span.isRecording()) {
    span.end();
    return step(undefined);
  }
  try {
    return await step(trace.setSpan(parent, span));
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Runs `step` as a consumer's work on message(s) of `queue`: a trace of its own (a root span,
 * sampled whenever a sender's was), linked to every sender's `traceparent`. Off, a plain call.
 */
export function inConsumerSpan<T>(
  queue: string,
  traceparents: readonly (string | undefined)[],
  messages: number,
  step: (trace: Trace) => Promise<T>,
): Promise<T> {
  if (provider === null) return step(undefined);
  return inSpan(
    `${queue} process`,
    ROOT_CONTEXT,
    {
      kind: SpanKind.CONSUMER,
      links: traceparents.flatMap((traceparent) => linkTo(traceparent) ?? []),
      attributes: { 'messaging.system': 'rabbitmq', 'messaging.batch.message_count': messages },
    },
    step,
  );
}

/**
 * Starts a span left open (its end is the caller's) under the caller's `traceparent` in
 * `headers`, and returns it with the trace it heads; undefined when off or the sampler drops it.
 */
export function startServerSpan(
  name: string,
  headers: Record<string, unknown>,
  attributes: Attributes,
): { span: Span; trace: Context } | undefined {
  if (provider === null) return undefined;
  const parent = contextFrom(headers);
  const span = trace
    .getTracer(TRACER)
    .startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  if (!span.isRecording()) {
    span.end();
    return undefined;
  }
  return { span, trace: trace.setSpan(parent, span) };
}

/** `trace`'s headers (`traceparent`), to send along; empty when there is none. */
export function traceHeaders(trace: Trace): Record<string, string> {
  const headers: Record<string, string> = {};
  if (provider !== null && trace !== undefined) propagation.inject(trace, headers);
  return headers;
}

/** The context a sender's `traceparent` stands for (the root context when there is none). */
export function contextFrom(headers: Record<string, unknown> | undefined): Context {
  return propagation.extract(ROOT_CONTEXT, headers ?? {}, {
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
