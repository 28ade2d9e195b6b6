import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { RabbitMqConfig } from '../../config/rabbitmq.config.js';
import type { RabbitMqConnection } from '../../infra/rabbitmq/rabbitmq.connection.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OrderPublisher } from './order.publisher.js';
import {
  MAX_TIMEOUTS_PER_MESSAGE,
  parseTimeoutMessage,
  type OrderTimeout,
} from './timeout-message.js';

let nextOrder = 1;
const timeouts = (n: number): OrderTimeout[] =>
  Array.from({ length: n }, () => ({
    orderNo: `SK${String(nextOrder++).padStart(10, '0')}`,
    goodsId: 7,
  }));

describe('OrderPublisher.publishTimeouts', () => {
  const channel = {
    sendToQueue: vi.fn<(queue: string, content: Buffer, options: object) => Promise<boolean>>(),
  };
  let publisher: OrderPublisher;

  beforeEach(() => {
    vi.resetAllMocks();
    channel.sendToQueue.mockResolvedValue(true);
    const rabbit = { names: { delayQueue: 'delay' }, createChannel: () => channel };
    publisher = new OrderPublisher(rabbit as unknown as RabbitMqConnection, new MetricsService(), {
      publishConfirmTimeoutMs: 1_000,
    } as RabbitMqConfig);
    publisher.onModuleInit();
  });

  /** The orders of each message sent to the delay queue, in order. */
  const sent = () =>
    channel.sendToQueue.mock.calls.map(([queue, content]) => {
      expect(queue).toBe('delay');
      return parseTimeoutMessage(content);
    });

  it('should start the payment clocks of a batch with one message, one confirm', async () => {
    const orders = timeouts(3);

    expect(await publisher.publishTimeouts(orders)).toBe(true);

    expect(sent()).toEqual([orders]);
    expect(channel.sendToQueue.mock.calls[0][2]).toMatchObject({
      persistent: true,
      messageId: orders[0].orderNo,
    });
  });

  it('should split a batch larger than a message may carry', async () => {
    const orders = timeouts(2 * MAX_TIMEOUTS_PER_MESSAGE + 1);

    expect(await publisher.publishTimeouts(orders)).toBe(true);

    expect(sent()).toEqual([
      orders.slice(0, MAX_TIMEOUTS_PER_MESSAGE),
      orders.slice(MAX_TIMEOUTS_PER_MESSAGE, 2 * MAX_TIMEOUTS_PER_MESSAGE),
      orders.slice(2 * MAX_TIMEOUTS_PER_MESSAGE),
    ]);
  });

  it('should answer false when a message was not confirmed', async () => {
    channel.sendToQueue.mockResolvedValueOnce(true).mockRejectedValueOnce(new Error('timeout'));

    expect(await publisher.publishTimeouts(timeouts(MAX_TIMEOUTS_PER_MESSAGE + 1))).toBe(false);
  });
});
