import { describe, expect, it } from 'vitest';
import { DomainError } from '../../common/errors/domain-error.js';
import { DeductCode } from './ledger.scripts.js';
import { deductRefusal, isFinalRefusal } from './deduct-refusals.js';

describe('deductRefusal', () => {
  it.each([
    [DeductCode.SaleNotStarted, 'SALE_NOT_STARTED'],
    [DeductCode.SaleEnded, 'SALE_ENDED'],
    [DeductCode.SoldOut, 'SOLD_OUT'],
    [DeductCode.AlreadyPurchased, 'ALREADY_PURCHASED'],
    [DeductCode.Voided, 'UNAVAILABLE'],
    [DeductCode.Frozen, 'UNAVAILABLE'],
    [DeductCode.OverLimit, 'VALIDATION_FAILED'],
  ])('should answer code %i with %s', (code, expected) => {
    expect(deductRefusal(code)?.code).toBe(expected);
  });

  it('should leave NOT_PREHEATED to the caller, who must ask MySQL why', () => {
    expect(deductRefusal(DeductCode.NotPreheated)).toBeNull();
  });
});

describe('isFinalRefusal', () => {
  it.each(['SOLD_OUT', 'ALREADY_PURCHASED', 'SALE_ENDED'] as const)(
    'should call %s final',
    (code) => {
      expect(isFinalRefusal(new DomainError(code, 'x'))).toBe(true);
    },
  );

  it.each([
    'UNAVAILABLE',
    'DUPLICATE_REQUEST',
    'SALE_NOT_STARTED',
    'NOT_PREHEATED',
    'FORBIDDEN',
    'VALIDATION_FAILED',
  ] as const)('should not call %s final, so that a retry tries again', (code) => {
    expect(isFinalRefusal(new DomainError(code, 'x'))).toBe(false);
  });

  it('should not call an unexpected error final', () => {
    expect(isFinalRefusal(new Error('boom'))).toBe(false);
  });
});
