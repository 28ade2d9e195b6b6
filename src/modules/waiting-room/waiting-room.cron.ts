import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { scheduleSingletonJob } from '../../infra/scheduling/singleton-job.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { waitingRoomConfig, type WaitingRoomConfig } from '../../config/waiting-room.config.js';
import { RedisLocksService } from '../../infra/redis/redis-locks.service.js';
import { AdmissionPacerService } from './admission-pacer.service.js';

/** Schedules only; AdmissionPacerService does the work. Off with QUEUE_ADMISSION_ENABLED=false. */
@Injectable()
export class WaitingRoomCron implements OnApplicationBootstrap {
  constructor(
    @InjectConfig(waitingRoomConfig) private readonly config: WaitingRoomConfig,
    private readonly registry: SchedulerRegistry,
    private readonly locks: RedisLocksService,
    private readonly pacer: AdmissionPacerService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.enabled) return;
    scheduleSingletonJob({
      registry: this.registry,
      locks: this.locks,
      name: 'queue-admission',
      schedule: { intervalMs: this.config.tickMs },
      run: () => this.pacer.tick(),
    });
  }
}
