/**
 * The readers every config namespace builds on. Each names its variable first in what it throws,
 * so that main.ts can print the message as it is and the operator knows what to fix.
 */

import { ConfigValidationError } from './config-validation.error.js';

export type Env = Record<string, string | undefined>;

export function readString(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? fallback : raw.trim();
}

export function readInt(
  env: Env,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw.trim());
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigValidationError(
      `${name} must be an integer between ${min} and ${max}, got "${raw}"`,
    );
  }
  return value;
}

/** An unset variable is null (the feature is off) rather than a default value. */
export function readOptionalInt(env: Env, name: string, min: number, max: number): number | null {
  return readString(env, name, '') === '' ? null : readInt(env, name, 0, min, max);
}

export function readBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigValidationError(`${name} must be true or false, got "${env[name]}"`);
}

export function readUrl(env: Env, name: string, fallback: string, protocols: string[]): string {
  const value = readString(env, name, fallback);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigValidationError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigValidationError(
      `${name} must use ${protocols.join(' or ')}, got "${url.protocol}"`,
    );
  }
  return value;
}

/**
 * A comma-separated list of URLs (the nodes of one cluster), each checked as readUrl does; the
 * error names the variable and the entry.
 */
export function readUrls(env: Env, name: string, fallback: string, protocols: string[]): string[] {
  const entries = readString(env, name, fallback)
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) throw new ConfigValidationError(`${name} lists no URL`);
  return entries.map((entry, index) => {
    try {
      return readUrl({ [name]: entry }, name, entry, protocols);
    } catch (error) {
      if (!(error instanceof ConfigValidationError) || entries.length === 1) throw error;
      throw new ConfigValidationError(`${error.message} (entry ${index + 1} of ${entries.length})`);
    }
  });
}

export function readOneOf<T extends string>(
  env: Env,
  name: string,
  choices: readonly T[],
  fallback: T,
): T {
  const value = readString(env, name, fallback) as T;
  if (!choices.includes(value)) {
    throw new ConfigValidationError(
      `${name} must be one of ${choices.join(', ')}, got "${env[name]}"`,
    );
  }
  return value;
}

/** A comma-separated list, its entries trimmed; empty ones (a trailing comma) are dropped. */
export function readList(env: Env, name: string): string[] {
  return readString(env, name, '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
}
