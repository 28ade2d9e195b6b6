import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BASELINE_SCRIPTS } from './scripts.js';

describe('the baseline’s Lua scripts', () => {
  it.each(BASELINE_SCRIPTS)('should pass $file as many keys as its header names', (script) => {
    const lua = readFileSync(new URL(`../../lua/${script.file}`, import.meta.url), 'utf8');
    const header = lua.slice(0, lua.indexOf(']]'));
    const keys = [...header.matchAll(/KEYS\[(\d+)\]/g)].map((match) => Number(match[1]));
    expect(Math.max(...keys)).toBe(script.numberOfKeys);
  });
});
