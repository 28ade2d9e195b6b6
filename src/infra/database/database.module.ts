import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { fileURLToPath } from 'node:url';
import { databaseConfig, type DatabaseConfig } from '../../config/database.config.js';
import { ensureDatabase, parseDatabaseUrl } from './ensure-database.js';
import { ConsumerBeatEntity } from './entities/consumer-beat.entity.js';
import { FallbackBarrierEntity } from './entities/fallback-barrier.entity.js';
import { FallbackDrainEntity } from './entities/fallback-drain.entity.js';
import { GoodsEntity } from './entities/goods.entity.js';
import { OrderEntity } from './entities/order.entity.js';
import { VoidedRequestEntity } from './entities/voided-request.entity.js';
import { mysql2WithUtcSessions } from './utc-sessions.js';

// Migrations are compiled on their own (tsconfig.migrations.json) into dist/migrations; this
// path is the same from src/infra/database and dist/infra/database.
const MIGRATIONS_GLOB = fileURLToPath(new URL('../../../dist/migrations/*.js', import.meta.url));

@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [databaseConfig.KEY],
      useFactory: async (database: DatabaseConfig) => {
        const target = parseDatabaseUrl(database.url);
        await ensureDatabase(target);
        return {
          ...target,
          entities: [
            GoodsEntity,
            OrderEntity,
            VoidedRequestEntity,
            ConsumerBeatEntity,
            FallbackBarrierEntity,
            FallbackDrainEntity,
          ],
          migrations: [MIGRATIONS_GLOB],
          migrationsRun: true,
          migrationsTransactionMode: 'each' as const,
          synchronize: false,
          // Sessions in UTC too, so that MySQL's NOW(3) and CURRENT_TIMESTAMP(3) are.
          driver: mysql2WithUtcSessions,
          timezone: 'Z',
          dateStrings: false,
          supportBigNumbers: true,
          bigNumberStrings: false,
          extra: { connectionLimit: 20, enableKeepAlive: true, connectTimeout: 10_000 },
          retryAttempts: 5,
          retryDelay: 1_000,
        };
      },
    }),
  ],
})
export class DatabaseModule {}
