import { BeforeApplicationShutdown, Injectable, type MessageEvent } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { EventFeed, type FeedValues } from '../../common/http/event-feed.js';
import { StreamBudget } from '../../infra/redis/stream-budget.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import { StreamSlotsService } from '../../infra/redis/stream-slots.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { PurchaseLedgerStore } from '../sale-store/purchase-ledger.store.js';
import { PurchaseResultService } from './purchase-result.service.js';
import type { PurchaseResultView } from './purchase.types.js';
import { ResultEventsService } from '../sale-store/result-events.service.js';

const isFinal = (view: PurchaseResultView) => view.status === 'SUCCESS' || view.status === 'FAILED';

/** The result's JSON, its fields in one order whichever store it came from (to tell changes). */
function eventData(view: PurchaseResultView): string {
  const { status, requestId, orderNo, reason } = view;
  return JSON.stringify({ status, requestId, orderNo, reason });
}

/** A result feed's values: SUCCESS and FAILED end it. */
const RESULT_VALUES: FeedValues<PurchaseResultView> = { data: eventData, isFinal };

/**
 * GET /api/v1/seckill/:goodsId/result/stream. A stream holds a slot of its user's (at most
 * RESULT_STREAM_MAX_PER_USER across instances, in Redis), one of its client address's (at most
 * RESULT_STREAM_MAX_PER_IP) and one of this instance's (RESULT_STREAM_MAX_PER_INSTANCE): its
 * StreamBudget; beyond any, it is 429.
 * While open it costs no query: a read of the user's result in Redis per change announced on its
 * channel (ResultEventsService).
 */
@Injectable()
export class ResultStreamsService implements BeforeApplicationShutdown {
  private readonly budget: StreamBudget;

  constructor(
    private readonly results: PurchaseResultService,
    private readonly ledger: PurchaseLedgerStore,
    private readonly events: ResultEventsService,
    slots: StreamSlotsService,
    metrics: MetricsService,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
  ) {
    this.budget = new StreamBudget('result', slots, seckill.resultStream, metrics.resultStreams);
  }

  /**
   * Sets a stream up: its slots, its channel, its first result. `clientAddress` is the request's
   * in its one form, as the blocklist and the rate limits count it (an IPv6 client by its /64),
   * or null for a trusted proxy's own request, which takes no address slot.
   */
  open(
    goodsId: number,
    userId: number,
    clientAddress: string | null,
    ended: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    return this.budget.open(userId, clientAddress, ended, async (teardown) => {
      const feed = new EventFeed(
        () => this.ledger.result(goodsId, userId),
        RESULT_VALUES,
        this.seckill.resultStream,
        this.budget.enders,
      );
      teardown.add(await this.events.watch(goodsId, userId, () => feed.changed()));
      // After the watch: a change from here on is heard, so none falls between read and watch.
      const initial = await this.results.result(goodsId, userId);
      return feed.events(initial);
    });
  }

  beforeApplicationShutdown(): void {
    this.budget.endAll();
  }
}
