import type { Channel } from 'amqplib';

/** Every exchange and queue name, derived from one prefix so test runs can use their own. */
export function topologyNames(prefix: string) {
  return {
    ordersExchange: `${prefix}.orders`,
    ordersQueue: `${prefix}.orders`,
    ordersRoutingKey: 'order.created',
    deadLetterExchange: `${prefix}.dlx`,
    deadLetterQueue: `${prefix}.orders.dead`,
  };
}

export type TopologyNames = ReturnType<typeof topologyNames>;

/**
 * Idempotent declaration, run on every (re)connect by each channel's setup.
 *
 * The orders queue is a quorum queue: replicated where the broker is a cluster, and it stamps
 * `x-delivery-count` on redeliveries, which the consumer uses to dead-letter a message that keeps
 * failing instead of looping. Queue arguments cannot change in place, so none here depends on
 * configuration that might change between deploys.
 */
export async function assertTopology(channel: Channel, names: TopologyNames): Promise<void> {
  await channel.assertExchange(names.deadLetterExchange, 'direct', { durable: true });
  await channel.assertQueue(names.deadLetterQueue, {
    durable: true,
    arguments: { 'x-queue-type': 'quorum' },
  });
  await channel.bindQueue(names.deadLetterQueue, names.deadLetterExchange, names.ordersRoutingKey);

  await channel.assertExchange(names.ordersExchange, 'direct', { durable: true });
  await channel.assertQueue(names.ordersQueue, {
    durable: true,
    arguments: {
      'x-queue-type': 'quorum',
      'x-dead-letter-exchange': names.deadLetterExchange,
      'x-dead-letter-routing-key': names.ordersRoutingKey,
    },
  });
  await channel.bindQueue(names.ordersQueue, names.ordersExchange, names.ordersRoutingKey);
}
