import { Module } from '@nestjs/common';
import { GoodsRepositoryModule } from '../goods/goods-repository.module.js';
import { BucketCounts } from './bucket-counts.service.js';
import { LedgerScripts } from './ledger-scripts.js';
import { LoadScripts } from './load-scripts.js';
import { LoanScripts } from './loan-scripts.js';
import { RepairScripts } from './repair-scripts.js';
import { OutboxReader } from './outbox-reader.service.js';
import { PurchaseLedger } from './purchase-ledger.service.js';
import { RestartMarkers } from './restart-markers.service.js';
import { ResultEvents } from './result-events.js';
import { SaleLoader } from './sale-loader.service.js';
import { SaleReads } from './sale-reads.service.js';
import { SaleRepair } from './sale-repair.service.js';
import { SaleStateLock } from './sale-state-lock.js';
import { SoldOutMemo } from './sold-out-memo.js';
import { StockLoans } from './stock-loans.service.js';
import { MetricsModule } from '../metrics/metrics.module.js';

/**
 * The sale's live state in Redis, one service per job: where a goods' keys are (BucketCounts),
 * the purchase's ledger (PurchaseLedger) and the loans between buckets under it (StockLoans),
 * the load and unload (SaleLoader), the reconcile's snapshot and rebuild (SaleRepair), plain
 * reads (SaleReads), the restart markers (RestartMarkers), the outbox sweeper's reads
 * (OutboxReader), the sold-out memo, the per-goods lock of every repair path, and the news
 * that a buyer's result changed (ResultEvents, for the streams).
 */
const SERVICES = [
  BucketCounts,
  PurchaseLedger,
  StockLoans,
  SaleLoader,
  SaleRepair,
  SaleReads,
  RestartMarkers,
  OutboxReader,
  SoldOutMemo,
  SaleStateLock,
  ResultEvents,
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
