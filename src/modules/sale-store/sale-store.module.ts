import { Module } from '@nestjs/common';
import { GoodsRepositoryModule } from '../goods/goods-repository.module.js';
import { BucketCountsStore } from './bucket-counts.store.js';
import { LedgerScripts } from './ledger.scripts.js';
import { LoadScripts } from './load.scripts.js';
import { LoanScripts } from './loan.scripts.js';
import { RepairScripts } from './repair.scripts.js';
import { OutboxReaderStore } from './outbox-reader.store.js';
import { PurchaseLedgerStore } from './purchase-ledger.store.js';
import { RestartMarkersStore } from './restart-markers.store.js';
import { ResultEventsService } from './result-events.service.js';
import { SaleLoaderStore } from './sale-loader.store.js';
import { SaleReadsStore } from './sale-reads.store.js';
import { SaleRepairService } from './sale-repair.service.js';
import { SaleStateLockService } from './sale-state-lock.service.js';
import { SoldOutMemoStore } from './sold-out-memo.store.js';
import { StockLoansStore } from './stock-loans.store.js';
import { MetricsModule } from '../metrics/metrics.module.js';

/**
 * The sale's live state in Redis, one service per job: where a goods' keys are (BucketCountsStore),
 * the purchase's ledger (PurchaseLedgerStore) and the loans between buckets under it (StockLoansStore),
 * the load and unload (SaleLoaderStore), the reconcile's snapshot and rebuild (SaleRepairService), plain
 * reads (SaleReadsStore), the restart markers (RestartMarkersStore), the outbox sweeper's reads
 * (OutboxReaderStore), the sold-out memo, the per-goods lock of every repair path, and the news
 * that a buyer's result changed (ResultEventsService, for the streams).
 */
const SERVICES = [
  BucketCountsStore,
  PurchaseLedgerStore,
  StockLoansStore,
  SaleLoaderStore,
  SaleRepairService,
  SaleReadsStore,
  RestartMarkersStore,
  OutboxReaderStore,
  SoldOutMemoStore,
  SaleStateLockService,
  ResultEventsService,
];

/** The typed wrappers of the sale's scripts (lua/seckill-*.lua), one per service above. */
const SCRIPTS = [LedgerScripts, LoanScripts, LoadScripts, RepairScripts];

@Module({
  // The goods' bucket count (stock_shards) is read from its row, once per goods.
  imports: [MetricsModule, GoodsRepositoryModule],
  providers: [...SERVICES, ...SCRIPTS],
  exports: SERVICES,
})
export class SaleStoreModule {}
