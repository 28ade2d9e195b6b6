import { describe, expect, it } from 'vitest';
import { DomainError } from '../errors/domain-error.js';
import { jsonNestsDeeperThan, MAX_JSON_DEPTH, parseJsonBody } from './json-body.js';

const nested = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

describe('jsonNestsDeeperThan', () => {
  it('should allow nesting up to the limit and refuse one level more', () => {
    expect(jsonNestsDeeperThan(nested(3), 3)).toBe(false);
    expect(jsonNestsDeeperThan(nested(4), 3)).toBe(true);
  });

  it('should count arrays and objects alike, and siblings not at all', () => {
    expect(jsonNestsDeeperThan('[[{"a":[1]}]]', 3)).toBe(true);
    expect(jsonNestsDeeperThan('[[1],[2],{"a":{}},{"b":[]}]', 3)).toBe(false);
    expect(jsonNestsDeeperThan('[[1],[2],{"a":{}},{"b":[]}]', 2)).toBe(true);
  });

  it('should ignore brackets inside strings, escaped quotes included', () => {
    expect(jsonNestsDeeperThan('{"a":"[[[[{{{{"}', 1)).toBe(false);
    expect(jsonNestsDeeperThan('{"a":"\\"[[[[","b":"\\\\"}', 1)).toBe(false);
    expect(jsonNestsDeeperThan('{"a":"\\\\",  "b":[[1]]}', 2)).toBe(true);
  });

  it('should measure a million levels without overflowing the stack', () => {
    expect(jsonNestsDeeperThan('['.repeat(1_000_000), MAX_JSON_DEPTH)).toBe(true);
  });
});

describe('parseJsonBody', () => {
  const refusal = (text: string) => {
    try {
      parseJsonBody(text);
    } catch (error) {
      return error as DomainError;
    }
    throw new Error(`parseJsonBody accepted ${text.slice(0, 40)}`);
  };

  it('should parse an empty body as undefined and a JSON body as its value', () => {
    expect(parseJsonBody('  ')).toBeUndefined();
    expect(parseJsonBody('{"quantity":2}')).toEqual({ quantity: 2 });
  });

  it('should refuse a body deeper than MAX_JSON_DEPTH with VALIDATION_FAILED', () => {
    expect(parseJsonBody(nested(MAX_JSON_DEPTH))).toBeTypeOf('object');
    const error = refusal(nested(MAX_JSON_DEPTH + 1));
    expect(error).toBeInstanceOf(DomainError);
    expect(error.code).toBe('VALIDATION_FAILED');
  });

  it('should refuse malformed JSON with VALIDATION_FAILED', () => {
    expect(refusal('{"quantity":').code).toBe('VALIDATION_FAILED');
  });
});
