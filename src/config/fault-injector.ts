import { Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from './app-config.js';
import type { AppConfig, FaultPoint } from './env.validation.js';

/**
 * Crash tests need the process to die at an exact point: only the Redis outbox knows a
 * purchase (after-deduct); an order is committed but its message not acked (after-commit); a
 * cancel is committed in MySQL but its stock not yet back in Redis (after-cancel-commit). Off unless FAULT_CRASH_POINT is set, which
 * the config refuses in production.
 */
@Injectable()
export class FaultInjector {
  private readonly logger = new Logger(FaultInjector.name);
  private reached = 0;

  constructor(@InjectConfig() private readonly config: AppConfig) {}

  crashPoint(point: FaultPoint): void {
    const fault = this.config.faultCrash;
    if (fault === null || fault.point !== point || ++this.reached < fault.after) return;
    this.logger.warn(`fault injection: SIGKILL at ${point}`);
    process.kill(process.pid, 'SIGKILL');
  }
}
