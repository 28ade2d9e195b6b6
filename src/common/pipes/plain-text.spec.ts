import { describe, expect, it } from 'vitest';
import { isPlainText } from './plain-text.js';

describe('isPlainText', () => {
  it.each([
    ['NUL', 'Phone\u0000X'],
    ['a tab', 'Phone\tX'],
    ['a newline', 'Phone\nX'],
    ['DEL', 'Phone\u007FX'],
    ['a C1 control (CSI)', 'Phone\u009BX'],
    ['the line separator', 'Phone\u2028X'],
    ['the right-to-left override', '\u202EX enohP'],
    ['the left-to-right embedding', 'Phone\u202AX'],
    ['a right-to-left isolate', 'Phone\u2067X\u2069'],
    ['the left-to-right mark', 'Phone\u200EX'],
    ['the Arabic letter mark', 'Phone\u061CX'],
  ])('should refuse a name with %s', (_name, value) => {
    expect(isPlainText(value)).toBe(false);
  });

  it.each([
    ['ASCII', 'Phone X, 256 GB'],
    ['accents and CJK', 'Téléphone 手机'],
    ['right-to-left script', 'هاتف'],
    ['an emoji sequence with a zero-width joiner', 'Family 👨‍👩‍👧'],
  ])('should accept %s', (_name, value) => {
    expect(isPlainText(value)).toBe(true);
  });
});
