import {
  LOG_FORMATS,
  LOG_LEVELS,
  type LogFormat,
  type LogLevelName,
} from '../common/logging/logging.js';
import { configNamespace } from './config-namespace.js';
import { ConfigValidationError } from './config-validation.error.js';
import { readBool, readString, type Env } from './env-readers.js';

export interface LoggingConfig {
  level: LogLevelName;
  /** JSON lines, or pino-pretty's; JSON in production unless LOG_FORMAT says otherwise. */
  format: LogFormat;
  /** Lines logged while a request is handled carry its ids (AsyncLocalStorage; see logging). */
  requestContext: boolean;
}

/**
 * `auto`: on where AsyncLocalStorage is cheap. Up to Node 22 it runs on promise hooks, which cost
 * every promise of the process something (0.05 ms of CPU per purchase, measured here on Node 20);
 * Node 24 carries the context on the promise itself (AsyncContextFrame).
 */
function readRequestContext(env: Env): boolean {
  const raw = readString(env, 'LOG_REQUEST_CONTEXT', 'auto').toLowerCase();
  if (raw === 'auto') return Number(process.versions.node.split('.')[0]) >= 24;
  return readBool(env, 'LOG_REQUEST_CONTEXT', false);
}

export const loggingConfig = configNamespace('logging', (env, app): LoggingConfig => {
  const level = readString(env, 'LOG_LEVEL', 'log') as LogLevelName;
  if (!LOG_LEVELS.includes(level)) {
    throw new ConfigValidationError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const format = readString(env, 'LOG_FORMAT', app.nodeEnv === 'production' ? 'json' : 'pretty');
  if (!LOG_FORMATS.includes(format as LogFormat)) {
    throw new ConfigValidationError(`LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}`);
  }
  return { level, format: format as LogFormat, requestContext: readRequestContext(env) };
});
