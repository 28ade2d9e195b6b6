import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A queue sale's waiting room, kept in MySQL as well as in Redis, so that it outlives Redis
 * (src/modules/queue-journal/): every join answered 200 (its line and place in it: the pre-queue's
 * join index, or the arrival number behind it; the client address the account cap counts), the
 * room (the shuffle's seed, drawn here first, and the pre-queue's size it orders; how far the
 * admission went and the room's clock then) and every admission (until when, in the room's
 * clock). Used admissions are the buyers' orders; a lapse is an admission whose time ran out.
 */
export class QueueJournal1764400000008 implements MigrationInterface {
  name = 'QueueJournal1764400000008';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE seckill_queue_join (
        goods_id BIGINT UNSIGNED NOT NULL,
        user_id BIGINT UNSIGNED NOT NULL,
        line TINYINT UNSIGNED NOT NULL,
        position BIGINT UNSIGNED NOT NULL,
        address VARCHAR(45) NULL,
        joined_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
        PRIMARY KEY (goods_id, user_id),
        UNIQUE KEY uq_queue_join_place (goods_id, line, position),
        KEY idx_queue_join_address (goods_id, address)
      ) ENGINE=InnoDB`);
    await queryRunner.query(`
      CREATE TABLE seckill_queue_room (
        goods_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
        seed CHAR(32) NULL,
        pre_size BIGINT UNSIGNED NULL,
        head BIGINT UNSIGNED NOT NULL DEFAULT 0,
        room_ms BIGINT NULL,
        updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)
      ) ENGINE=InnoDB`);
    await queryRunner.query(`
      CREATE TABLE seckill_queue_admission (
        goods_id BIGINT UNSIGNED NOT NULL,
        user_id BIGINT UNSIGNED NOT NULL,
        until_ms BIGINT NOT NULL,
        PRIMARY KEY (goods_id, user_id)
      ) ENGINE=InnoDB`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE seckill_queue_admission');
    await queryRunner.query('DROP TABLE seckill_queue_room');
    await queryRunner.query('DROP TABLE seckill_queue_join');
  }
}
