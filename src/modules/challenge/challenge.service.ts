import { Injectable, Logger } from '@nestjs/common';
import {
  createChallenge,
  randomInt,
  verifySolution,
  type Challenge,
  type Solution,
} from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { hkdfSync } from 'node:crypto';
import { DomainError, orUnavailable } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { authConfig, type AuthConfig } from '../../config/auth.config.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { ChallengeStore } from './challenge.store.js';

const ALGORITHM = 'PBKDF2/SHA-256';
/**
 * The solver tries counters from 0 up to the one the challenge was made with: this range is the
 * number of key derivations (each CHALLENGE_COST iterations) a client makes, 400 on average.
 */
const COUNTER_MIN = 200;
const COUNTER_MAX = 600;
/** A solved payload is a few hundred bytes; anything much longer is refused unread. */
const MAX_HEADER_LENGTH = 4_096;

const refuse = (message: string) => new DomainError('FORBIDDEN', message);

/** HMAC keys of their own, derived from JWT_SECRET: one secret to configure, none shared. */
const derivedSecret = (jwtSecret: string, purpose: string) =>
  Buffer.from(hkdfSync('sha256', jwtSecret, 'seckill-altcha', purpose, 32)).toString('hex');

interface SolvedPayload {
  challenge: Challenge;
  solution: Solution;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The base64 JSON `{challenge, solution}` the ALTCHA v2 widget submits, or why it is not one. */
function parsePayload(header: string): SolvedPayload | string {
  if (header.length > MAX_HEADER_LENGTH || !/^[A-Za-z0-9+/=_-]+$/.test(header)) {
    return 'The challenge payload is not base64';
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  } catch {
    return 'The challenge payload is not base64 of JSON';
  }
  if (!isRecord(body) || !isRecord(body.challenge) || !isRecord(body.solution)) {
    return 'The challenge payload needs {challenge, solution}';
  }
  const { challenge, solution } = body;
  if (
    !isRecord(challenge.parameters) ||
    typeof challenge.signature !== 'string' ||
    !Number.isSafeInteger(solution.counter) ||
    typeof solution.derivedKey !== 'string'
  ) {
    return 'The challenge payload is malformed';
  }
  return {
    challenge: challenge as unknown as Challenge,
    solution: solution as unknown as Solution,
  };
}

/**
 * ALTCHA v2 proof-of-work in front of the purchase token (SECKILL_REQUIRE_CHALLENGE): a client
 * must spend CPU for every token, so a scalper's thousand accounts cost it a thousand solves.
 * Self-hosted, no third party. Challenges are made in deterministic mode (the server derives the
 * key for a counter it picks and signs it), so checking a solution is two HMACs, not a key
 * derivation: a flood of wrong answers costs the server next to nothing. Each challenge names
 * its user and goods inside the signed parameters, expires, and is redeemed once (Redis, under
 * the sale's hash tag, until it would have expired anyway).
 */
@Injectable()
export class ChallengeService {
  private readonly logger = new Logger(ChallengeService.name);
  private readonly signatureSecret: string;
  private readonly keySignatureSecret: string;

  constructor(
    private readonly redeemed: ChallengeStore,
    @InjectConfig(authConfig) auth: AuthConfig,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
  ) {
    this.signatureSecret = derivedSecret(auth.jwtSecret, 'challenge-signature');
    this.keySignatureSecret = derivedSecret(auth.jwtSecret, 'key-signature');
  }

  /** A challenge for this user and goods, as altcha-lib's `createChallenge` returns it. */
  issue(goodsId: number, userId: number): Promise<Challenge> {
    return createChallenge({
      algorithm: ALGORITHM,
      cost: this.seckill.challengeCost,
      counter: randomInt(COUNTER_MAX, COUNTER_MIN),
      deriveKey,
      data: { goodsId, userId },
      expiresAt: new Date(Date.now() + this.seckill.challengeTtlMs),
      hmacSignatureSecret: this.signatureSecret,
      hmacKeySignatureSecret: this.keySignatureSecret,
    });
  }

  /**
   * Throws 403 FORBIDDEN saying why unless `header` carries a solved challenge of this user for
   * this goods, unexpired and not redeemed before; redeems it.
   */
  async redeem(goodsId: number, userId: number, header: string | undefined): Promise<void> {
    if (!header) {
      throw refuse(
        'A solved challenge is required: get one from GET /api/v1/seckill/:goodsId/challenge and send the solution as X-Seckill-Challenge',
      );
    }
    const payload = parsePayload(header);
    if (typeof payload === 'string') throw refuse(payload);
    const { challenge, solution } = payload;
    let result;
    try {
      result = await verifySolution({
        challenge,
        solution,
        deriveKey,
        hmacSignatureSecret: this.signatureSecret,
        hmacKeySignatureSecret: this.keySignatureSecret,
      });
    } catch {
      // altcha-lib throws on parameters it cannot use (an unknown algorithm, a bad counter).
      throw refuse('The challenge payload is malformed');
    }
    if (result.expired) throw refuse('The challenge has expired; get a new one');
    if (!result.verified) {
      throw refuse(
        result.invalidSignature
          ? 'The challenge was not issued by this service'
          : 'The challenge is not solved',
      );
    }
    // Signed, so these are ours: the challenge was made for exactly this user and goods.
    const data = challenge.parameters.data;
    if (data?.userId !== userId) throw refuse('The challenge was issued to another user');
    if (data?.goodsId !== goodsId) throw refuse('The challenge was issued for another goods');
    const expiresAtMs = (challenge.parameters.expiresAt ?? 0) * 1000;
    const ttlMs = Math.max(1_000, expiresAtMs - Date.now());
    const fresh = await orUnavailable('Redis', () =>
      this.redeemed.redeemOnce(goodsId, challenge.signature!, ttlMs),
    );
    if (!fresh) throw refuse('The challenge was already used; get a new one');
    this.logger.debug(`challenge redeemed: goods=${goodsId} user=${userId}`);
  }
}
