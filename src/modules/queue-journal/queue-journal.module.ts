import { Module } from '@nestjs/common';
import { SaleStoreModule } from '../sale-store/sale-store.module.js';
import { DrawJournalService } from './draw-journal.service.js';
import { JoinJournalService } from './join-journal.service.js';
import { QueueJournalRepository } from './queue-journal.repository.js';
import { QueueRestoreScripts } from './queue-restore.scripts.js';
import { QueueRestoreService } from './queue-restore.service.js';
import { RoomJournalService } from './room-journal.service.js';

/**
 * A queue sale's waiting room in MySQL as well as Redis, so that it outlives Redis: the joins,
 * written before they are answered (JoinJournalService), the room's progress and admissions,
 * written by the admission job (RoomJournalService), the commit-and-reveal's secrets and draw
 * (DrawJournalService), and the restore that writes it all back into Redis
 * (QueueRestoreService). Below the waiting room and the preheat, which both use it.
 */
@Module({
  imports: [SaleStoreModule],
  providers: [
    QueueJournalRepository,
    JoinJournalService,
    RoomJournalService,
    DrawJournalService,
    QueueRestoreService,
    QueueRestoreScripts,
  ],
  exports: [JoinJournalService, RoomJournalService, DrawJournalService, QueueRestoreService],
})
export class QueueJournalModule {}
