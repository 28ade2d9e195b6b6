import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The number of Redis buckets a goods' stock is split over (issue 10, part 4). Existing goods
 * keep one bucket: their Redis keys stay what they were.
 */
export class GoodsStockShards1764400000002 implements MigrationInterface {
  name = 'GoodsStockShards1764400000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE seckill_goods ADD COLUMN stock_shards TINYINT UNSIGNED NOT NULL DEFAULT 1 AFTER per_user_limit',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE seckill_goods DROP COLUMN stock_shards');
  }
}
