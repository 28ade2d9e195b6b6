import { Module } from '@nestjs/common';
import { FallbackModule } from '../fallback/fallback.module.js';
import { PreheatModule } from '../preheat/preheat.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { PurchaseAvailability } from './purchase-availability.service.js';
import { SaleRecovery } from './sale-recovery.service.js';

/**
 * Whether Redis may sell a goods now: the restart recovery (SaleRecovery closes the Redis path
 * of the sales a restarted Redis held until they are rebuilt) and the outage policy
 * (RedisDownPolicy, bound once in FallbackModule) answer together through PurchaseAvailability.
 * Every instance that sells imports it: each notices a restart on its own connection.
 */
@Module({
  imports: [FallbackModule, PreheatModule, SaleStoreModule],
  providers: [SaleRecovery, PurchaseAvailability],
  exports: [SaleRecovery, PurchaseAvailability],
})
export class AvailabilityModule {}
