import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A queue sale's commit-and-reveal (docs/waiting-room.md, "Fairness anyone can check"): the
 * secret whose SHA-256 is published before the first join and revealed after the draw, the key
 * of the buyers' pseudonyms in the export (never revealed), and the digest of the pre-queue the
 * secret was combined with at the draw; each admission's place in the order, as Redis admitted
 * it, for the export the draw is checked against.
 */
export class QueueFairness1764400000012 implements MigrationInterface {
  name = 'QueueFairness1764400000012';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE seckill_queue_room
        ADD COLUMN secret BINARY(32) NULL,
        ADD COLUMN pseudonym_key BINARY(32) NULL,
        ADD COLUMN digest CHAR(64) NULL`);
    await queryRunner.query(
      'ALTER TABLE seckill_queue_admission ADD COLUMN place BIGINT UNSIGNED NULL',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE seckill_queue_admission DROP COLUMN place');
    await queryRunner.query(
      'ALTER TABLE seckill_queue_room DROP COLUMN digest, DROP COLUMN pseudonym_key, DROP COLUMN secret',
    );
  }
}
