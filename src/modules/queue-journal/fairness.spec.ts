import { describe, expect, it } from 'vitest';

import { drawSeed, pseudonymOf, pseudonymsOf, seedCommitment } from './fairness.js';
import { PreQueueDigest } from '../waiting-room/pre-queue-digest.js';

const SECRET = Buffer.from(
  '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
  'hex',
);
const KEY = Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex');

describe('fairness (the commit-and-reveal arithmetic)', () => {
  it('should commit to the hex SHA-256 of the secret bytes, as the contract says', () => {
    expect(seedCommitment(Buffer.from('abc'))).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    expect(seedCommitment(SECRET)).toBe(
      '4773d12e2371bb935b9a0f5439b4a1c3ad3f2414b86980f8418d1cfabdfadfef',
    );
  });

  it('should give each buyer one pseudonym per sale key: the id encrypted, AES-256, as openssl does', () => {
    // Known answers: printf '\0…\7' | openssl enc -aes-256-ecb -K 0001…1f -nopad | xxd -p
    expect(pseudonymOf(KEY, 7)).toBe('5d15369920a8454134a61443fe5fd1b0');
    expect(pseudonymOf(KEY, 9)).toBe('2cbd526be87c119cd01227fa64243b82');
    expect(pseudonymsOf(KEY, [9, 7, 9])).toEqual([
      pseudonymOf(KEY, 9),
      pseudonymOf(KEY, 7),
      pseudonymOf(KEY, 9),
    ]);
    expect(pseudonymOf(Buffer.alloc(32), 7)).not.toBe(pseudonymOf(KEY, 7));
    // A permutation: a thousand buyers, a thousand pseudonyms.
    const many = pseudonymsOf(
      KEY,
      Array.from({ length: 1_000 }, (_, i) => 2 ** 40 + i),
    );
    expect(new Set(many).size).toBe(1_000);
    expect(() => pseudonymsOf(KEY, [-1])).toThrow(RangeError);
    expect(() => pseudonymsOf(KEY, [1.5])).toThrow(RangeError);
  });

  it('should draw the seed from the secret and the digest together: 32 hex digits, changed by either', () => {
    const digest = new PreQueueDigest();
    digest.add(0, pseudonymOf(KEY, 7));
    digest.add(2, pseudonymOf(KEY, 9));
    // Pinned, as computed apart (Python's hashlib over openssl's pseudonyms): a verifier written
    // elsewhere must reach the same seed from the same inputs.
    expect(digest.digest()).toBe(
      'f83fb21f5790fc73ae3cc8f6061caa19c50cec0dfbba9a0578d408206afe188a',
    );
    const seed = drawSeed(SECRET, digest.digest());
    expect(seed).toBe('9d50ef3eeb0cc1891463e820d3f200da');
    const other = new PreQueueDigest();
    other.add(0, pseudonymOf(KEY, 7));
    other.add(1, pseudonymOf(KEY, 9));
    expect(drawSeed(SECRET, other.digest())).not.toBe(seed);
    expect(drawSeed(Buffer.alloc(32), digest.digest())).not.toBe(seed);
  });
});
