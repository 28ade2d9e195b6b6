import type { Channel } from 'amqplib';

/** Every exchange and queue name, derived from one prefix so test runs can use their own. */
export type QueueType = 'quorum' | 'classic';

export function topologyNames(
  prefix: string,
  options: {
    paymentTimeoutMs: number;
    maxQueueLength: number;
    queueType: QueueType;
    quorumSize?: number | null;
  },
) {
  const { paymentTimeoutMs, maxQueueLength, queueType, quorumSize = null } = options;
  return {
    ordersExchange: `${prefix}.orders`,
    ordersQueue: `${prefix}.orders`,
    ordersRoutingKey: 'order.created',
    deadLetterExchange: `${prefix}.dlx`,
    deadLetterQueue: `${prefix}.orders.dead`,
    /**
     * Holds each new order's timeout message for the payment timeout, then dead-letters it to
     * the timeout exchange. The timeout is in the name because a queue's arguments cannot
     * change in place: a new timeout declares a new queue, and the old one drains by itself
     * (delete it once empty).
     */
    delayQueue: `${prefix}.orders.delay.${paymentTimeoutMs}ms`,
    paymentTimeoutMs,
    /**
     * Length limit of the orders and timeout queues: a flood beyond it is refused at publish
     * (x-overflow reject-publish → nack → the purchase answers 503 with its stock back)
     * instead of filling the broker's memory. Part of the queues' identity: changing it means
     * draining and deleting the queues (or setting a policy instead).
     */
    maxQueueLength,
    timeoutExchange: `${prefix}.timeout`,
    timeoutQueue: `${prefix}.orders.timeout`,
    timeoutRoutingKey: 'order.timeout',
    /**
     * Quorum unless the broker cannot have them (RabbitMQ before 3.10 for the TTL and
     * at-least-once dead-lettering used here). Also part of the queues' identity.
     */
    queueType,
    /**
     * Replicas of each quorum queue; null: the broker's `quorum_cluster_size` (3, or every node
     * if fewer). Part of the queues' identity too: the broker refuses a declaration that differs.
     */
    quorumSize,
  };
}

export type TopologyNames = ReturnType<typeof topologyNames>;

/**
 * Idempotent declaration, run on every (re)connect by each channel's setup.
 *
 * Quorum queues (RABBITMQ_QUEUE_TYPE, the default): replicated where the broker is a cluster;
 * they stamp `x-delivery-count` on redeliveries (the order consumer dead-letters a message that keeps failing instead of looping);
 * and they dead-letter at least once, so an expiring timeout message cannot be lost on the way.
 */
export async function assertTopology(channel: Channel, names: TopologyNames): Promise<void> {
  const typeArg =
    names.queueType === 'quorum' && names.quorumSize !== null
      ? { 'x-queue-type': names.queueType, 'x-quorum-initial-group-size': names.quorumSize }
      : { 'x-queue-type': names.queueType };
  // Quorum queues can dead-letter at least once (a poison or expired message is never dropped
  // on its way to the next queue); that needs reject-publish overflow. Classic ones cannot.
  const deadLetterSafety =
    names.queueType === 'quorum'
      ? { 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' }
      : { 'x-overflow': 'reject-publish' };
  await channel.assertExchange(names.deadLetterExchange, 'direct', { durable: true });
  await channel.assertQueue(names.deadLetterQueue, { durable: true, arguments: typeArg });
  await channel.bindQueue(names.deadLetterQueue, names.deadLetterExchange, names.ordersRoutingKey);
  await channel.bindQueue(names.deadLetterQueue, names.deadLetterExchange, names.timeoutRoutingKey);

  await channel.assertExchange(names.ordersExchange, 'direct', { durable: true });
  await channel.assertQueue(names.ordersQueue, {
    durable: true,
    arguments: {
      ...typeArg,
      'x-dead-letter-exchange': names.deadLetterExchange,
      'x-dead-letter-routing-key': names.ordersRoutingKey,
      'x-max-length': names.maxQueueLength,
      ...deadLetterSafety,
    },
  });
  await channel.bindQueue(names.ordersQueue, names.ordersExchange, names.ordersRoutingKey);

  await channel.assertExchange(names.timeoutExchange, 'direct', { durable: true });
  await channel.assertQueue(names.timeoutQueue, {
    durable: true,
    arguments: {
      ...typeArg,
      'x-dead-letter-exchange': names.deadLetterExchange,
      'x-dead-letter-routing-key': names.timeoutRoutingKey,
      'x-max-length': names.maxQueueLength,
      ...deadLetterSafety,
    },
  });
  await channel.bindQueue(names.timeoutQueue, names.timeoutExchange, names.timeoutRoutingKey);

  // Queue-level TTL, not per-message `expiration`: per-message TTLs only expire at the head of
  // the queue, so one long one would hold back every shorter one behind it.
  await channel.assertQueue(names.delayQueue, {
    durable: true,
    arguments: {
      ...typeArg,
      'x-message-ttl': names.paymentTimeoutMs,
      'x-dead-letter-exchange': names.timeoutExchange,
      'x-dead-letter-routing-key': names.timeoutRoutingKey,
      ...deadLetterSafety,
    },
  });
}
