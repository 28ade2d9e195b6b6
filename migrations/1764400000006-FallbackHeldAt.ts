import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `seckill_goods.fallback_held_at`: when a database-mode purchase first held the goods from the
 * Redis path (MySQL's clock), before the fallback may open it. The fallback sells only once every
 * instance that still reaches Redis has stopped selling the goods there and what it sold is
 * written (DatabasePurchaseService): a fixed wait from this time, then an order barrier. Cleared with
 * `redis_stale` by the rebuild that brings the sale back to Redis.
 */
export class FallbackHeldAt1764400000006 implements MigrationInterface {
  name = 'FallbackHeldAt1764400000006';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE seckill_goods ADD COLUMN fallback_held_at DATETIME(3) NULL',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE seckill_goods DROP COLUMN fallback_held_at');
  }
}
