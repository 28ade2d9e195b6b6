import { describe, expect, it } from 'vitest';
import { isDependencyFailure } from './dependency-errors.js';

const withCode = (code: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(`failed: ${code}`), { code, ...extra });

describe('isDependencyFailure', () => {
  it.each([
    ['a refused connection', withCode('ECONNREFUSED')],
    ['a MySQL connection lost', withCode('PROTOCOL_CONNECTION_LOST')],
    ['a fatal mysql2 error', Object.assign(new Error('boom'), { fatal: true })],
    ['a TypeORM error wrapping a driver error', { driverError: withCode('ETIMEDOUT') }],
    [
      'an error whose cause is a reset',
      new Error('query failed', { cause: withCode('ECONNRESET') }),
    ],
    [
      'ioredis with Redis known to be down',
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
    ],
    ['an ioredis command timeout', new Error('Command timed out')],
    [
      'an ioredis Cluster with no node reachable',
      new Error("Cluster isn't ready and enableOfflineQueue options is false"),
    ],
    ['a cluster slot without a master', new Error('CLUSTERDOWN Hash slot not served')],
    ['a Redis still loading its data', new Error('LOADING Redis is loading the dataset in memory')],
    ['ioredis after retries', Object.assign(new Error('x'), { name: 'MaxRetriesPerRequestError' })],
    [
      'a command on a cut MySQL connection',
      new Error("Can't add new command when connection is in closed state"),
    ],
  ])('should call %s an outage', (_name, error) => {
    expect(isDependencyFailure(error)).toBe(true);
  });

  it.each([
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a duplicate key', withCode('ER_DUP_ENTRY')],
    ['a data error', { driverError: withCode('ER_DATA_TOO_LONG') }],
    ['a string', 'ECONNREFUSED'],
    ['nothing', undefined],
  ])('should not call %s an outage', (_name, error) => {
    expect(isDependencyFailure(error)).toBe(false);
  });

  it('should stop on a cyclic cause chain', () => {
    const error = new Error('loop') as Error & { cause?: unknown };
    error.cause = error;
    expect(isDependencyFailure(error)).toBe(false);
  });
});
