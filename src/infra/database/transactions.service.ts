import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';

/**
 * A transaction under way. A repository method that must run inside its caller's transaction
 * takes one, so the service that owns the transaction's logic also owns its boundary.
 */
export type Tx = EntityManager;

/** The isolation levels the services ask for; without one, the server's default. */
export type Isolation = 'READ COMMITTED' | 'REPEATABLE READ';

/**
 * Opens transactions for the services, which otherwise see only repositories: the boundary is
 * theirs (what runs in one, what is retried), the SQL the repositories'. Stateless, so each
 * module that needs it provides its own.
 */
@Injectable()
export class TransactionsService {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  run<T>(work: (tx: Tx) => Promise<T>, isolation?: Isolation): Promise<T> {
    return isolation === undefined
      ? this.db.transaction(work)
      : this.db.transaction(isolation, work);
  }
}
