import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { VoidedRequestEntity } from '../../infra/database/entities/voided-request.entity.js';
import type { Tx } from '../../infra/database/transactions.service.js';

/** `seckill_voided_request`; VoidedRequestsService says how its rows and the orders exclude each other. */
@Injectable()
export class VoidedRequestRepository {
  constructor(
    @InjectRepository(VoidedRequestEntity)
    private readonly voided: Repository<VoidedRequestEntity>,
  ) {}

  /**
   * Stamped by MySQL's clock, which the prune reads too. False when the request's void is there
   * already (committed: a duplicate key waits for an uncommitted row's fate); the failed
   * statement alone is undone, not the transaction.
   */
  async insert(tx: Tx, requestId: string, goodsId: number): Promise<boolean> {
    try {
      await tx.query(
        'INSERT INTO seckill_voided_request (request_id, goods_id, voided_at) VALUES (?, ?, NOW(3))',
        [requestId, goodsId],
      );
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  /** A locking read (LOCK IN SHARE MODE): waits for a void recorded but not committed yet. */
  async voidedAmongLocked(tx: Tx, requestIds: string[]): Promise<Set<string>> {
    const rows = await tx.query<{ request_id: string }[]>(
      'SELECT request_id FROM seckill_voided_request WHERE request_id IN (?) LOCK IN SHARE MODE',
      [requestIds],
    );
    return new Set(rows.map((row) => row.request_id));
  }

  /** At most `limit` rows of voids older than `retentionMs` (MySQL's clock); how many went. */
  async deleteOlderThan(retentionMs: number, limit: number): Promise<number> {
    const result = await this.voided.query<{ affectedRows?: number }>(
      'DELETE FROM seckill_voided_request WHERE voided_at < NOW(3) - INTERVAL ? MICROSECOND LIMIT ?',
      [retentionMs * 1_000, limit],
    );
    return result.affectedRows ?? 0;
  }
}

function isDuplicateKey(error: unknown): boolean {
  const driver = (error as { driverError?: { code?: string } }).driverError ?? error;
  return (driver as { code?: string } | undefined)?.code === 'ER_DUP_ENTRY';
}
