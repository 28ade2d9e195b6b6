import { Inject, Injectable } from '@nestjs/common';
import { RedisDownPolicy } from '../fallback/redis-down.policy.js';
import { PurchaseTicket } from './purchase-ticket.js';
import { SaleRecoveryService } from './sale-recovery.service.js';

/**
 * Which store decides a purchase, in one place: the restart recovery (SaleRecoveryService: the Redis
 * path closed while a restarted Redis is rebuilt) and the outage policy bound from
 * REDIS_DOWN_MODE (RedisDownPolicy: a closed path refused, or sold through MySQL) together, handed
 * to the purchase as one ticket. Reading it changes nothing.
 */
@Injectable()
export class PurchaseAvailabilityService {
  constructor(
    private readonly recovery: SaleRecoveryService,
    @Inject(RedisDownPolicy) private readonly policy: RedisDownPolicy,
  ) {}

  /** Cut first, before anything is read for the purchase (or its result). */
  ticket(goodsId: number): PurchaseTicket {
    return new PurchaseTicket(goodsId, this.recovery, this.policy);
  }
}
