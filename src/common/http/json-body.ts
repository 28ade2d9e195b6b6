import { DomainError } from '../errors/domain-error.js';

/**
 * No route's body needs more than a few levels; class-transformer and class-validator walk a body
 * recursively, and one nested 3,000 deep overflowed the stack (a 500) before this limit.
 */
export const MAX_JSON_DEPTH = 32;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether objects and arrays in a JSON text nest deeper than `limit`. One pass over the text, no
 * recursion, so any depth is measured without a stack to overflow. Brackets inside strings do not
 * count; a malformed text gives some answer, and JSON.parse refuses it anyway.
 */
export function jsonNestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === BACKSLASH) i++;
      else if (char === QUOTE) inString = false;
    } else if (char === QUOTE) {
      inString = true;
    } else if (char === OPEN_BRACE || char === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/**
 * The JSON body parser of every route. An empty body is a valid purchase ("buy one") even when
 * sent as application/json, so it parses to undefined; malformed or too deep is a 400 before any
 * pipe sees the body.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `The body nests deeper than ${MAX_JSON_DEPTH} levels`,
    );
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new DomainError('VALIDATION_FAILED', 'Malformed JSON body');
  }
}
