import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '../../infra/redis/redis-client.js';
import { REDIS_CLIENT } from '../../infra/redis/redis.constants.js';

/**
 * The marker of one Redis restart or failover (`marker`: recoveryKey() of the restart), through
 * which one instance at a time wipes the sales that server holds (whatever survived is a
 * snapshot older than the truth) before any is rebuilt.
 */
@Injectable()
export class RestartMarkersStore {
  constructor(@Inject(REDIS_CLIENT) private readonly redis: RedisClient) {}

  /**
   * True for the one instance that gets to wipe; false for the others while it is at it, and
   * once it is done. The claim is a lease: if its holder dies mid-wipe, the claim lapses and
   * another instance wipes.
   */
  async claim(marker: string, token: string, leaseMs: number): Promise<boolean> {
    if ((await this.redis.set(marker, token, 'PX', leaseMs, 'NX')) === 'OK') return true;
    // Its holder's next attempt renews it.
    if ((await this.redis.get(marker)) !== token) return false;
    return (await this.redis.pexpire(marker, leaseMs)) === 1;
  }

  /** Whether the claim `token` made on the restart's wipe is still held (not lapsed, not done). */
  async holds(marker: string, token: string): Promise<boolean> {
    return (await this.redis.get(marker)) === token;
  }

  /** The survivors of this Redis server are wiped: sales may be rebuilt and sold again. */
  async markWiped(marker: string): Promise<void> {
    await this.redis.set(marker, 'wiped', 'EX', 86_400);
  }

  async isWiped(marker: string): Promise<boolean> {
    return (await this.redis.get(marker)) === 'wiped';
  }
}
