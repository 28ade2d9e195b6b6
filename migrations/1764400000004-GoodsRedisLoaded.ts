import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `seckill_goods.redis_loaded_at`: when the sale was first loaded into Redis (MySQL's clock), set
 * before that load. Only a sale never loaded may be loaded with its full stock at once: one that
 * Redis held before may have accepted purchases whose orders are still on their way to MySQL, so
 * when Redis lacks it, it is rebuilt after an order barrier (PreheatService). Goods from before
 * this migration count as never loaded, as they did.
 */
export class GoodsRedisLoaded1764400000004 implements MigrationInterface {
  name = 'GoodsRedisLoaded1764400000004';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE seckill_goods ADD COLUMN redis_loaded_at DATETIME(3) NULL',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE seckill_goods DROP COLUMN redis_loaded_at');
  }
}
