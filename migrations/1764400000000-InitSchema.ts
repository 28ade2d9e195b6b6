import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Goods and orders. Written for MySQL 8 and MariaDB 10.11 alike.
 *
 * `active_key` is 1 for an order that is not cancelled and NULL for a cancelled one; a unique
 * index over (user_id, goods_id, active_key) lets MySQL itself refuse a second active order by one
 * user for one goods (NULLs never collide), while a user whose order was cancelled may buy again.
 */
export class InitSchema1764400000000 implements MigrationInterface {
  name = 'InitSchema1764400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE seckill_goods (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
        name VARCHAR(200) NOT NULL,
        price DECIMAL(12, 2) NOT NULL,
        total_stock INT UNSIGNED NOT NULL,
        stock INT UNSIGNED NOT NULL,
        version INT UNSIGNED NOT NULL DEFAULT 0,
        start_at DATETIME(3) NOT NULL,
        end_at DATETIME(3) NOT NULL,
        per_user_limit INT UNSIGNED NOT NULL DEFAULT 1,
        created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
        updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
        PRIMARY KEY (id),
        KEY idx_goods_start_at (start_at),
        CONSTRAINT chk_goods_stock CHECK (stock <= total_stock),
        CONSTRAINT chk_goods_window CHECK (end_at > start_at),
        CONSTRAINT chk_goods_limit CHECK (per_user_limit >= 1)
      ) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci
    `);
    await queryRunner.query(`
      CREATE TABLE seckill_order (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
        order_no VARCHAR(32) NOT NULL,
        request_id CHAR(36) NOT NULL,
        user_id BIGINT UNSIGNED NOT NULL,
        goods_id BIGINT UNSIGNED NOT NULL,
        quantity INT UNSIGNED NOT NULL,
        status ENUM('PENDING_PAYMENT', 'PAID', 'CANCELLED') NOT NULL DEFAULT 'PENDING_PAYMENT',
        version INT UNSIGNED NOT NULL DEFAULT 0,
        active_key TINYINT GENERATED ALWAYS AS (IF(status = 'CANCELLED', NULL, 1)) STORED,
        expire_at DATETIME(3) NOT NULL,
        created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
        updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
        PRIMARY KEY (id),
        UNIQUE KEY uq_order_order_no (order_no),
        UNIQUE KEY uq_order_request_id (request_id),
        UNIQUE KEY uq_order_active_buyer (user_id, goods_id, active_key),
        KEY idx_order_goods_status (goods_id, status),
        KEY idx_order_status_expire (status, expire_at),
        CONSTRAINT fk_order_goods FOREIGN KEY (goods_id) REFERENCES seckill_goods (id),
        CONSTRAINT chk_order_quantity CHECK (quantity >= 1)
      ) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE seckill_order');
    await queryRunner.query('DROP TABLE seckill_goods');
  }
}
