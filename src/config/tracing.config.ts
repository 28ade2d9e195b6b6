import { ConfigValidationError } from './config-validation.error.js';
import { configNamespace } from './config-namespace.js';
import { readOneOf, readString, readUrl } from './env-readers.js';

/** The samplers OTEL_TRACES_SAMPLER may name, as the OpenTelemetry spec's environment names them. */
export const TRACE_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

/** OpenTelemetry traces: off unless an OTLP endpoint is set. */
export interface TracingConfig {
  /** The OTLP/HTTP endpoint (spans go to `<endpoint>/v1/traces`); null: tracing off. */
  endpoint: string | null;
  sampler: TraceSampler;
  /** The ratio of the `*traceidratio` samplers, 0 to 1. */
  samplerRatio: number;
  serviceName: string;
}

function readRatio(env: Record<string, string | undefined>): number {
  const raw = readString(env, 'OTEL_TRACES_SAMPLER_ARG', '1');
  const value = Number(raw);
  if (!/^[0-9.e-]+$/i.test(raw) || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new ConfigValidationError(
      `OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "${raw}"`,
    );
  }
  return value;
}

export const tracingConfig = configNamespace('tracing', (env): TracingConfig => {
  const endpoint = readString(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', '');
  return {
    endpoint:
      endpoint === ''
        ? null
        : readUrl(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', '', ['http:', 'https:']).replace(/\/+$/, ''),
    sampler: readOneOf(env, 'OTEL_TRACES_SAMPLER', TRACE_SAMPLERS, 'parentbased_always_on'),
    samplerRatio: readRatio(env),
    serviceName: readString(env, 'OTEL_SERVICE_NAME', 'seckill'),
  };
});
