import { describe, expect, it } from 'vitest';
import { remembered } from './remembered.js';

describe('remembered', () => {
  it('computes an argument once, and again only after more arguments than it keeps', () => {
    const computed: string[] = [];
    const length = remembered((argument) => {
      computed.push(argument);
      return argument.length;
    }, 2);
    expect([length('a'), length('bb'), length('a'), length('bb')]).toEqual([1, 2, 1, 2]);
    expect(computed).toEqual(['a', 'bb']);
    expect(length('ccc')).toBe(3);
    expect(length('a')).toBe(1);
    expect(computed).toEqual(['a', 'bb', 'ccc', 'a']);
  });
});
