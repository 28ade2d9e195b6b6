import type { ConsumeMessage } from 'amqplib';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { fakeBroker } from '../../../test/support/fake-broker.js';
import type { AppSection } from '../../config/app-section.js';
import type { RabbitMqConfig } from '../../config/rabbitmq.config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type {
  ExpireOutcome,
  ExpireResult,
  OrderLifecycleService,
} from './order-lifecycle.service.js';
import type { OrderPublisher } from '../messaging/order.publisher.js';
import { TimeoutConsumer } from './timeout.consumer.js';
import { encodeTimeoutMessage, type OrderTimeout } from '../messaging/timeout-message.js';

const GOODS = 7;
let nextOrder = 1;
const anOrder = (): OrderTimeout => ({
  orderNo: `SK${String(nextOrder++).padStart(10, '0')}`,
  goodsId: GOODS,
});

let nextTag = 1;
const tag = (message: ConsumeMessage) => message.fields.deliveryTag;
const delivery = (body: string) =>
  ({
    content: Buffer.from(body),
    fields: { deliveryTag: nextTag++ },
    properties: { headers: {} },
  }) as unknown as ConsumeMessage;

describe('TimeoutConsumer', () => {
  const lifecycle = { expire: vi.fn<OrderLifecycleService['expire']>() };
  const publisher = { publishTimeouts: vi.fn<OrderPublisher['publishTimeouts']>() };
  let broker: ReturnType<typeof fakeBroker>;
  let metrics: MetricsService;
  let consumer: TimeoutConsumer;

  beforeEach(async () => {
    vi.resetAllMocks();
    publisher.publishTimeouts.mockResolvedValue(true);
    metrics = new MetricsService();
    broker = fakeBroker({ timeoutQueue: 'timeout' });
    consumer = new TimeoutConsumer(
      broker.rabbit,
      lifecycle as unknown as OrderLifecycleService,
      publisher as unknown as OrderPublisher,
      metrics,
      { consumer: { enabled: true } } as RabbitMqConfig,
      { shutdownTimeoutMs: 5_000 } as AppSection,
    );
    consumer.onApplicationBootstrap();
    await broker.connect();
  });

  /**
   * Expire answers with these outcomes, by order number, one call after another; `not_due` is
   * a minute off unless given as `{dueInMs}`.
   */
  function outcomes(byOrder: Map<string, (ExpireOutcome | Error | { dueInMs: number })[]>) {
    lifecycle.expire.mockImplementation(async (orderNo): Promise<ExpireResult> => {
      const next = byOrder.get(orderNo)!;
      const outcome = next.length > 1 ? next.shift()! : next[0];
      if (outcome instanceof Error) throw outcome;
      if (typeof outcome === 'object') return { outcome: 'not_due', dueInMs: outcome.dueInMs };
      return outcome === 'not_due' ? { outcome, dueInMs: 60_000 } : { outcome };
    });
  }

  /** Counted outcomes of the timeout messages metric, by label. */
  async function counted(): Promise<Record<string, number>> {
    const { values } = await metrics.timeoutMessages.get();
    return Object.fromEntries(values.map(({ labels, value }) => [labels.outcome, value]));
  }

  const expiredOrderNos = () => lifecycle.expire.mock.calls.map(([orderNo]) => orderNo);

  it('should expire every order of a message, send the early ones round again in one message, and count each order once at the ack', async () => {
    const [cancelled, paid, early, gone, alsoEarly] = Array.from({ length: 5 }, anOrder);
    outcomes(
      new Map<string, ExpireOutcome[]>([
        [cancelled.orderNo, ['cancelled']],
        [paid.orderNo, ['paid']],
        [early.orderNo, ['not_due']],
        [gone.orderNo, ['not_found']],
        [alsoEarly.orderNo, ['not_due']],
      ]),
    );
    const message = delivery(encodeTimeoutMessage([cancelled, paid, early, gone, alsoEarly]));

    broker.deliver(message);

    await vi.waitFor(() => expect(broker.settled()).toEqual([[tag(message), 'ack']]));
    expect(lifecycle.expire).toHaveBeenCalledTimes(5);
    expect(publisher.publishTimeouts).toHaveBeenCalledExactlyOnceWith(
      [early, alsoEarly],
      undefined,
    );
    expect(await counted()).toEqual({ cancelled: 1, paid: 1, not_due: 2, not_found: 1 });
  });

  it('should retry only the orders not settled yet, and ack once all of them are', async () => {
    const [a, b, c] = Array.from({ length: 3 }, anOrder);
    outcomes(
      new Map<string, (ExpireOutcome | Error)[]>([
        [a.orderNo, ['cancelled']],
        [b.orderNo, [new Error('redis down'), new Error('redis down'), 'cancelled']],
        [c.orderNo, ['already_cancelled']],
      ]),
    );
    const message = delivery(encodeTimeoutMessage([a, b, c]));

    broker.deliver(message);

    await vi.waitFor(() => expect(broker.settled()).toEqual([[tag(message), 'ack']]), {
      timeout: 2_000,
    });
    expect(expiredOrderNos().filter((orderNo) => orderNo === a.orderNo)).toHaveLength(1);
    expect(expiredOrderNos().filter((orderNo) => orderNo === b.orderNo)).toHaveLength(3);
    expect(expiredOrderNos().filter((orderNo) => orderNo === c.orderNo)).toHaveLength(1);
    expect(await counted()).toEqual({ cancelled: 2, already_cancelled: 1 });
  });

  it('should expire the early orders again when their new message was not confirmed', async () => {
    const [due, early] = [anOrder(), anOrder()];
    outcomes(
      new Map<string, ExpireOutcome[]>([
        [due.orderNo, ['cancelled']],
        [early.orderNo, ['not_due']],
      ]),
    );
    publisher.publishTimeouts.mockResolvedValueOnce(false);
    const message = delivery(encodeTimeoutMessage([due, early]));

    broker.deliver(message);

    await vi.waitFor(() => expect(broker.settled()).toEqual([[tag(message), 'ack']]), {
      timeout: 2_000,
    });
    expect(expiredOrderNos()).toEqual([due.orderNo, early.orderNo, early.orderNo]);
    expect(publisher.publishTimeouts.mock.calls).toEqual([
      [[early], undefined],
      [[early], undefined],
    ]);
    expect(await counted()).toEqual({ cancelled: 1, not_due: 1 });
  });

  it('should hold an order due within seconds and expire it once due, not send it round the delay queue again', async () => {
    const [due, soon] = [anOrder(), anOrder()];
    outcomes(
      new Map<string, (ExpireOutcome | { dueInMs: number })[]>([
        [due.orderNo, ['cancelled']],
        [soon.orderNo, [{ dueInMs: 300 }, 'cancelled']],
      ]),
    );
    const message = delivery(encodeTimeoutMessage([due, soon]));
    const deliveredAt = Date.now();

    broker.deliver(message);

    await vi.waitFor(() => expect(broker.settled()).toEqual([[tag(message), 'ack']]), {
      timeout: 2_000,
    });
    expect(Date.now() - deliveredAt).toBeGreaterThanOrEqual(295);
    expect(expiredOrderNos()).toEqual([due.orderNo, soon.orderNo, soon.orderNo]);
    expect(publisher.publishTimeouts).not.toHaveBeenCalled();
    expect(await counted()).toEqual({ cancelled: 2 });
  });

  it('should expire a version-1 message, one order, as a rolling upgrade finds it', async () => {
    const order = anOrder();
    outcomes(new Map<string, ExpireOutcome[]>([[order.orderNo, ['cancelled']]]));
    const message = delivery(JSON.stringify({ v: 1, ...order }));

    broker.deliver(message);

    await vi.waitFor(() => expect(broker.settled()).toEqual([[tag(message), 'ack']]));
    expect(expiredOrderNos()).toEqual([order.orderNo]);
    expect(await counted()).toEqual({ cancelled: 1 });
  });

  it('should dead-letter a malformed message without expiring any of its orders', async () => {
    const message = delivery(JSON.stringify({ v: 2, orders: [anOrder(), { orderNo: 'bad' }] }));

    broker.deliver(message);

    await vi.waitFor(() => expect(broker.settled()).toEqual([[tag(message), 'reject']]));
    expect(lifecycle.expire).not.toHaveBeenCalled();
    expect(await counted()).toEqual({ dead_lettered: 1 });
  });

  it('should expire a few orders of a message at a time, not all at once', async () => {
    const orders = Array.from({ length: 20 }, anOrder);
    let running = 0;
    let most = 0;
    lifecycle.expire.mockImplementation(async () => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      return { outcome: 'cancelled' };
    });

    const message = delivery(encodeTimeoutMessage(orders));

    broker.deliver(message);

    await vi.waitFor(() => expect(broker.settled()).toEqual([[tag(message), 'ack']]));
    expect(lifecycle.expire).toHaveBeenCalledTimes(20);
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(4);
  });

  it('should leave a message unacked at shutdown while an order in it is unsettled, counting nothing', async () => {
    const [a, b] = [anOrder(), anOrder()];
    outcomes(
      new Map<string, (ExpireOutcome | Error)[]>([
        [a.orderNo, ['cancelled']],
        [b.orderNo, [new Error('mysql down')]],
      ]),
    );

    broker.deliver(delivery(encodeTimeoutMessage([a, b])));
    await vi.waitFor(() => expect(lifecycle.expire).toHaveBeenCalledTimes(2));
    await consumer.onModuleDestroy();

    expect(broker.settled()).toEqual([]);
    expect(await counted()).toEqual({});
  });
});
