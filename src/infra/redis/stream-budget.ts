import type { MessageEvent } from '@nestjs/common';
import type { Gauge } from 'prom-client';
import type { Observable } from 'rxjs';
import type { StreamBoundsConfig } from '../../config/seckill.config.js';
import { streamAddressSlotsKey, streamSlotsKey, type StreamKind } from './seckill-keys.js';
import type { StreamSlotsService } from './stream-slots.service.js';
import { DomainError } from '../../common/errors/domain-error.js';
import { Teardown } from '../../common/teardown.js';

/**
 * The bounds of one kind of event stream (result, queue): a slot of this instance's (at most
 * `maxPerInstance`), one of the user's and one of the client address's across instances (at most
 * `maxPerUser` and `maxPerIp`: many accounts behind one address cannot hold thousands); beyond
 * any, 429. A trusted proxy's own request (no client address, `countedAddress` null) takes no
 * address slot: the proxy's address is every buyer's behind it. It also holds the enders of the
 * open streams, to end them all at shutdown.
 */
export class StreamBudget {
  private openHere = 0;
  readonly enders = new Set<() => void>();

  constructor(
    private readonly kind: StreamKind,
    private readonly slots: StreamSlotsService,
    private readonly bounds: StreamBoundsConfig,
    private readonly gauge: Gauge,
  ) {}

  /**
   * Sets a stream up within the budget: its slots, then `setup` (its watches, its first value),
   * which adds what undoes it to `teardown`. `ended` aborts however the response ends (the
   * client left, the feed completed, setup failed), which gives it all back.
   */
  async open(
    userId: number,
    clientAddress: string | null,
    ended: AbortSignal,
    setup: (teardown: Teardown) => Promise<Observable<MessageEvent>>,
  ): Promise<Observable<MessageEvent>> {
    const teardown = new Teardown();
    ended.addEventListener('abort', () => teardown.run(), { once: true });
    try {
      await this.take(userId, clientAddress, teardown);
      const events = await setup(teardown);
      if (ended.aborted) teardown.run();
      return events;
    } catch (error) {
      teardown.run();
      throw error;
    }
  }

  /** Takes the three slots for a stream; `teardown` gives them back. */
  private async take(
    userId: number,
    clientAddress: string | null,
    teardown: Teardown,
  ): Promise<void> {
    const { kind, bounds } = this;
    if (this.openHere >= bounds.maxPerInstance) {
      throw tooMany(`This server holds as many ${kind} streams as it may; try again shortly`, 1);
    }
    this.openHere += 1;
    this.gauge.inc();
    teardown.add(() => {
      this.openHere -= 1;
      this.gauge.dec();
    });
    await this.takeShared(
      streamSlotsKey(kind, userId),
      bounds.maxPerUser,
      `You have ${bounds.maxPerUser} ${kind} streams open already; close one first`,
      teardown,
    );
    if (clientAddress === null) return;
    await this.takeShared(
      streamAddressSlotsKey(kind, clientAddress),
      bounds.maxPerIp,
      `Your address has ${bounds.maxPerIp} ${kind} streams open already; try again shortly`,
      teardown,
    );
  }

  /** Ends every open stream, so that the HTTP server can close (their clients reconnect). */
  endAll(): void {
    for (const end of [...this.enders]) end();
  }

  private async takeShared(
    key: string,
    limit: number,
    refusal: string,
    teardown: Teardown,
  ): Promise<void> {
    const giveBack = await this.slots.take(key, limit, this.bounds.lifetimeMs);
    if (!giveBack) throw tooMany(refusal, 5);
    teardown.add(giveBack);
  }
}

function tooMany(message: string, retryAfterSeconds: number): DomainError {
  return new DomainError('TOO_MANY_REQUESTS', message, { retryAfterSeconds });
}
