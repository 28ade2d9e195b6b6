import { Module } from '@nestjs/common';
import { FallbackModule } from '../fallback/fallback.module.js';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { PurchaseAvailabilityService } from './purchase-availability.service.js';
import { SaleRecoveryService } from './sale-recovery.service.js';
import { SurvivorWipeModule } from './survivor-wipe.module.js';

/**
 * Whether Redis may sell a goods now: the restart recovery (SaleRecoveryService closes the Redis path
 * of the sales a restarted Redis held until they are rebuilt; SurvivorWipeService wipes what survived
 * the restart, once) and the outage policy (RedisDownPolicy, bound once in FallbackModule)
 * answer together through PurchaseAvailabilityService. Every instance that sells imports it: each
 * notices a restart on its own connection. The rebuild after a restart is
 * AvailabilityJobsModule's.
 */
@Module({
  imports: [FallbackModule, SaleStoreModule, SurvivorWipeModule],
  providers: [SaleRecoveryService, PurchaseAvailabilityService],
  exports: [SaleRecoveryService, PurchaseAvailabilityService],
})
export class AvailabilityModule {}
