import { describe, expect, it } from 'vitest';
import { DomainError } from '../errors/domain-error.js';
import { PositiveIntPipe } from './positive-int.pipe.js';

describe('PositiveIntPipe', () => {
  const pipe = new PositiveIntPipe();

  it.each([
    ['1', 1],
    ['42', 42],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
  ])('should accept %j as %d', (value, expected) => {
    expect(pipe.transform(value)).toBe(expected);
  });

  it.each([
    '0',
    '-1',
    '01',
    '1.5',
    'abc',
    '',
    '9007199254740992',
    '99999999999999999',
    ' 1',
    '1 ',
    '1e3',
    '0x10',
  ])('should refuse %j with VALIDATION_FAILED', (value) => {
    let thrown: unknown;
    try {
      pipe.transform(value);
    } catch (error) {
      thrown = error;
    }

    expect(thrown).toBeInstanceOf(DomainError);
    expect((thrown as DomainError).code).toBe('VALIDATION_FAILED');
  });
});
