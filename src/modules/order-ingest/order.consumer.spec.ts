import type { ConsumeMessage } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { fakeBroker } from '../../../test/support/fake-broker.js';
import type { AppSection } from '../../config/app-section.js';
import type { RabbitMqConfig } from '../../config/rabbitmq.config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { OrderIngestService } from './order-ingest.service.js';
import type { NewOrder } from '../messaging/order-message.js';
import type { IngestOutcome, IngestPurchase } from './order-ingest.types.js';
import type { BarrierStore } from '../messaging/barrier-store.js';
import { OrderConsumer } from './order.consumer.js';
import { BARRIER_MESSAGE_TYPE, encodeOrderMessage } from '../messaging/order-message.js';

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

const tagOf = (m: ConsumeMessage) => m.fields.deliveryTag;

describe('OrderConsumer', () => {
  const rabbitmq = {
    consumer: { enabled: true, prefetch: 100, batchSize: 100, batchWaitMs: 1, maxDeliveries: 5 },
  } as RabbitMqConfig;
  const app = { shutdownTimeoutMs: 5_000 } as AppSection;
  const ingest = { ingest: vi.fn<OrderIngestService['ingest']>() };
  let broker: ReturnType<typeof fakeBroker>;
  let consumer: OrderConsumer;
  let barrierStore: BarrierStore;
  /** The order barrier as the consumer sees it: barriers open, delivered, drained by whom. */
  let barriers: {
    open: string[];
    delivered: Set<string>;
    drained: [string, string][];
    sessions: Set<string>;
    /** Every heartbeat, by session, in order. */
    beats: string[];
  };

  beforeEach(async () => {
    vi.resetAllMocks();
    broker = fakeBroker({ ordersQueue: 'orders' });
    barriers = { open: [], delivered: new Set(), drained: [], sessions: new Set(), beats: [] };
    const state = barriers;
    barrierStore = {
      owns: () => true,
      tick: vi.fn(async ({ session }: { session?: string } = {}) => {
        if (session) state.sessions.add(session);
        if (session) state.beats.push(session);
        return { consumers: [...state.sessions], open: state.open };
      }),
      isDelivered: vi.fn(async (id: string) => state.delivered.has(id)),
      markDelivered: vi.fn(async (id: string) => void state.delivered.add(id)),
      markDrained: vi.fn(async (id: string, session: string) => {
        state.drained.push([id, session]);
      }),
    };
    consumer = new OrderConsumer(
      broker.rabbit,
      ingest as unknown as OrderIngestService,
      new MetricsService(),
      rabbitmq,
      app,
      [barrierStore],
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

  it('should give an abandoned batch back to the queue, each delivery once, and go on with the next one', async () => {
    const [a, b] = [order(), order()];
    ingest.ingest
      .mockRejectedValueOnce(new Error('bug'))
      .mockImplementationOnce(async (_goodsId, purchases) =>
        purchases.map(({ order: o }) => ({ kind: 'written', order: o })),
      );
    // The sweeper's copy rides in the same batch: two deliveries, each given back once.
    const [first, copy] = [message(a), message(a)];
    broker.deliver(first);
    broker.deliver(copy);
    await vi.waitFor(() => expect(ingest.ingest).toHaveBeenCalledTimes(1));
    const second = message(b);

    await consume(second);

    expect(broker.settled()).toEqual([
      [second.fields.deliveryTag, 'ack'],
      [first.fields.deliveryTag, 'requeue'],
      [copy.fields.deliveryTag, 'requeue'],
    ]);
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
    const ticks = barrierStore.tick as ReturnType<typeof vi.fn>;
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

  /** An order barrier's message, as the opener publishes it. */
  function barrierMessage(id: string): ConsumeMessage {
    return {
      content: Buffer.from(JSON.stringify({ barrier: id })),
      fields: { deliveryTag: nextTag++ },
      properties: { type: BARRIER_MESSAGE_TYPE, headers: {} },
    } as unknown as ConsumeMessage;
  }

  /** Resolves once the registry has had `n` more heartbeats (ticks) from now. */
  async function ticksGoBy(n: number): Promise<void> {
    const seen = barriers.beats.length;
    await vi.waitFor(() => expect(barriers.beats.length).toBeGreaterThanOrEqual(seen + n), {
      timeout: 5_000,
    });
  }

  /** Ingest holds the purchases of `held` until its release; the rest come back as `kind`. */
  function holding(kind: (o: NewOrder) => IngestOutcome['kind']) {
    const gates = new Map<string, () => void>();
    const hold = (requestId: string) =>
      new Promise<void>((resolve) => gates.set(requestId, resolve));
    const held = new Set<string>();
    ingest.ingest.mockImplementation(async (_goodsId, purchases) => {
      for (const { order: p } of purchases) if (held.has(p.requestId)) await hold(p.requestId);
      return purchases.map(({ order: p }) => ({ kind: kind(p), order: p }) as IngestOutcome);
    });
    return {
      hold: (o: NewOrder) => held.add(o.requestId),
      release: async (o: NewOrder) => {
        await vi.waitFor(() => expect(gates.has(o.requestId)).toBe(true));
        held.delete(o.requestId);
        gates.get(o.requestId)!();
      },
    };
  }

  it("should count an old channel's late settles in its own session only: a barrier waits for the new session's deliveries", async () => {
    const [early, inFlight, later] = [order(7), order(7), order(8)];
    const written = new Set<string>();
    const gate = holding((o) => {
      const kind = written.has(o.requestId) ? 'duplicate' : 'written';
      written.add(o.requestId);
      return kind;
    });
    // Session 1: one delivery settled, then a batch held (MySQL slow).
    const settledEarly = message(early);
    broker.deliver(settledEarly);
    await vi.waitFor(() => expect(broker.settled()).toEqual([[tagOf(settledEarly), 'ack']]));
    gate.hold(inFlight);
    broker.deliver(message(inFlight));
    await vi.waitFor(() => expect(ingest.ingest).toHaveBeenCalledTimes(2));

    // The channel is re-opened: the broker redelivers the held message and a newer one, numbered
    // 1 and 2 again in session 2; the newer one's batch is held too.
    await broker.connect();
    gate.hold(later);
    const [redelivered, newer] = [message(inFlight, 1), message(later)];
    broker.deliver(redelivered);
    broker.deliver(newer);
    barriers.open.push('b1');
    broker.deliver(barrierMessage('b1'));
    await vi.waitFor(() => expect(barriers.delivered).toEqual(new Set(['b1'])));
    await ticksGoBy(2);

    // Session 1's batch ends: its settles (on the closed channel) were number 2 of session 1.
    await gate.release(inFlight);
    await vi.waitFor(() => expect(broker.settled()).toContainEqual([tagOf(redelivered), 'ack']));
    await ticksGoBy(4);
    expect(barriers.drained).toEqual([]);

    await gate.release(later);
    await vi.waitFor(() => expect(broker.settled()).toContainEqual([tagOf(newer), 'ack']));
    const sessions = [...barriers.sessions];
    expect(sessions).toHaveLength(2);
    await vi.waitFor(() => expect(barriers.drained).toEqual([['b1', sessions[1]]]), {
      timeout: 5_000,
    });
  });

  it('should drain no barrier in a session that gave a delivery back; it beats until what it holds is settled, and a new session on its channel takes over', async () => {
    const [abandoned, queued] = [order(7), order(8)];
    const gate = holding(() => 'written');
    let failed = false;
    const held = ingest.ingest.getMockImplementation()!;
    ingest.ingest.mockImplementation(async (goodsId, purchases, stop) => {
      const result = await held(goodsId, purchases, stop);
      if (!failed && purchases.some(({ order: p }) => p.requestId === abandoned.requestId)) {
        failed = true;
        throw new Error('bug');
      }
      return result;
    });
    gate.hold(abandoned);
    const first = message(abandoned);
    broker.deliver(first);
    await vi.waitFor(() => expect(ingest.ingest).toHaveBeenCalledTimes(1));
    // Received before the barrier, in the next batch: held as well.
    gate.hold(queued);
    const second = message(queued);
    broker.deliver(second);
    barriers.open.push('b1');
    const barrier = barrierMessage('b1');
    broker.deliver(barrier);
    await vi.waitFor(() => expect(barriers.delivered).toEqual(new Set(['b1'])));
    await ticksGoBy(2);
    const [oldSession] = [...barriers.sessions];

    // The batch fails after the barrier's fence: its message goes back behind the barrier.
    await gate.release(abandoned);
    await vi.waitFor(() =>
      expect(broker.settled()).toEqual([
        [tagOf(barrier), 'ack'],
        [tagOf(first), 'requeue'],
      ]),
    );
    await vi.waitFor(() => expect(barriers.sessions.size).toBe(2));
    const newSession = [...barriers.sessions][1];
    // The old session still holds one delivery: it keeps beating, and drains nothing.
    await ticksGoBy(4);
    expect(barriers.beats.slice(-4)).toContain(oldSession);
    expect(barriers.drained.filter(([, session]) => session === oldSession)).toEqual([]);

    await gate.release(queued);
    await vi.waitFor(() => expect(broker.settled()).toContainEqual([tagOf(second), 'ack']));
    await ticksGoBy(2);
    const beatsAfterIdle = barriers.beats.length;
    await ticksGoBy(4);
    expect(barriers.beats.slice(beatsAfterIdle)).not.toContain(oldSession);
    // The new session, on the same channel, drains the barrier (the opener restarts it anyway,
    // since the old session went away undrained); the message given back is written there.
    expect(barriers.drained).toEqual([['b1', newSession]]);
    const redelivered = message(abandoned, 1);
    await consume(redelivered);
    expect(broker.settled()).toContainEqual([tagOf(redelivered), 'ack']);
  });

  it('should take no new message once stopping: the broker gives it to another consumer', async () => {
    await consumer.onModuleDestroy();
    broker.deliver(message(order()));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(ingest.ingest).not.toHaveBeenCalled();
  });
});
