import { Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { DomainError } from '../../common/errors/domain-error.js';
import { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { SaleReads } from '../sale-store/sale-reads.service.js';
import { GoodsRepository } from './goods.repository.js';
import type { CreateGoodsDto, GoodsCreatedDto, GoodsStatus, GoodsViewDto } from './goods.dto.js';

const PAGE_CACHE_MS = 1_000;
const PAGE_CACHE_MAX = 10_000;

@Injectable()
export class GoodsService {
  private readonly logger = new Logger(GoodsService.name);
  private readonly pageCache = new Map<number, { goods: GoodsEntity; until: number }>();

  constructor(
    private readonly goods: GoodsRepository,
    private readonly sale: SaleReads,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
  ) {}

  async create(input: CreateGoodsDto): Promise<GoodsCreatedDto> {
    const startAt = new Date(input.startAt);
    const endAt = new Date(input.endAt);
    if (endAt.getTime() <= startAt.getTime()) {
      throw new DomainError('VALIDATION_FAILED', 'endAt must be after startAt');
    }
    const saved = await this.goods.create({
      name: input.name,
      price: input.price.toFixed(2),
      totalStock: input.stock,
      stock: input.stock,
      startAt,
      endAt,
      perUserLimit: input.perUserLimit ?? 1,
      stockShards: input.stockShards ?? this.seckill.stockShards,
    });
    this.logger.log(
      `goods created: id=${saved.id} stock=${saved.totalStock} shards=${saved.stockShards}`,
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

  /** Sales whose window opens before `until` and has not closed yet. */
  startingBefore(until: Date): Promise<GoodsEntity[]> {
    return this.goods.startingBefore(until, new Date());
  }

  /**
   * The goods page is what a crowd refreshes: its row (name, price, window: what does not change
   * during a sale) is served from memory for a second, so the refreshes reach MySQL once a second
   * per goods and instance, not once per click. The live stock always comes from Redis.
   */
  private async findForPage(goodsId: number): Promise<GoodsEntity> {
    const now = Date.now();
    const cached = this.pageCache.get(goodsId);
    if (cached && cached.until > now) return cached.goods;
    const goods = await this.findOrThrow(goodsId);
    if (this.pageCache.size >= PAGE_CACHE_MAX) this.pageCache.clear();
    this.pageCache.set(goodsId, { goods, until: now + PAGE_CACHE_MS });
    return goods;
  }

  findByIds(ids: number[]): Promise<GoodsEntity[]> {
    return this.goods.findByIds(ids);
  }

  async view(goodsId: number): Promise<GoodsViewDto> {
    const goods = await this.findForPage(goodsId);
    const live = await this.sale.remaining(goodsId).catch((error: Error) => {
      // Reading the page must not fail with Redis: MySQL's stock is a fine approximation.
      this.logger.warn(`remaining from MySQL, Redis failed: goods=${goodsId} ${error.message}`);
      return null;
    });
    const remaining = live ?? goods.stock;
    return {
      id: goods.id,
      name: goods.name,
      price: Number(goods.price),
      totalStock: goods.totalStock,
      remaining,
      startAt: goods.startAt.toISOString(),
      endAt: goods.endAt.toISOString(),
      perUserLimit: goods.perUserLimit,
      stockShards: goods.stockShards,
      status: statusOf(goods, remaining, new Date()),
    };
  }
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
