import { describe, expect, it } from 'vitest';

import { writtenPointsIn } from './app-logs.js';

describe('writtenPointsIn', () => {
  it('should read each fallback opening and barrier pass with its times, and skip every other line', () => {
    const log = [
      '{"level":40,"time":"2026-12-01T16:12:15.549Z","context":"DatabasePurchaseService","msg":"sale opened to the database fallback: goods=3"}',
      '{"level":30,"time":"2026-12-01T16:12:15.600Z","msg":"fallback barrier opened: id=ab consumers=1"}',
      'DIAG not json: order barrier passed',
      '{"level":30,"time":"2026-12-01T16:12:16.461Z","context":"PreheatService","msg":"order barrier passed: id=8ae4da05043e4393 2097 ms after it opened"}',
    ].join('\n');
    const opened = Date.parse('2026-12-01T16:12:15.549Z');
    const passed = Date.parse('2026-12-01T16:12:16.461Z');
    expect(writtenPointsIn(log, 'api-1')).toEqual([
      { kind: 'fallback', instance: 'api-1', goodsId: 3, coversEpochMs: opened, atEpochMs: opened },
      { kind: 'rebuild', instance: 'api-1', coversEpochMs: passed - 2097, atEpochMs: passed },
    ]);
  });
});
