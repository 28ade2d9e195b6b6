import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The `Seckill-Signature` of a webhook, in the form payment providers made common:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, with one `v1` per secret in force
 * (two while one is rotated). The provider's events are checked with it, and the merchant's are
 * signed with it.
 */
export const SIGNATURE_HEADER = 'seckill-signature';

/** The hex HMAC-SHA256 of `"<t>.<body>"`. */
export function signatureOf(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** The header's value for `body` signed at `timestamp` (seconds) with each secret. */
export function signatureHeader(
  secrets: readonly string[],
  body: string,
  timestamp = Math.floor(Date.now() / 1_000),
): string {
  return [`t=${timestamp}`, ...secrets.map((s) => `v1=${signatureOf(s, timestamp, body)}`)].join(
    ',',
  );
}

/** The header's parts: its one `t` and every `v1`; null when it is not of that form. */
export function parseSignatureHeader(
  header: string | undefined,
): { timestamp: number; signatures: string[] } | null {
  if (typeof header !== 'string' || header.length > 2_048) return null;
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 't') {
      if (timestamp !== null || !/^\d{1,12}$/.test(value)) return null;
      timestamp = Number(value);
    } else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) {
      signatures.push(value.toLowerCase());
    }
  }
  return timestamp === null || signatures.length === 0 ? null : { timestamp, signatures };
}

export type SignatureVerdict = 'valid' | 'malformed' | 'stale' | 'mismatch';

/**
 * Whether `header` signs `body` with one of `secrets`, at a time within `toleranceSeconds` of
 * `nowSeconds`. Every pair of expected and given signature is compared in constant time, so
 * the answer's timing tells nothing of how much of a guess was right.
 */
export function verifySignature(
  header: string | undefined,
  body: string,
  secrets: readonly string[],
  toleranceSeconds: number,
  nowSeconds = Math.floor(Date.now() / 1_000),
): SignatureVerdict {
  const parsed = parseSignatureHeader(header);
  if (!parsed) return 'malformed';
  if (Math.abs(nowSeconds - parsed.timestamp) > toleranceSeconds) return 'stale';
  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(signatureOf(secret, parsed.timestamp, body), 'hex');
    for (const given of parsed.signatures) {
      // Not short-circuited: every pair is compared whatever an earlier one found.
      if (timingSafeEqual(expected, Buffer.from(given, 'hex'))) matched = true;
    }
  }
  return matched ? 'valid' : 'mismatch';
}
