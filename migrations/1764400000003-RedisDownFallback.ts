import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the Redis-down fallback (REDIS_DOWN_MODE=database) keeps in MySQL, the store that is up
 * while Redis is not (see src/modules/fallback):
 *
 * - `seckill_goods.fallback_open`: MySQL alone may sell this goods. Set once the fallback barrier
 *   proved every order Redis had accepted is written; the fallback's conditional stock UPDATE
 *   requires it, and a rebuild of the sale into Redis clears it in the transaction (`SELECT … FOR
 *   UPDATE` on this row) in which it reads stock and buyers, so a fallback purchase committing
 *   after that read finds it closed and takes nothing.
 * - `seckill_goods.redis_stale`: MySQL holds sales Redis does not know of (the fallback sold, or
 *   a consumer wrote without Redis): Redis must not sell this goods again before it is rebuilt
 *   from MySQL, even if it comes back with its data intact. Cleared by that rebuild.
 * - `seckill_goods.rebuilt_at`: when the sale was last rebuilt into Redis (MySQL's clock). The
 *   fallback opens a goods only with a barrier opened after it: an instance late to notice that
 *   Redis is back must not reopen what a rebuild has closed.
 * - `seckill_consumer_beat`, `seckill_fallback_barrier`, `seckill_fallback_drain`: the order
 *   barrier's registry and marks (messaging/redis-barrier.store.ts), kept in MySQL for the
 *   barrier that opens the fallback, since Redis, where the others live, is down then.
 */
export class RedisDownFallback1764400000003 implements MigrationInterface {
  name = 'RedisDownFallback1764400000003';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE seckill_goods ADD COLUMN fallback_open TINYINT NOT NULL DEFAULT 0, ADD COLUMN redis_stale TINYINT NOT NULL DEFAULT 0, ADD COLUMN rebuilt_at DATETIME(3) NULL',
    );
    // Every serving instance reads the marked rows every 200 ms: a few among many goods.
    await queryRunner.query('CREATE INDEX idx_goods_redis_stale ON seckill_goods (redis_stale)');
    await queryRunner.query(`
      CREATE TABLE seckill_consumer_beat (
        session VARCHAR(64) NOT NULL PRIMARY KEY,
        expires_at DATETIME(3) NOT NULL
      ) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci
    `);
    await queryRunner.query(`
      CREATE TABLE seckill_fallback_barrier (
        id VARCHAR(64) NOT NULL PRIMARY KEY,
        opened_at DATETIME(3) NOT NULL,
        expires_at DATETIME(3) NOT NULL,
        delivered_at DATETIME(3) NULL
      ) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci
    `);
    await queryRunner.query(`
      CREATE TABLE seckill_fallback_drain (
        barrier_id VARCHAR(64) NOT NULL,
        session VARCHAR(64) NOT NULL,
        PRIMARY KEY (barrier_id, session)
      ) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE seckill_fallback_drain');
    await queryRunner.query('DROP TABLE seckill_fallback_barrier');
    await queryRunner.query('DROP TABLE seckill_consumer_beat');
    await queryRunner.query('DROP INDEX idx_goods_redis_stale ON seckill_goods');
    await queryRunner.query(
      'ALTER TABLE seckill_goods DROP COLUMN rebuilt_at, DROP COLUMN redis_stale, DROP COLUMN fallback_open',
    );
  }
}
