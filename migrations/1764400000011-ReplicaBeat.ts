import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How far a read replica lags (src/infra/database/replica-reads.ts): each instance with a replica
 * writes its own row on the primary, by its own clock, and reads it back on the replica; the
 * difference is the replica's lag, whatever the two servers' clocks say.
 */
export class ReplicaBeat1764400000011 implements MigrationInterface {
  name = 'ReplicaBeat1764400000011';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE seckill_replica_beat (
        instance_id CHAR(36) NOT NULL,
        beat_ms BIGINT UNSIGNED NOT NULL,
        updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
        PRIMARY KEY (instance_id),
        KEY idx_replica_beat_updated (updated_at)
      ) ENGINE=InnoDB`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE seckill_replica_beat');
  }
}
