import { Injectable, Logger } from '@nestjs/common';
import { DomainError, orUnavailable } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import type { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { GoodsService } from '../goods/goods.service.js';
import { ChallengeService } from '../seckill/challenge.service.js';
import { JoinCode, QueueScripts, type QueueStanding, type QueueState } from './queue-scripts.js';

/** GET /api/v1/seckill/:goodsId/queue's answer (the contract's). */
export interface QueueStatus {
  state: QueueState;
  /** 1 for the next buyer to be admitted; null unless WAITING and placed by the shuffle. */
  position: number | null;
  ahead: number | null;
  /** Seconds until admission, from the pace of the last ten seconds; null once not waiting. */
  etaSeconds: number | null;
  admittedUntil?: string;
}

/** A queue sale's row, with the waiting-room columns a queue sale always has. */
export type QueueSale = GoodsEntity & {
  queueOpensAt: Date;
  admitPerSecond: number;
  admissionTtlSeconds: number;
};

/**
 * A `queue` sale's waiting room, as the buyer meets it: joining (the pre-queue until the shuffle
 * at startAt, then in arrival order) and the standing. Admission itself is AdmissionPacer's;
 * the deduct sells only to admitted buyers (lua/seckill-deduct.lua).
 */
@Injectable()
export class WaitingRoom {
  private readonly logger = new Logger(WaitingRoom.name);

  constructor(
    private readonly goods: GoodsService,
    private readonly scripts: QueueScripts,
    private readonly challenges: ChallengeService,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
  ) {}

  /** Joins (or keeps the place held); with SECKILL_REQUIRE_CHALLENGE on, a solved challenge. */
  async join(goodsId: number, userId: number, challenge?: string): Promise<QueueStatus> {
    const sale = await this.queueSale(goodsId);
    const now = Date.now();
    // Judged here first so that a solved challenge is not burnt on a join that cannot be had.
    if (now < sale.queueOpensAt.getTime()) throw notOpenYet(sale);
    if (now >= sale.endAt.getTime()) throw new DomainError('SALE_ENDED', 'The sale has ended');
    if (this.seckill.requireChallenge) {
      await this.challenges.redeem(goodsId, userId, challenge);
    }
    const code = await orUnavailable('Redis', () =>
      this.scripts.join(goodsId, userId, {
        opensAt: sale.queueOpensAt.getTime(),
        startAt: sale.startAt.getTime(),
        endAt: sale.endAt.getTime(),
      }),
    );
    if (code === JoinCode.NotOpen) throw notOpenYet(sale);
    if (code === JoinCode.Ended) throw new DomainError('SALE_ENDED', 'The sale has ended');
    if (code === JoinCode.Joined) {
      this.logger.debug(`queue joined: goods=${goodsId} user=${userId}`);
    }
    return this.status(goodsId, userId);
  }

  async status(goodsId: number, userId: number): Promise<QueueStatus> {
    const sale = await this.queueSale(goodsId);
    const standing = await orUnavailable('Redis', () => this.scripts.status(goodsId, userId));
    return queueStatusOf(sale, standing, Date.now());
  }

  /**
   * Throws 403 NOT_ADMITTED unless the buyer holds an admission in force, in a queue sale (the
   * purchase token's check; the purchase itself is judged by the deduct, atomically).
   */
  async requireAdmission(goods: GoodsEntity, userId: number): Promise<void> {
    if (goods.admission !== 'queue') return;
    const { state } = await orUnavailable('Redis', () => this.scripts.status(goods.id, userId));
    if (state !== 'ADMITTED') {
      throw new DomainError(
        'NOT_ADMITTED',
        `The waiting room has not admitted you (your queue state: ${state})`,
      );
    }
  }

  /**
   * The goods, when it is a queue sale (404 GOODS_NOT_FOUND, 409 QUEUE_NOT_OPEN otherwise);
   * `fresh`: read from MySQL now, not the row served from memory for a second.
   */
  async queueSale(goodsId: number, { fresh = false } = {}): Promise<QueueSale> {
    const goods = await orUnavailable('MySQL', () =>
      fresh ? this.goods.findOrThrow(goodsId) : this.goods.findCached(goodsId),
    );
    if (!isQueueSale(goods)) {
      throw new DomainError(
        'QUEUE_NOT_OPEN',
        `Goods ${goodsId} has no waiting room: it is sold to buyers as they come (admission open)`,
      );
    }
    return goods;
  }
}

export function isQueueSale(goods: GoodsEntity): goods is QueueSale {
  return (
    goods.admission === 'queue' &&
    goods.queueOpensAt !== null &&
    goods.admitPerSecond !== null &&
    goods.admissionTtlSeconds !== null
  );
}

function notOpenYet(sale: QueueSale): DomainError {
  return new DomainError(
    'QUEUE_NOT_OPEN',
    `The waiting room opens at ${sale.queueOpensAt.toISOString()}`,
  );
}

/** The standing as the buyer reads it: a place from 1, and an ETA from the measured pace. */
export function queueStatusOf(sale: QueueSale, standing: QueueStanding, now: number): QueueStatus {
  const { state, ahead } = standing;
  if (state === 'ADMITTED') {
    return {
      state,
      position: null,
      ahead: null,
      etaSeconds: 0,
      admittedUntil: new Date(standing.admittedUntil ?? now).toISOString(),
    };
  }
  if (state !== 'WAITING') return { state, position: null, ahead: null, etaSeconds: null };
  const untilStart = Math.max(0, Math.ceil((sale.startAt.getTime() - now) / 1000));
  if (ahead === null) return { state, position: null, ahead: null, etaSeconds: untilStart };
  const pace = standing.admittedLast10s > 0 ? standing.admittedLast10s / 10 : sale.admitPerSecond;
  return {
    state,
    position: ahead + 1,
    ahead,
    etaSeconds: untilStart + Math.ceil(ahead / pace),
  };
}
