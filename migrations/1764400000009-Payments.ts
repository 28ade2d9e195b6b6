import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Payments by the provider's webhook (src/modules/payments/, docs/payments.md).
 *
 * - `seckill_payment_event`: every provider event applied, by its id, with the order status it
 *   was answered with: a redelivered event is answered the same and changes nothing again. It is
 *   written in the transaction of the change it made.
 * - `seckill_order.payment_grace_at`: when a `payment.started` extended the order's deadline (once).
 * - `REFUND_REQUIRED` (paid after its cancel, no unit left to take again) holds no stock, as a
 *   cancelled order does: `active_key` is NULL for both, so the buyer may hold another order.
 */
export class Payments1764400000009 implements MigrationInterface {
  name = 'Payments1764400000009';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE seckill_payment_event (
        event_id VARCHAR(64) NOT NULL,
        type VARCHAR(32) NOT NULL,
        order_no VARCHAR(32) NOT NULL,
        goods_id BIGINT UNSIGNED NOT NULL,
        outcome VARCHAR(24) NOT NULL,
        status VARCHAR(16) NOT NULL,
        received_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
        PRIMARY KEY (event_id),
        KEY idx_payment_event_order (order_no),
        KEY idx_payment_event_goods (goods_id, outcome)
      ) ENGINE=InnoDB`);
    await queryRunner.query(
      'ALTER TABLE seckill_order ADD COLUMN payment_grace_at DATETIME(3) NULL',
    );
    await queryRunner.query(`
      ALTER TABLE seckill_order
        DROP INDEX uq_order_active_buyer,
        DROP COLUMN active_key`);
    await queryRunner.query(`
      ALTER TABLE seckill_order
        MODIFY status ENUM('PENDING_PAYMENT', 'PAID', 'CANCELLED', 'REFUND_REQUIRED')
          NOT NULL DEFAULT 'PENDING_PAYMENT'`);
    await queryRunner.query(`
      ALTER TABLE seckill_order
        ADD COLUMN active_key TINYINT GENERATED ALWAYS AS
          (IF(status IN ('CANCELLED', 'REFUND_REQUIRED'), NULL, 1)) STORED,
        ADD UNIQUE KEY uq_order_active_buyer (user_id, goods_id, active_key)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE seckill_order
        DROP INDEX uq_order_active_buyer,
        DROP COLUMN active_key`);
    await queryRunner.query(`
      ALTER TABLE seckill_order
        ADD COLUMN active_key TINYINT GENERATED ALWAYS AS (IF(status = 'CANCELLED', NULL, 1)) STORED,
        ADD UNIQUE KEY uq_order_active_buyer (user_id, goods_id, active_key)`);
    await queryRunner.query(`
      ALTER TABLE seckill_order
        MODIFY status ENUM('PENDING_PAYMENT', 'PAID', 'CANCELLED') NOT NULL DEFAULT 'PENDING_PAYMENT'`);
    await queryRunner.query('ALTER TABLE seckill_order DROP COLUMN payment_grace_at');
    await queryRunner.query('DROP TABLE seckill_payment_event');
  }
}
