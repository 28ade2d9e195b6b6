import { createCipheriv, createHash } from 'node:crypto';

/**
 * The arithmetic of a queue sale's commit-and-reveal, shared by the room and by anybody who
 * checks it (the draw's verifier): what is committed, what each join adds to the digest of the
 * pre-queue, and the seed the shuffle (queue-order.ts, lua/lib/queue-order.lua) is drawn from.
 *
 * - The commitment is the hex SHA-256 of the secret's bytes, published before the first join:
 *   the secret cannot be chosen after seeing who joined.
 * - Each join of the pre-queue is a leaf `index:pseudonym\n` (its join index, and the buyer's
 *   pseudonym for this sale, pseudonymsOf); the digest is the hex SHA-256 of the leaves in
 *   join-index order, as the pre-queue stood at the start: nobody who joined could know the
 *   secret it is combined with.
 * - The seed is the first 128 bits (32 hex digits) of SHA-256(secret bytes ‖ digest's bytes):
 *   neither side steers it alone. 128 bits keeps a round of the shuffle within one SHA1 block.
 */

/** The hex SHA-256 of the secret's bytes. */
export function seedCommitment(secret: Buffer): string {
  return createHash('sha256').update(secret).digest('hex');
}

/**
 * Buyers' pseudonyms in one sale's export and digest: each user id, as a 16-byte block (the id
 * big-endian in its last 8 bytes), encrypted with AES-256 under the sale's own key, which is never
 * revealed (user ids are small integers: a pseudonym under a revealed key would be undone by
 * trying them all); 32 hex digits. A keyed permutation, so no two buyers share a pseudonym, and
 * a page of them costs one cipher call (about 0.3 µs each, where an HMAC each cost 2–5 µs: the
 * draw hashes the last joins at the start, on the first admissions' path).
 */
export function pseudonymsOf(key: Buffer, userIds: readonly number[]): string[] {
  const blocks = Buffer.alloc(16 * userIds.length);
  for (const [i, userId] of userIds.entries()) {
    if (!Number.isSafeInteger(userId) || userId < 0) throw new RangeError(`user id ${userId}`);
    blocks.writeBigUInt64BE(BigInt(userId), 16 * i + 8);
  }
  const cipher = createCipheriv('aes-256-ecb', key, null).setAutoPadding(false);
  const sealed = Buffer.concat([cipher.update(blocks), cipher.final()]);
  return userIds.map((_, i) => sealed.toString('hex', 16 * i, 16 * i + 16));
}

/** One buyer's pseudonym (pseudonymsOf). */
export function pseudonymOf(key: Buffer, userId: number): string {
  return pseudonymsOf(key, [userId])[0];
}

/** A join's leaf of the digest. */
export function leafOf(index: number, pseudonym: string): string {
  return `${index}:${pseudonym}\n`;
}

/** The seed the shuffle is drawn from: 32 hex digits. */
export function drawSeed(secret: Buffer, digest: string): string {
  return createHash('sha256')
    .update(secret)
    .update(Buffer.from(digest, 'hex'))
    .digest('hex')
    .slice(0, 32);
}
