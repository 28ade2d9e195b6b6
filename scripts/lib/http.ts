// Small JSON-over-HTTP calls (setup, checks): fetch is plenty; the load goes through load.ts.
import { ScriptError } from './errors.js';

const REQUEST_TIMEOUT_MS = 30_000;

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function nonNegativeIntegerField(body: unknown, field: string): number | undefined {
  if (!isRecord(body)) return undefined;
  const raw = body[field];
  // Only numbers or numeric strings: Number(null) would silently read as 0.
  const value = typeof raw === 'number' || typeof raw === 'string' ? Number(raw) : NaN;
  return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

export interface JsonResponse {
  status: number;
  body: unknown;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
}

export async function requestJson(
  method: string,
  url: string,
  options: RequestOptions = {},
): Promise<JsonResponse> {
  const headers: Record<string, string> = {};
  const init: RequestInit = { method, headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(url, init);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: keep the raw text for the error message.
  }
  return { status: response.status, body };
}

export function expectStatus(what: string, response: JsonResponse, expected: number): void {
  if (response.status === expected) return;
  const hint =
    response.status === 401 ? ' (is JWT_SECRET the same for the server and this script?)' : '';
  throw new ScriptError(
    `${what}: expected HTTP ${expected}, got ${response.status}${hint}: ${JSON.stringify(response.body)}`,
  );
}
