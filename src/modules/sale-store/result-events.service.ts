import { Injectable, OnModuleInit } from '@nestjs/common';
import { UnavailableError } from '../../common/errors/domain-error.js';
import { RedisSubscriberService } from '../../infra/redis/redis-subscriber.service.js';
import { resultChannel } from '../../infra/redis/seckill-keys.js';
import { BucketCountsStore } from './bucket-counts.store.js';

/**
 * Tells this instance's result streams that a user's result changed: the scripts that write a
 * result (deduct, complete, release) publish on that user's channel (resultChannel), and the
 * instance subscribes to a channel (on its one pub/sub connection, RedisSubscriberService) only while it
 * streams that user's result. An open stream costs nothing while nothing changes; a change
 * reaches only the instances streaming it. A listener is called once per change, with nothing:
 * it re-reads the result. After the connection comes back, every listener is called once, since
 * changes during the outage were not heard.
 */
@Injectable()
export class ResultEventsService implements OnModuleInit {
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly subscriber: RedisSubscriberService,
    private readonly buckets: BucketCountsStore,
  ) {}

  onModuleInit(): void {
    // Up before the first stream: a stream finding it down is refused (503).
    this.subscriber.start();
    this.subscriber.onBack(() => {
      for (const listener of this.listeners) listener();
    });
  }

  /**
   * Calls `listener` whenever the user's result for this goods may have changed, from the moment
   * this resolves; the returned function stops it. 503 while the pub/sub connection is down.
   */
  async watch(goodsId: number, userId: number, listener: () => void): Promise<() => void> {
    if (!this.subscriber.isUp) {
      throw new UnavailableError('Result events are unavailable; try again shortly');
    }
    let stop: () => void;
    try {
      const shards = await this.buckets.of(goodsId);
      stop = await this.subscriber.listen(resultChannel(goodsId, userId, shards), listener);
    } catch (error) {
      throw new UnavailableError('Result events are unavailable; try again shortly', error);
    }
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
      stop();
    };
  }
}
