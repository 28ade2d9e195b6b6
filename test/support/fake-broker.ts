import type { CreateChannelOpts } from 'amqp-connection-manager';
import type { Channel, ConsumeMessage } from 'amqplib';
import { vi } from 'vitest';
import type {
  ConnectionRole,
  RabbitMqConnection,
} from '../../src/infra/rabbitmq/rabbitmq.connection.js';

/** One channel as the broker opened it to the consumer; its acks throw once it is closed. */
function fakeChannel() {
  let closed = false;
  const whileOpen = () => {
    if (closed) throw new Error('Channel closed');
  };
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
    // A round trip on the channel (the order barrier's fence).
    checkQueue: vi.fn(async () => {
      whileOpen();
      return {};
    }),
    ack: vi.fn<(message: ConsumeMessage) => void>(whileOpen),
    nack: vi.fn<(message: ConsumeMessage, allUpTo?: boolean, requeue?: boolean) => void>(whileOpen),
  };
  return {
    channel,
    deliver: (message: ConsumeMessage) => deliver(message),
    close: () => (closed = true),
  };
}

/**
 * The broker as a consumer's unit spec sees it: the RabbitMqConnection to build the consumer
 * with, and the channel it consumes on. `connect` opens a channel and runs its setup (as the
 * connection manager does on each connect), closing the one before: a settle on that one then
 * throws, as amqplib's does. `deliver` hands a message out on the newest channel; `settled`
 * says what the broker was told about each delivery tag, on every channel (a settle that threw
 * reached no broker and is not listed).
 */
export function fakeBroker(names: Record<string, string>) {
  const channels: ReturnType<typeof fakeChannel>[] = [];
  let setup: CreateChannelOpts['setup'];
  const rabbit = {
    names,
    createChannel: (role: ConnectionRole, options: CreateChannelOpts) => {
      // Consumers stay off the publishers' connection (see RabbitMqConnection).
      if (role !== 'consume') throw new Error(`a consumer asked for a ${role} channel`);
      setup = options.setup;
      return { close: vi.fn(async () => undefined) };
    },
  };
  /** How each delivery tag was settled, in order: a tag settled twice shows up twice. */
  const settled = () =>
    channels.flatMap(({ channel }) => [
      ...channel.ack.mock.calls
        .filter((_, index) => channel.ack.mock.results[index].type === 'return')
        .map(([m]) => [m.fields.deliveryTag, 'ack']),
      ...channel.nack.mock.calls
        .filter((_, index) => channel.nack.mock.results[index].type === 'return')
        .map(([m, , requeue]) => [m.fields.deliveryTag, requeue ? 'requeue' : 'reject']),
    ]);
  return {
    rabbit: rabbit as unknown as RabbitMqConnection,
    connect: () => {
      channels.at(-1)?.close();
      const opened = fakeChannel();
      channels.push(opened);
      return (setup as (channel: Channel) => Promise<void>)(opened.channel as unknown as Channel);
    },
    deliver: (message: ConsumeMessage) => channels.at(-1)!.deliver(message),
    settled,
  };
}
