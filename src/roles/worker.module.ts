import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { AvailabilityJobsModule } from '../modules/availability/availability-jobs.module.js';
import { MerchantEventsJobsModule } from '../modules/merchant-events/merchant-events-jobs.module.js';
import { MessagingJobsModule } from '../modules/messaging/messaging-jobs.module.js';
import { OrderIngestModule } from '../modules/order-ingest/order-ingest.module.js';
import { OrdersJobsModule } from '../modules/orders/orders-jobs.module.js';
import { PreheatJobsModule } from '../modules/preheat/preheat-jobs.module.js';
import { ReconcileJobsModule } from '../modules/reconcile/reconcile-jobs.module.js';
import { WaitingRoomJobsModule } from '../modules/waiting-room/waiting-room-jobs.module.js';

/**
 * What a working instance (APP_ROLE `worker` or `all`) adds: the order write path with its
 * consumer (OrderIngestModule), the payment timeouts' consumer (OrdersJobsModule), and the
 * cluster-wide jobs, each run by one instance at a time (a lock per job in Redis): preheat,
 * outbox sweep, overdue-order expiry, reconcile, eviction of ended sales, the waiting rooms'
 * admissions, and the rebuild of the
 * sales after a Redis restart, and the return to Redis of the sales MySQL sold while it was down;
 * and, on every working instance, the delivery of the merchant's order events.
 * Each feature brings its own jobs (its `…JobsModule`).
 */
@Module({
  imports: [
    ScheduleModule.forRoot(),
    OrderIngestModule,
    MessagingJobsModule,
    OrdersJobsModule,
    PreheatJobsModule,
    AvailabilityJobsModule,
    ReconcileJobsModule,
    WaitingRoomJobsModule,
    MerchantEventsJobsModule,
  ],
})
export class WorkerModule {}
