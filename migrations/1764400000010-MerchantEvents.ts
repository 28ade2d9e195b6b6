import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The merchant's order events (src/modules/merchant-events/): an outbox written in the transaction
 * of each order change, delivered at least once, in order per order (`id` is that order), retried
 * from `next_attempt_at`, claimed by one worker at a time through a lease, parked once it has
 * been retried for the configured time since `retry_since` (MERCHANT_WEBHOOK_RETRY_SECONDS) until
 * an operator retries it.
 */
export class MerchantEvents1764400000010 implements MigrationInterface {
  name = 'MerchantEvents1764400000010';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE seckill_merchant_event (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
        event_id CHAR(36) NOT NULL,
        order_no VARCHAR(32) NOT NULL,
        goods_id BIGINT UNSIGNED NOT NULL,
        type VARCHAR(32) NOT NULL,
        body TEXT NOT NULL,
        created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
        attempts INT UNSIGNED NOT NULL DEFAULT 0,
        retry_since DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
        next_attempt_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
        lease_token CHAR(36) NULL,
        lease_until DATETIME(3) NULL,
        delivered_at DATETIME(3) NULL,
        parked_at DATETIME(3) NULL,
        last_error VARCHAR(255) NULL,
        PRIMARY KEY (id),
        UNIQUE KEY uq_merchant_event_id (event_id),
        KEY idx_merchant_event_order (order_no, id),
        KEY idx_merchant_event_due (delivered_at, parked_at, next_attempt_at),
        KEY idx_merchant_event_goods (goods_id, delivered_at)
      ) ENGINE=InnoDB`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE seckill_merchant_event');
  }
}
