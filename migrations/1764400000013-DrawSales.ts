import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A `draw` sale (docs/waiting-room.md, "Draw sales"): entries from `queue_opens_at` (its
 * entriesOpenAt) until `entries_close_at`, when the draw ranks them; each right to buy lasts
 * `admission_ttl_seconds` (its claimSeconds); `winners_factor` rights per unit left. Both new
 * columns are NULL for any other sale.
 */
export class DrawSales1764400000013 implements MigrationInterface {
  name = 'DrawSales1764400000013';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE seckill_goods
        ADD COLUMN entries_close_at DATETIME(3) NULL,
        ADD COLUMN winners_factor SMALLINT UNSIGNED NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE seckill_goods DROP COLUMN winners_factor, DROP COLUMN entries_close_at',
    );
  }
}
