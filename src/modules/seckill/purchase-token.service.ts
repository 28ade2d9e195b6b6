import { Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DomainError, orUnavailable } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { GoodsService } from '../goods/goods.service.js';
import type { Challenge } from 'altcha-lib';
import { ChallengeService } from '../challenge/challenge.service.js';
import { PurchaseTokenStore, TokenConsumeCode, USED } from './purchase-token.store.js';
import { WaitingRoomService } from '../waiting-room/waiting-room.service.js';

export interface PurchaseToken {
  token: string;
  expiresAt: string;
}

/** 32 random bytes, base64url: anything else is refused before Redis is asked. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/**
 * One-time purchase tokens (the "hidden path"): with SECKILL_REQUIRE_TOKEN on, a purchase must
 * carry a token that only this route hands out, only inside the sale window, bound to the user
 * and the goods, good for one purchase. A bot cannot fire before the window opens (or
 * SECKILL_TOKEN_EARLY_MS before it), and every purchase costs it one more round trip through a
 * rate-limited route.
 */
@Injectable()
export class PurchaseTokenService {
  private readonly logger = new Logger(PurchaseTokenService.name);

  constructor(
    private readonly tokens: PurchaseTokenStore,
    private readonly goods: GoodsService,
    private readonly challenges: ChallengeService,
    private readonly room: WaitingRoomService,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
  ) {}

  /**
   * A proof-of-work challenge for the token, under the same window rules as the token itself: a
   * challenge costs the server one key derivation, not spent on a token that cannot be had. A
   * queue sale's challenge (for joining its waiting room) is had from queueOpensAt.
   */
  async challenge(goodsId: number, userId: number): Promise<Challenge> {
    await this.saleWindow(goodsId, { forJoining: true });
    return this.challenges.issue(goodsId, userId);
  }

  /** With SECKILL_REQUIRE_CHALLENGE on, `challenge` must carry a solved one (redeemed here). */
  async issue(goodsId: number, userId: number, challenge?: string): Promise<PurchaseToken> {
    const goods = await this.saleWindow(goodsId);
    await this.room.requireAdmission(goods, userId);
    // After the window and admission checks: a solved challenge is not burnt on a token that
    // cannot be had.
    if (this.seckill.requireChallenge) {
      await this.challenges.redeem(goodsId, userId, challenge);
    }
    const now = Date.now();
    const ttlMs = Math.max(1, Math.min(this.seckill.tokenTtlMs, goods.endAt.getTime() - now));
    const token = randomBytes(32).toString('base64url');
    await orUnavailable('Redis', () => this.tokens.save(goodsId, token, userId, ttlMs));
    this.logger.debug(`purchase token issued: goods=${goodsId} user=${userId} ttlMs=${ttlMs}`);
    return { token, expiresAt: new Date(now + ttlMs).toISOString() };
  }

  /**
   * The goods, when its token window is open: from SECKILL_TOKEN_EARLY_MS before the sale to its
   * end (`forJoining`, a queue sale's: from queueOpensAt, when its waiting room opens).
   */
  private async saleWindow(goodsId: number, { forJoining = false } = {}) {
    const goods = await orUnavailable('MySQL', () => this.goods.findOrThrow(goodsId));
    const now = Date.now();
    const opensAt = Math.min(
      goods.startAt.getTime() - this.seckill.tokenEarlyMs,
      forJoining && goods.queueOpensAt ? goods.queueOpensAt.getTime() : Infinity,
    );
    if (now < opensAt) {
      throw new DomainError('SALE_NOT_STARTED', 'The sale has not started yet');
    }
    if (now >= goods.endAt.getTime()) throw new DomainError('SALE_ENDED', 'The sale has ended');
    return goods;
  }

  /**
   * Throws 403 FORBIDDEN saying why unless the token is this user's, for this goods, and unused.
   * Only reads: the purchase it guards spends it (spend) once it has a final answer.
   */
  async check(goodsId: number, userId: number, token: string | undefined): Promise<void> {
    if (!token) {
      throw new DomainError(
        'FORBIDDEN',
        'A purchase token is required: get one from GET /api/v1/seckill/:goodsId/token and send it as X-Seckill-Token',
      );
    }
    const owner = TOKEN_SHAPE.test(token)
      ? await orUnavailable('Redis', () => this.tokens.ownerOf(goodsId, token))
      : null;
    if (owner === String(userId)) return;
    if (owner === USED) {
      throw new DomainError('FORBIDDEN', 'This purchase token was already used; get a new one');
    }
    if (owner !== null) {
      throw new DomainError('FORBIDDEN', 'This purchase token was issued to another user');
    }
    throw new DomainError(
      'FORBIDDEN',
      'This purchase token is not valid for this goods (unknown, expired or for other goods)',
    );
  }

  /**
   * Uses a checked token up, atomically (of two attempts racing past the lock, one spends it).
   * Never throws: a token left unspent by a Redis blip only lets its owner meet the per-user
   * rule (ALREADY_PURCHASED) again.
   */
  async spend(goodsId: number, userId: number, token: string): Promise<void> {
    try {
      const code = await this.tokens.spend(goodsId, token, userId);
      if (code !== TokenConsumeCode.Consumed && code !== TokenConsumeCode.Used) {
        this.logger.warn(
          `purchase token vanished before it was spent: goods=${goodsId} user=${userId}`,
        );
      }
    } catch (error) {
      this.logger.warn(
        `purchase token not spent: goods=${goodsId} user=${userId} ${(error as Error).message}`,
      );
    }
  }
}
