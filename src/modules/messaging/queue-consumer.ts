import type { ChannelWrapper } from 'amqp-connection-manager';
import type { Channel, ConsumeMessage } from 'amqplib';
import type { RabbitMqConnection } from '../../infra/rabbitmq/rabbitmq.connection.js';
import { assertTopology } from '../../infra/rabbitmq/topology.js';
import { Delivery } from './delivery.js';

/** A consumer's channel while it is open. A new channel (after a reconnect) is a new one. */
export interface ConsumerChannel {
  /** A round trip on this channel: whatever the broker sent on it before is in. Fails once it closed. */
  roundTrip(): Promise<void>;
}

export interface QueueConsumerOptions {
  /** The channel's name, in the connection manager's logs. */
  name: string;
  queue: string;
  /** Messages in hand, unsettled, at most. */
  prefetch: number;
  /** A channel is open (again), before its first delivery. */
  opened?: (channel: ConsumerChannel) => Promise<void>;
  /** A message delivered on `channel`, to be settled once through its Delivery (manual acks). */
  received: (delivery: Delivery, channel: ConsumerChannel) => void;
}

/**
 * The one place a consumer meets the broker (amqplib stays here and in the publisher): a channel
 * on the consumers' connection, reopened by the connection manager after each reconnect, with
 * the topology asserted, the prefetch set and manual acks. Consumers see Deliveries and the
 * channel's round trip, never amqplib's types.
 */
export class QueueConsumer {
  private readonly channel: ChannelWrapper;

  constructor(rabbit: RabbitMqConnection, options: QueueConsumerOptions) {
    this.channel = rabbit.createChannel('consume', {
      name: options.name,
      setup: async (channel: Channel) => {
        await assertTopology(channel, rabbit.names);
        await channel.prefetch(options.prefetch);
        const open: ConsumerChannel = {
          roundTrip: async () => void (await channel.checkQueue(options.queue)),
        };
        await options.opened?.(open);
        await channel.consume(
          options.queue,
          (message) => {
            // null: the broker cancelled the consumer; the connection manager sets it up again.
            if (message) options.received(delivered(channel, message), open);
          },
          { noAck: false },
        );
      },
    });
  }

  /** Closes the channel: what it holds unsettled goes back to the queue. */
  close(): Promise<void> {
    return this.channel.close();
  }
}

function delivered(channel: Channel, message: ConsumeMessage): Delivery {
  const { messageId, type, headers } = message.properties as {
    messageId?: unknown;
    type?: unknown;
    headers?: Record<string, unknown>;
  };
  return new Delivery(
    {
      content: message.content,
      type: typeof type === 'string' ? type : undefined,
      messageId: String(messageId),
      previousDeliveries: Number(headers?.['x-delivery-count'] ?? 0),
      traceparent: typeof headers?.traceparent === 'string' ? headers.traceparent : undefined,
    },
    (how) => {
      if (how === 'ack') channel.ack(message);
      else channel.nack(message, false, how === 'requeue');
    },
  );
}
