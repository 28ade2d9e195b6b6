import type { CreateChannelOpts } from 'amqp-connection-manager';
import type { Channel, ConsumeMessage } from 'amqplib';
import { vi } from 'vitest';
import type {
  ConnectionRole,
  RabbitConnection,
} from '../../src/infra/rabbitmq/rabbitmq.connection.js';

/**
 * The broker as a consumer's unit spec sees it: the RabbitConnection to build the consumer
 * with, and the one channel it consumes on. `connect` runs the channel's setup (as the
 * connection manager does on each connect); `settled` says what the broker was told about each
 * delivery tag.
 */
export function fakeBroker(names: Record<string, string>) {
  let deliver: (message: ConsumeMessage | null) => void = () => undefined;
  const channel = {
    assertExchange: vi.fn(async () => ({})),
    assertQueue: vi.fn(async () => ({})),
    bindQueue: vi.fn(async () => ({})),
    prefetch: vi.fn(async () => ({})),
    consume: vi.fn(async (_queue: string, onMessage: typeof deliver) => {
      deliver = onMessage;
      return { consumerTag: 'test' };
    }),
    ack: vi.fn<(message: ConsumeMessage) => void>(),
    nack: vi.fn<(message: ConsumeMessage, allUpTo?: boolean, requeue?: boolean) => void>(),
  };
  let setup: CreateChannelOpts['setup'];
  const rabbit = {
    names,
    createChannel: (role: ConnectionRole, options: CreateChannelOpts) => {
      // Consumers stay off the publishers' connection (see RabbitConnection).
      if (role !== 'consume') throw new Error(`a consumer asked for a ${role} channel`);
      setup = options.setup;
      // checkQueue: a round trip on the channel (the order barrier's fence).
      return { close: vi.fn(async () => undefined), checkQueue: vi.fn(async () => ({})) };
    },
  };
  /** How each delivery tag was settled, in order: a tag settled twice shows up twice. */
  const settled = () => [
    ...channel.ack.mock.calls.map(([m]) => [m.fields.deliveryTag, 'ack']),
    ...channel.nack.mock.calls.map(([m, , requeue]) => [
      m.fields.deliveryTag,
      requeue ? 'requeue' : 'reject',
    ]),
  ];
  return {
    rabbit: rabbit as unknown as RabbitConnection,
    connect: () => (setup as (channel: Channel) => Promise<void>)(channel as unknown as Channel),
    deliver: (message: ConsumeMessage) => deliver(message),
    settled,
  };
}
