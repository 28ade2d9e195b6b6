import type { Channel, ConsumeMessage } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { fakeBroker } from '../../../test/support/fake-broker.js';
import type { AppConfig } from '../../config/env.validation.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { OrderIngest } from '../orders/order-ingest.service.js';
import type { IngestOutcome, IngestPurchase, NewOrder } from '../orders/order.types.js';
import { Delivery } from './delivery.js';
import type { DatabaseBarrier } from '../fallback/database-barrier.service.js';
import type { OrderBarrier } from './order-barrier.service.js';
import { OrderConsumer } from './order-consumer.service.js';
import { BARRIER_MESSAGE_TYPE, encodeOrderMessage } from './order-message.js';

let nextUser = 1;

function order(goodsId = 7): NewOrder {
  const userId = nextUser++;
  return {
    requestId: randomUUID(),
    orderNo: `SK${String(userId).padStart(10, '0')}`,
    userId,
    goodsId,
    quantity: 1,
    acceptedAt: Date.now(),
  };
}

let nextTag = 1;

function message(body: NewOrder | string, deliveryCount?: number): ConsumeMessage {
  return {
    content: Buffer.from(typeof body === 'string' ? body : encodeOrderMessage(body)),
    fields: { deliveryTag: nextTag++ },
    properties: {
      messageId: typeof body === 'string' ? 'poison' : body.requestId,
      headers: deliveryCount === undefined ? {} : { 'x-delivery-count': deliveryCount },
    },
  } as unknown as ConsumeMessage;
}

describe('OrderConsumer', () => {
  const config = {
    consumerEnabled: true,
    consumerPrefetch: 100,
    consumerBatchSize: 100,
    consumerBatchWaitMs: 1,
    consumerMaxDeliveries: 5,
    shutdownTimeoutMs: 5_000,
  } as AppConfig;
  const ingest = { ingest: vi.fn<OrderIngest['ingest']>() };
  let broker: ReturnType<typeof fakeBroker>;
  let consumer: OrderConsumer;
  /** The order barrier as the consumer sees it: barriers open, delivered, drained by whom. */
  let barriers: {
    open: string[];
    delivered: Set<string>;
    drained: [string, string][];
    sessions: Set<string>;
  };

  beforeEach(async () => {
    vi.resetAllMocks();
    broker = fakeBroker({ ordersQueue: 'orders' });
    barriers = { open: [], delivered: new Set(), drained: [], sessions: new Set() };
    const state = barriers;
    consumer = new OrderConsumer(
      broker.rabbit,
      ingest as unknown as OrderIngest,
      new MetricsService(),
      config,
      {
        tick: vi.fn(async ({ session }: { session?: string } = {}) => {
          if (session) state.sessions.add(session);
          return { consumers: [...state.sessions], open: state.open };
        }),
        isDelivered: vi.fn(async (id: string) => state.delivered.has(id)),
        markDelivered: vi.fn(async (id: string) => void state.delivered.add(id)),
        markDrained: vi.fn(async (id: string, session: string) => {
          state.drained.push([id, session]);
        }),
      } as unknown as OrderBarrier,
      {} as DatabaseBarrier,
    );
    consumer.onApplicationBootstrap();
    await broker.connect();
  });

  /** Ingest answers with these kinds, by request id. */
  function outcomes(kinds: Map<string, IngestOutcome['kind']>) {
    ingest.ingest.mockImplementation(async (_goodsId, purchases: IngestPurchase[]) =>
      purchases.map(
        ({ order: o }) => ({ kind: kinds.get(o.requestId)!, order: o }) as IngestOutcome,
      ),
    );
  }

  /** Delivers the messages, then lets the consumer finish the batch in hand (as at shutdown). */
  async function consume(...messages: ConsumeMessage[]): Promise<void> {
    for (const m of messages) broker.deliver(m);
    await consumer.onModuleDestroy();
  }

  it('should settle every delivery exactly once, as its outcome says', async () => {
    const kinds: IngestOutcome['kind'][] = [
      'written',
      'duplicate',
      'completed',
      'rejected',
      'voided',
      'refused',
      'exhausted',
      'deferred',
    ];
    const orders = kinds.map(() => order());
    outcomes(new Map(orders.map((o, index) => [o.requestId, kinds[index]])));
    const messages = orders.map((o) => message(o));
    const poison = message('{"not":"an order"');

    await consume(...messages, poison);

    const tag = (index: number) => messages[index].fields.deliveryTag;
    expect(broker.settled()).toEqual([
      ...[0, 1, 2, 3, 4].map((index) => [tag(index), 'ack']),
      [poison.fields.deliveryTag, 'reject'], // straight away, before ingest
      [tag(5), 'reject'],
      [tag(6), 'reject'],
    ]);
  });

  it('should settle nothing of a goods until ingest has its final outcomes', async () => {
    const o = order();
    let finish!: () => void;
    ingest.ingest.mockImplementationOnce(async (_goodsId, purchases) => {
      await new Promise<void>((resolve) => (finish = resolve));
      return purchases.map(({ order: p }) => ({ kind: 'voided', order: p }));
    });
    const m = message(o);
    broker.deliver(m);
    await vi.waitFor(() => expect(ingest.ingest).toHaveBeenCalledTimes(1));
    expect(broker.settled()).toEqual([]);

    finish();
    await consume();

    expect(broker.settled()).toEqual([[m.fields.deliveryTag, 'ack']]);
  });

  it('should hand ingest one purchase per request id and settle each of its deliveries once', async () => {
    const o = order();
    outcomes(new Map([[o.requestId, 'written']]));
    // The outbox sweeper republished it while the original was still on its way.
    const [original, republished] = [message(o), message(o)];

    await consume(original, republished);

    expect(ingest.ingest).toHaveBeenCalledTimes(1);
    expect(ingest.ingest.mock.calls[0][1]).toHaveLength(1);
    expect(broker.settled()).toEqual([
      [original.fields.deliveryTag, 'ack'],
      [republished.fields.deliveryTag, 'ack'],
    ]);
  });

  it('should group purchases per goods and mark one delivered CONSUMER_MAX_DELIVERIES times as exhausted', async () => {
    const [a, b, c] = [order(7), order(8), order(7)];
    outcomes(
      new Map([
        [a.requestId, 'written'],
        [b.requestId, 'written'],
        [c.requestId, 'exhausted'],
      ]),
    );

    await consume(message(a, 0), message(b), message(c, 5));

    const calls = ingest.ingest.mock.calls.map(([goodsId, purchases]) => [
      goodsId,
      purchases.map((p) => [p.order.requestId, p.exhausted]),
    ]);
    expect(calls).toEqual([
      [
        7,
        [
          [a.requestId, false],
          [c.requestId, true],
        ],
      ],
      [8, [[b.requestId, false]]],
    ]);
  });

  it('should leave a batch unsettled when ingest fails unexpectedly, and go on with the next one', async () => {
    const [a, b] = [order(), order()];
    ingest.ingest
      .mockRejectedValueOnce(new Error('bug'))
      .mockImplementationOnce(async (_goodsId, purchases) =>
        purchases.map(({ order: o }) => ({ kind: 'written', order: o })),
      );
    const first = message(a);
    broker.deliver(first);
    await vi.waitFor(() => expect(ingest.ingest).toHaveBeenCalledTimes(1));
    const second = message(b);

    await consume(second);

    expect(broker.settled()).toEqual([[second.fields.deliveryTag, 'ack']]);
  });

  it('should ack an order barrier at once, and mark it drained only once what it received before the barrier is settled', async () => {
    const held = order();
    let finish!: () => void;
    ingest.ingest.mockImplementation(async (_goodsId, purchases) => {
      if (purchases.some(({ order: p }) => p.requestId === held.requestId)) {
        await new Promise<void>((resolve) => (finish = resolve));
      }
      return purchases.map(({ order: p }) => ({ kind: 'written', order: p }));
    });
    const before = message(held);
    broker.deliver(before);
    await vi.waitFor(() => expect(ingest.ingest).toHaveBeenCalledTimes(1));
    barriers.open.push('b1');
    const barrier = {
      content: Buffer.from(JSON.stringify({ barrier: 'b1' })),
      fields: { deliveryTag: nextTag++ },
      properties: { type: BARRIER_MESSAGE_TYPE, headers: {} },
    } as unknown as ConsumeMessage;
    broker.deliver(barrier);
    // Received before this consumer's fence: waited for too (on the safe side).
    const after = message(order());
    broker.deliver(after);

    await vi.waitFor(() => expect(broker.settled()).toEqual([[barrier.fields.deliveryTag, 'ack']]));
    expect(barriers.delivered).toEqual(new Set(['b1']));
    // Several ticks go by with the message before the barrier still held: not drained.
    const ticks = (consumer as unknown as { barriers: { tick: ReturnType<typeof vi.fn> } }).barriers
      .tick;
    const seen = ticks.mock.calls.length;
    await vi.waitFor(() => expect(ticks.mock.calls.length).toBeGreaterThan(seen + 3), {
      timeout: 5_000,
    });
    expect(barriers.drained).toEqual([]);

    finish();
    await vi.waitFor(() => expect(barriers.drained).toEqual([['b1', [...barriers.sessions][0]]]), {
      timeout: 5_000,
    });
    await consume();
    expect(broker.settled()).toContainEqual([after.fields.deliveryTag, 'ack']);
  });

  it('should take no new message once stopping: the broker gives it to another consumer', async () => {
    await consumer.onModuleDestroy();
    broker.deliver(message(order()));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(ingest.ingest).not.toHaveBeenCalled();
  });
});

describe('Delivery', () => {
  it('should reach the broker once however often it is settled', () => {
    const channel = { ack: vi.fn(), nack: vi.fn() };
    const delivery = new Delivery(channel as unknown as Channel, message(order()));

    expect(delivery.settle('ack')).toBe(true);
    expect(delivery.settle('ack')).toBe(false);
    expect(delivery.settle('reject')).toBe(false);

    expect(channel.ack).toHaveBeenCalledTimes(1);
    expect(channel.nack).not.toHaveBeenCalled();
  });

  it('should count as settled when its channel closed meanwhile (the broker requeued it)', () => {
    const channel = {
      ack: vi.fn(() => {
        throw new Error('Channel closed');
      }),
    };
    const delivery = new Delivery(channel as unknown as Channel, message(order()));

    expect(delivery.settle('ack')).toBe(true);
    expect(delivery.settle('ack')).toBe(false);
    expect(channel.ack).toHaveBeenCalledTimes(1);
  });
});
