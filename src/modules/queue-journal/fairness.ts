import { createHash, createHmac } from 'node:crypto';

/**
 * The arithmetic of a queue sale's commit-and-reveal, shared by the room and by anybody who
 * checks it (the draw's verifier): what is committed, what each join adds to the digest of the
 * pre-queue, and the seed the shuffle (queue-order.ts, lua/lib/queue-order.lua) is drawn from.
 *
 * - The commitment is the hex SHA-256 of the secret's bytes, published before the first join:
 *   the secret cannot be chosen after seeing who joined.
 * - Each join of the pre-queue is a leaf `index:pseudonym\n` (its join index, and the buyer's
 *   pseudonym for this sale); the digest is the hex SHA-256 of the leaves in join-index order, as
 *   the pre-queue stood at the start: nobody who joined could know the secret it is combined with.
 * - The seed is the first 128 bits (32 hex digits) of SHA-256(secret bytes ‖ digest's bytes):
 *   neither side steers it alone. 128 bits keeps a round of the shuffle within one SHA1 block.
 */

/** The hex SHA-256 of the secret's bytes. */
export function seedCommitment(secret: Buffer): string {
  return createHash('sha256').update(secret).digest('hex');
}

/**
 * A buyer's pseudonym in one sale's export and digest: the hex HMAC-SHA-256 of the user id under
 * the sale's own key, which is never revealed (user ids are small integers: a pseudonym under a
 * revealed key would be undone by trying them all).
 */
export function pseudonymOf(key: Buffer, userId: number): string {
  return createHmac('sha256', key).update(String(userId)).digest('hex');
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
