import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A sale's admission: `open` (the fastest request wins) or `queue` (a waiting room admits buyers
 * in a shuffled order, paced by `admit_per_second` and the stock; see modules/waiting-room/).
 * The three queue columns are NULL for an open sale; `admission_paused` is the operator's pause
 * of a queue's admissions (PATCH and POST /api/v1/admin/goods/:id/queue…).
 */
export class GoodsAdmission1764400000007 implements MigrationInterface {
  name = 'GoodsAdmission1764400000007';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE seckill_goods
         ADD COLUMN admission VARCHAR(8) NOT NULL DEFAULT 'open',
         ADD COLUMN queue_opens_at DATETIME(3) NULL,
         ADD COLUMN admit_per_second INT UNSIGNED NULL,
         ADD COLUMN admission_ttl_seconds INT UNSIGNED NULL,
         ADD COLUMN admission_paused TINYINT(1) NOT NULL DEFAULT 0`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE seckill_goods
         DROP COLUMN admission, DROP COLUMN queue_opens_at,
         DROP COLUMN admit_per_second, DROP COLUMN admission_ttl_seconds,
         DROP COLUMN admission_paused`,
    );
  }
}
