import { describe, expect, it } from 'vitest';
import { DomainError } from '../../common/errors/domain-error.js';
import { parseIdempotencyKey, replay } from './idempotency.js';

const thrown = (action: () => unknown): DomainError => {
  try {
    action();
  } catch (error) {
    return error as DomainError;
  }
  throw new Error('did not throw');
};

describe('parseIdempotencyKey', () => {
  it.each(['a', 'order-42_retry', 'x'.repeat(64)])('should accept %s', (key) => {
    expect(parseIdempotencyKey(key)).toBe(key);
  });

  it('should accept an absent header', () => {
    expect(parseIdempotencyKey(undefined)).toBeUndefined();
  });

  it.each(['', 'x'.repeat(65), 'has space', 'a,b', 'ключ', 'a:b'])(
    'should refuse %j with VALIDATION_FAILED',
    (key) => {
      expect(thrown(() => parseIdempotencyKey(key)).code).toBe('VALIDATION_FAILED');
    },
  );
});

describe('replay', () => {
  const accepted = { status: 'QUEUED' as const, requestId: 'r-1' };

  it('should return the stored 202 body', () => {
    expect(
      replay({ state: 'DONE', goodsId: 7, quantity: 1, status: 202, body: accepted }, 7, 1),
    ).toEqual(accepted);
  });

  it('should throw the stored refusal again', () => {
    const error = thrown(() =>
      replay(
        {
          state: 'DONE',
          goodsId: 7,
          quantity: 1,
          status: 409,
          code: 'SOLD_OUT',
          message: 'Sold out',
        },
        7,
        1,
      ),
    );
    expect([error.code, error.message]).toEqual(['SOLD_OUT', 'Sold out']);
  });

  it('should answer DUPLICATE_REQUEST while the first attempt runs', () => {
    expect(
      thrown(() => replay({ state: 'PENDING', goodsId: 7, quantity: 1, owner: 'o' }, 7, 1)).code,
    ).toBe('DUPLICATE_REQUEST');
  });

  it.each([
    ['another goods', 8, 1],
    ['another quantity', 7, 2],
  ])('should refuse the key reused for %s with VALIDATION_FAILED', (_label, goodsId, quantity) => {
    expect(
      thrown(() =>
        replay(
          { state: 'DONE', goodsId: 7, quantity: 1, status: 202, body: accepted },
          goodsId,
          quantity,
        ),
      ).code,
    ).toBe('VALIDATION_FAILED');
  });
});
