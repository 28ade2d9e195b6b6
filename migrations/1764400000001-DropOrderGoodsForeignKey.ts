import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Drops the order → goods foreign key. Changing an order's status rewrites the unique index that
 * holds goods_id (through active_key), and the engine then re-checks the foreign key with a
 * shared lock on the goods row. Two cancels of one goods each held that shared lock and both
 * waited to upgrade it for `stock = stock + ?`: a deadlock per pair, ~150 in a 100-order expiry
 * burst (measured with the demo). Orders are only ever created for goods that exist (the
 * consumer reads the goods row in the same transaction), so the key protected nothing.
 */
export class DropOrderGoodsForeignKey1764400000001 implements MigrationInterface {
  name = 'DropOrderGoodsForeignKey1764400000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE seckill_order DROP FOREIGN KEY fk_order_goods');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE seckill_order ADD CONSTRAINT fk_order_goods FOREIGN KEY (goods_id) REFERENCES seckill_goods (id)',
    );
  }
}
