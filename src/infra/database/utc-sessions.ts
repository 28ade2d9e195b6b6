import { Logger } from '@nestjs/common';
import mysql2, { type Pool, type PoolConnection, type PoolOptions } from 'mysql2';

const logger = new Logger('Database');

/**
 * mysql2 as TypeORM loads it, except that every pooled connection's session is in UTC. The app
 * writes and reads DATETIME columns as UTC (TypeORM's `timezone: 'Z'`), while MySQL fills
 * `created_at`/`updated_at` and evaluates `NOW(3)` in the session's time zone, the server's by
 * default: on a server not in UTC the two would be hours apart, and the decisions taken by
 * MySQL's clock (the fallback's sale window, payment deadlines, recent cancels) compare them.
 */
export const mysql2WithUtcSessions = {
  ...mysql2,
  createPool(options: PoolOptions): Pool {
    const pool = mysql2.createPool(options);
    // Emitted before the new connection is handed out, so the SET goes ahead of its first query.
    pool.on('connection', (connection: PoolConnection) => {
      connection.query("SET time_zone = '+00:00'", (error) => {
        if (!error) return;
        // Never serve a query in the server's zone: the next query on it fails, and is retried.
        logger.warn(`session time zone not set, connection dropped: ${error.message}`);
        connection.destroy();
      });
    });
    return pool;
  },
};
