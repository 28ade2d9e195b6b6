import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { fileURLToPath } from 'node:url';
import { databaseConfig, type DatabaseConfig } from '../../config/database.config.js';
import { connectionOptions } from './connection-options.js';
import { ensureDatabase, parseDatabaseUrl } from './ensure-database.js';
import { ReplicaReadsService } from './replica-reads.service.js';

// Migrations are compiled on their own (tsconfig.migrations.json) into dist/migrations; this
// path is the same from src/infra/database and dist/infra/database.
const MIGRATIONS_GLOB = fileURLToPath(new URL('../../../dist/migrations/*.js', import.meta.url));

/**
 * The primary (TypeORM's default DataSource: every write, every read that must see its writes)
 * and ReplicaReadsService, for the reads that may lag (on DATABASE_REPLICA_URL when set and caught up).
 */
@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [databaseConfig.KEY],
      useFactory: async (database: DatabaseConfig) => {
        const target = parseDatabaseUrl(database.url);
        await ensureDatabase(target);
        return {
          ...connectionOptions(target, { connectionLimit: 20, connectTimeoutMs: 10_000 }),
          migrations: [MIGRATIONS_GLOB],
          migrationsRun: true,
          migrationsTransactionMode: 'each' as const,
          retryAttempts: 5,
          retryDelay: 1_000,
        };
      },
    }),
  ],
  providers: [ReplicaReadsService],
  exports: [ReplicaReadsService],
})
export class DatabaseModule {}
