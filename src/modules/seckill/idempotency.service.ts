import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { REDIS_COMMAND_TIMEOUT_MS } from '../../infra/redis/redis.constants.js';
import { orUnavailable } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { rabbitmqConfig, type RabbitMqConfig } from '../../config/rabbitmq.config.js';
import { idempotencyKey } from '../../infra/redis/seckill-keys.js';
import { SaleReadsStore } from '../sale-store/sale-reads.store.js';
import { isFinalRefusal } from '../sale-store/deduct-refusals.js';
import { IdempotencyScripts } from './idempotency.scripts.js';
import { replay, type IdempotencyRecord } from './idempotency.js';
import type { PurchaseAccepted } from './purchase.types.js';

/** The floor of a stored answer's life, for a sale that ended long ago. */
const MIN_RETENTION_MS = 60_000;

/**
 * Idempotency-Key on the purchase route. The key is reserved atomically before anything else,
 * so concurrent retries cannot both attempt; the final answer is stored until the sale has been
 * over for IDEMPOTENCY_RETENTION_MS and replayed, same status and body, to any retry.
 */
@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);

  constructor(
    private readonly scripts: IdempotencyScripts,
    private readonly sale: SaleReadsStore,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
    @InjectConfig(rabbitmqConfig) private readonly rabbitmq: RabbitMqConfig,
  ) {}

  async run(
    userId: number,
    goodsId: number,
    quantity: number,
    key: string,
    attempt: () => Promise<PurchaseAccepted>,
  ): Promise<PurchaseAccepted> {
    const redisKey = idempotencyKey(userId, key);
    const owner = randomUUID();
    // Outlives the slowest attempt (the lock, the Lua step and a release at Redis's command
    // timeout each, plus the broker's confirm); frees the key if this process dies.
    const reservationTtlMs =
      this.seckill.purchaseLockTtlMs +
      this.rabbitmq.publishConfirmTimeoutMs +
      2 * REDIS_COMMAND_TIMEOUT_MS +
      5_000;
    const stored = await orUnavailable('Redis', () =>
      this.scripts.reserve(redisKey, goodsId, quantity, owner, reservationTtlMs),
    );
    if (stored !== null) return replay(JSON.parse(stored) as IdempotencyRecord, goodsId, quantity);

    let accepted: PurchaseAccepted;
    try {
      accepted = await attempt();
    } catch (error) {
      const record: IdempotencyRecord | null = isFinalRefusal(error)
        ? {
            state: 'DONE',
            goodsId,
            quantity,
            status: 409,
            code: error.code,
            message: error.message,
          }
        : null;
      await this.settle(redisKey, owner, goodsId, record, userId);
      throw error;
    }
    await this.settle(
      redisKey,
      owner,
      goodsId,
      { state: 'DONE', goodsId, quantity, status: 202, body: accepted },
      userId,
    );
    return accepted;
  }

  /** Never turns the attempt's answer into an error: a lost record only costs a later replay. */
  private async settle(
    redisKey: string,
    owner: string,
    goodsId: number,
    record: IdempotencyRecord | null,
    userId: number,
  ): Promise<void> {
    try {
      const ttlMs = record ? await this.retentionMs(goodsId) : 0;
      const settled = await this.scripts.settle(
        redisKey,
        owner,
        record ? JSON.stringify(record) : null,
        ttlMs,
      );
      if (!settled) {
        this.logger.warn(
          `idempotency reservation expired before its answer: user=${userId} goods=${goodsId}`,
        );
      }
    } catch (error) {
      this.logger.warn(
        `idempotency answer not stored: user=${userId} goods=${goodsId} ${(error as Error).message}`,
      );
    }
  }

  private async retentionMs(goodsId: number): Promise<number> {
    const endAt = await this.sale.saleEndAt(goodsId);
    const retention = this.seckill.idempotencyRetentionMs;
    if (endAt === null) return retention;
    return Math.max(endAt + retention - Date.now(), MIN_RETENTION_MS);
  }
}
