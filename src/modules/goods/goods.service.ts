import { Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { DomainError } from '../../common/errors/domain-error.js';
import { GoodsEntity, hasWaitingRoom } from '../../infra/database/entities/goods.entity.js';
import { GoodsRepository } from './goods.repository.js';
import type { CreateGoodsDto, GoodsCreatedDto, GoodsStatus } from './goods.dto.js';

const PAGE_CACHE_MS = 1_000;
const PAGE_CACHE_MAX = 10_000;

@Injectable()
export class GoodsService {
  private readonly logger = new Logger(GoodsService.name);
  private readonly pageCache = new Map<number, { goods: GoodsEntity; until: number }>();

  constructor(
    private readonly goods: GoodsRepository,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
  ) {}

  async create(input: CreateGoodsDto): Promise<GoodsCreatedDto> {
    const startAt = new Date(input.startAt);
    const endAt = new Date(input.endAt);
    if (endAt.getTime() <= startAt.getTime()) {
      throw new DomainError('VALIDATION_FAILED', 'endAt must be after startAt');
    }
    const admission = admissionOf(input, startAt);
    const saved = await this.goods.create({
      name: input.name,
      price: input.price.toFixed(2),
      totalStock: input.stock,
      stock: input.stock,
      startAt,
      endAt,
      perUserLimit: input.perUserLimit ?? 1,
      stockShards: input.stockShards ?? (hasWaitingRoom(admission) ? 1 : this.seckill.stockShards),
      ...admission,
    });
    this.logger.log(
      `goods created: id=${saved.id} stock=${saved.totalStock} shards=${saved.stockShards} admission=${saved.admission}`,
    );
    return {
      id: saved.id,
      name: saved.name,
      price: Number(saved.price),
      totalStock: saved.totalStock,
      stock: saved.stock,
      startAt: saved.startAt.toISOString(),
      endAt: saved.endAt.toISOString(),
      perUserLimit: saved.perUserLimit,
      stockShards: saved.stockShards,
      ...admissionFields(saved),
    };
  }

  async findOrThrow(goodsId: number): Promise<GoodsEntity> {
    const goods = await this.goods.findById(goodsId);
    if (!goods) throw new DomainError('GOODS_NOT_FOUND', `Goods ${goodsId} not found`);
    return goods;
  }

  /**
   * Marks the sale as loaded into Redis, before its first load; false when it was marked already
   * (Redis may have sold it since, and lost it). By MySQL's clock.
   */
  markFirstLoad(goodsId: number): Promise<boolean> {
    return this.goods.markFirstLoad(goodsId);
  }

  /** A queue sale's admission as the operator sets it (see GoodsRepository.setAdmission). */
  setAdmission(
    goodsId: number,
    change: { paused?: boolean; admitPerSecond?: number },
  ): Promise<boolean> {
    this.pageCache.delete(goodsId);
    return this.goods.setAdmission(goodsId, change);
  }

  /** The queue sales whose waiting room is open now (joining started, the sale not over). */
  openQueues(): Promise<GoodsEntity[]> {
    return this.goods.openQueues(new Date());
  }

  /** Sales whose window opens before `until` and has not closed yet. */
  startingBefore(until: Date): Promise<GoodsEntity[]> {
    return this.goods.startingBefore(until, new Date());
  }

  /**
   * The goods page and the waiting room are what a crowd refreshes: the row (name, price,
   * window, admission: what does not change during a sale) is served from memory for a second,
   * so the refreshes reach MySQL once a second per goods and instance, not once per click. The
   * live stock always comes from Redis.
   */
  async findCached(goodsId: number): Promise<GoodsEntity> {
    const now = Date.now();
    const cached = this.pageCache.get(goodsId);
    if (cached && cached.until > now) return cached.goods;
    // A page may lag by the replica's bound (DATABASE_REPLICA_URL): the row barely changes.
    const goods = await this.goods.findByIdMayLag(goodsId);
    if (!goods) throw new DomainError('GOODS_NOT_FOUND', `Goods ${goodsId} not found`);
    if (this.pageCache.size >= PAGE_CACHE_MAX) this.pageCache.clear();
    this.pageCache.set(goodsId, { goods, until: now + PAGE_CACHE_MS });
    return goods;
  }

  findByIds(ids: number[]): Promise<GoodsEntity[]> {
    return this.goods.findByIds(ids);
  }
}

/** How long before startAt a queue sale's waiting room opens when the sale does not say. */
export const DEFAULT_QUEUE_LEAD_MS = 15 * 60_000;

type AdmissionColumns = Pick<
  GoodsEntity,
  | 'admission'
  | 'queueOpensAt'
  | 'admitPerSecond'
  | 'admissionTtlSeconds'
  | 'entriesCloseAt'
  | 'winnersFactor'
>;

const QUEUE_FIELDS = ['queueOpensAt', 'admitPerSecond', 'admissionTtlSeconds'] as const;
const DRAW_FIELDS = ['entriesOpenAt', 'entriesCloseAt', 'claimSeconds', 'winnersFactor'] as const;

/** The admission columns of a new sale, judged against its start (VALIDATION_FAILED otherwise). */
function admissionOf(input: CreateGoodsDto, startAt: Date): AdmissionColumns {
  const admission = input.admission ?? 'open';
  const foreign = [
    ...(admission === 'queue' ? [] : QUEUE_FIELDS),
    ...(admission === 'draw' ? [] : DRAW_FIELDS),
  ].filter((field) => input[field] !== undefined);
  if (foreign.length > 0) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `${foreign.join(', ')}: not for a sale with admission ${admission}`,
    );
  }
  const none = { queueOpensAt: null, admitPerSecond: null, admissionTtlSeconds: null };
  const noDraw = { entriesCloseAt: null, winnersFactor: null };
  if (admission === 'open') return { admission, ...none, ...noDraw };
  // The waiting room's keys and the admitted buyers live beside one bucket's stock, so that the
  // deduct checks an admission atomically (lua/seckill-deduct.lua).
  if (input.stockShards !== undefined && input.stockShards !== 1) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `A ${admission} sale keeps its stock in one bucket (stockShards 1)`,
    );
  }
  if (admission === 'draw') return drawColumns(input, startAt);
  if (input.admitPerSecond === undefined || input.admissionTtlSeconds === undefined) {
    throw new DomainError(
      'VALIDATION_FAILED',
      'A queue sale needs admitPerSecond and admissionTtlSeconds',
    );
  }
  const queueOpensAt = input.queueOpensAt
    ? new Date(input.queueOpensAt)
    : new Date(startAt.getTime() - DEFAULT_QUEUE_LEAD_MS);
  if (queueOpensAt.getTime() >= startAt.getTime()) {
    throw new DomainError('VALIDATION_FAILED', 'queueOpensAt must be before startAt');
  }
  return {
    admission,
    queueOpensAt,
    admitPerSecond: input.admitPerSecond,
    admissionTtlSeconds: input.admissionTtlSeconds,
    ...noDraw,
  };
}

/**
 * A draw sale is a waiting room whose joins are the entries, drawn at entriesCloseAt, whose
 * admissions are the purchase rights: the room opens at entriesOpenAt (queue_opens_at) and an
 * admission lasts claimSeconds (admission_ttl_seconds); no pace (admitPerSecond null).
 */
function drawColumns(input: CreateGoodsDto, startAt: Date): AdmissionColumns {
  const missing = (['entriesOpenAt', 'entriesCloseAt', 'claimSeconds'] as const).filter(
    (field) => input[field] === undefined,
  );
  if (missing.length > 0) {
    throw new DomainError('VALIDATION_FAILED', `A draw sale needs ${missing.join(', ')}`);
  }
  const opensAt = new Date(input.entriesOpenAt!);
  const closeAt = new Date(input.entriesCloseAt!);
  if (opensAt.getTime() >= closeAt.getTime()) {
    throw new DomainError('VALIDATION_FAILED', 'entriesOpenAt must be before entriesCloseAt');
  }
  if (closeAt.getTime() > startAt.getTime()) {
    throw new DomainError('VALIDATION_FAILED', 'entriesCloseAt must be at or before startAt');
  }
  return {
    admission: 'draw',
    queueOpensAt: opensAt,
    admitPerSecond: null,
    admissionTtlSeconds: input.claimSeconds!,
    entriesCloseAt: closeAt,
    winnersFactor: input.winnersFactor ?? 1,
  };
}

/** The admission fields of a goods answer: the queue's or the draw's, for such a sale only. */
export function admissionFields(goods: AdmissionColumns) {
  if (goods.admission === 'draw') {
    return {
      admission: goods.admission,
      entriesOpenAt: goods.queueOpensAt?.toISOString(),
      entriesCloseAt: goods.entriesCloseAt?.toISOString(),
      claimSeconds: goods.admissionTtlSeconds ?? undefined,
      winnersFactor: goods.winnersFactor ?? undefined,
    };
  }
  if (goods.admission !== 'queue') return { admission: goods.admission };
  return {
    admission: goods.admission,
    queueOpensAt: goods.queueOpensAt?.toISOString(),
    admitPerSecond: goods.admitPerSecond ?? undefined,
    admissionTtlSeconds: goods.admissionTtlSeconds ?? undefined,
  };
}

export function statusOf(
  goods: Pick<GoodsEntity, 'startAt' | 'endAt'>,
  remaining: number,
  now: Date,
): GoodsStatus {
  if (now < goods.startAt) return 'UPCOMING';
  if (now >= goods.endAt) return 'ENDED';
  return remaining <= 0 ? 'SOLD_OUT' : 'ACTIVE';
}
