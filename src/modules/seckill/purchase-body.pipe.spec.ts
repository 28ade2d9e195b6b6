import { describe, expect, it } from 'vitest';
import { DomainError } from '../../common/errors/domain-error.js';
import { PurchaseBodyPipe } from './purchase-body.pipe.js';

describe('PurchaseBodyPipe', () => {
  const pipe = new PurchaseBodyPipe();

  it.each([
    ['no body', undefined],
    ['null', null],
    ['an empty string', ''],
    ['an empty object', {}],
    ['{quantity: undefined}', { quantity: undefined }],
  ])('should default the quantity to 1 for %s', (_label, body) => {
    expect(pipe.transform(body)).toBe(1);
  });

  it('should read the quantity of {quantity: 3}', () => {
    expect(pipe.transform({ quantity: 3 })).toBe(3);
  });

  it('should accept the largest allowed quantity', () => {
    expect(pipe.transform({ quantity: 1000 })).toBe(1000);
  });

  it.each([
    ['an array', [1]],
    ['an empty array', []],
    ['a string', 'quantity=2'],
    ['a number', 2],
    ['a zero quantity', { quantity: 0 }],
    ['a negative quantity', { quantity: -1 }],
    ['a fractional quantity', { quantity: 1.5 }],
    ['a string quantity', { quantity: '2' }],
    ['a null quantity', { quantity: null }],
    ['a quantity above 1000', { quantity: 1001 }],
    ['an unknown field', { userId: 5 }],
    ['an unknown field next to quantity', { quantity: 1, userId: 5 }],
  ])('should refuse %s with VALIDATION_FAILED', (_label, body) => {
    let thrown: unknown;
    try {
      pipe.transform(body);
    } catch (error) {
      thrown = error;
    }

    expect(thrown).toBeInstanceOf(DomainError);
    expect((thrown as DomainError).code).toBe('VALIDATION_FAILED');
  });

  it('should name the unknown field in the refusal', () => {
    expect(() => pipe.transform({ quantity: 1, userId: 5 })).toThrow(/userId/);
  });
});
