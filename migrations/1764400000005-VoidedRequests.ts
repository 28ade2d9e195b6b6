import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `seckill_voided_request`: the purchases answered 503 "nothing was taken" after the broker did not
 * confirm their publish (their message may still reach a consumer). Redis's own record of the void
 * is lost when Redis restarts empty, and is not read while consumers write without Redis
 * (REDIS_DOWN_MODE=database); this one is, in the consumer's write transaction, where a void
 * recorded and an order written exclude each other per request id (src/modules/orders/voided-requests.service.ts).
 * Rows older than a day are pruned (`voided_at`, MySQL's clock, indexed for it).
 */
export class VoidedRequests1764400000005 implements MigrationInterface {
  name = 'VoidedRequests1764400000005';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE seckill_voided_request (
        request_id CHAR(36) NOT NULL PRIMARY KEY,
        goods_id BIGINT UNSIGNED NOT NULL,
        voided_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
        KEY idx_voided_request_voided_at (voided_at)
      ) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE seckill_voided_request');
  }
}
