import { describe, expect, it } from 'vitest';
import {
  parseSignatureHeader,
  signatureHeader,
  signatureOf,
  verifySignature,
} from './webhook-signature.js';

const NOW = 1_800_000_000;
const BODY = '{"id":"evt_1","type":"payment.succeeded"}';

describe('webhook signature', () => {
  it('should sign "<t>.<body>" with HMAC-SHA256 in hex, as a provider integrator computes it', () => {
    // openssl: printf '1800000000.{"id":"evt_1","type":"payment.succeeded"}' | openssl dgst -sha256 -hmac secret
    expect(signatureOf('secret', NOW, BODY)).toMatch(/^[0-9a-f]{64}$/);
    expect(signatureHeader(['secret'], BODY, NOW)).toBe(
      `t=${NOW},v1=${signatureOf('secret', NOW, BODY)}`,
    );
  });

  it('should pass a body signed with either secret while one is rotated', () => {
    const secrets = ['old-secret-0123456789', 'new-secret-0123456789'];
    expect(verifySignature(signatureHeader([secrets[0]], BODY, NOW), BODY, secrets, 300, NOW)).toBe(
      'valid',
    );
    expect(verifySignature(signatureHeader([secrets[1]], BODY, NOW), BODY, secrets, 300, NOW)).toBe(
      'valid',
    );
    const both = signatureHeader(['someone-else', secrets[1]], BODY, NOW);
    expect(verifySignature(both, BODY, secrets, 300, NOW)).toBe('valid');
  });

  it('should refuse a changed body, another secret, a stale or future time, and a malformed header', () => {
    const header = signatureHeader(['secret'], BODY, NOW);
    expect(verifySignature(header, `${BODY} `, ['secret'], 300, NOW)).toBe('mismatch');
    expect(verifySignature(header, BODY, ['other'], 300, NOW)).toBe('mismatch');
    expect(verifySignature(header, BODY, ['secret'], 300, NOW + 301)).toBe('stale');
    expect(verifySignature(header, BODY, ['secret'], 300, NOW - 301)).toBe('stale');
    expect(verifySignature(header, BODY, ['secret'], 300, NOW + 300)).toBe('valid');
    for (const bad of [undefined, '', 'v1=abc', `t=${NOW}`, `t=x,v1=${'0'.repeat(64)}`]) {
      expect(verifySignature(bad, BODY, ['secret'], 300, NOW)).toBe('malformed');
    }
  });

  it('should read every v1 of a header and ignore schemes it does not know', () => {
    const a = 'a'.repeat(64);
    const b = 'B'.repeat(64);
    expect(parseSignatureHeader(`t=5, v0=zz, v1=${a},v1=${b}`)).toEqual({
      timestamp: 5,
      signatures: [a, b.toLowerCase()],
    });
    expect(parseSignatureHeader(`t=5,t=6,v1=${a}`)).toBeNull();
  });
});
