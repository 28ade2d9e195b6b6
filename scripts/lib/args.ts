// Command-line flags for the scripts: node's parseArgs, strict, with a mistake reported as a
// usage error (exit 2 and the usage text) rather than a stack trace.
import { parseArgs, type ParseArgsConfig } from 'node:util';

import { UsageError } from './errors.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export function readFlags<O extends Options>(argv: string[], options: O) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** An integer flag within [min, max]. */
export function integerFlag(name: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!/^-?[0-9]+$/.test(raw) || value < min || value > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got ${raw}`);
  }
  return value;
}

/** A positive integer flag, at most `max`: plain decimals only. */
export function parsePositiveInteger(
  name: string,
  raw: string | undefined,
  max = Number.MAX_SAFE_INTEGER,
): number {
  // A strict pattern, because Number() would accept "1e3", "0x10" or " 7".
  if (raw === undefined || !/^[1-9][0-9]*$/.test(raw) || Number(raw) > max) {
    const range =
      max === Number.MAX_SAFE_INTEGER ? 'a positive integer' : `an integer between 1 and ${max}`;
    throw new UsageError(
      `--${name} must be ${range}, got ${raw === undefined ? 'nothing' : JSON.stringify(raw)}`,
    );
  }
  return Number(raw);
}
