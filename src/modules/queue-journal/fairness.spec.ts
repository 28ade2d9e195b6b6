import { describe, expect, it } from 'vitest';

import { drawSeed, pseudonymOf, seedCommitment } from './fairness.js';
import { PreQueueDigest } from '../waiting-room/pre-queue-digest.js';

const SECRET = Buffer.from(
  '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
  'hex',
);
const KEY = Buffer.from('key');

describe('fairness (the commit-and-reveal arithmetic)', () => {
  it('should commit to the hex SHA-256 of the secret bytes, as the contract says', () => {
    expect(seedCommitment(Buffer.from('abc'))).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    expect(seedCommitment(SECRET)).toBe(
      '4773d12e2371bb935b9a0f5439b4a1c3ad3f2414b86980f8418d1cfabdfadfef',
    );
  });

  it('should give a buyer one pseudonym per sale key, another under another key', () => {
    expect(pseudonymOf(KEY, 7)).toBe(pseudonymOf(KEY, 7));
    expect(pseudonymOf(KEY, 7)).toMatch(/^[0-9a-f]{64}$/);
    expect(pseudonymOf(KEY, 7)).not.toBe(pseudonymOf(KEY, 8));
    expect(pseudonymOf(Buffer.from('other'), 7)).not.toBe(pseudonymOf(KEY, 7));
  });

  it('should draw the seed from the secret and the digest together: 32 hex digits, changed by either', () => {
    const digest = new PreQueueDigest();
    digest.add(0, pseudonymOf(KEY, 7));
    digest.add(2, pseudonymOf(KEY, 9));
    // Pinned: a verifier written elsewhere must reach the same seed from the same inputs.
    expect(digest.digest()).toBe(
      'fe8663c93e83cca9b508e8c62641bb1ee514a001d8a59a9c32f964556478fd7b',
    );
    const seed = drawSeed(SECRET, digest.digest());
    expect(seed).toBe('bd6811c675ea233f08eeaf1279e71913');
    const other = new PreQueueDigest();
    other.add(0, pseudonymOf(KEY, 7));
    other.add(1, pseudonymOf(KEY, 9));
    expect(drawSeed(SECRET, other.digest())).not.toBe(seed);
    expect(drawSeed(Buffer.alloc(32), digest.digest())).not.toBe(seed);
  });
});
