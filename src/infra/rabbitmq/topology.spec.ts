import type { Channel } from 'amqplib';
import { describe, expect, it } from 'vitest';
import { assertTopology, topologyNames } from './topology.js';

/** The arguments each queue was declared with, by a channel that only records. */
async function declaredQueues(quorumSize: number | null, queueType: 'quorum' | 'classic') {
  const queues = new Map<string, Record<string, unknown>>();
  const channel = {
    assertExchange: async () => ({}),
    bindQueue: async () => ({}),
    assertQueue: async (name: string, options: { arguments: Record<string, unknown> }) => {
      queues.set(name, options.arguments);
      return {};
    },
  } as unknown as Channel;
  const names = topologyNames('t', {
    paymentTimeoutMs: 1_000,
    maxQueueLength: 10,
    queueType,
    quorumSize,
  });
  await assertTopology(channel, names);
  return queues;
}

describe('the broker topology', () => {
  it('should declare every quorum queue with RABBITMQ_QUORUM_SIZE replicas when it is set', async () => {
    const queues = await declaredQueues(3, 'quorum');
    expect(queues.size).toBe(4);
    for (const args of queues.values()) {
      expect(args).toMatchObject({ 'x-queue-type': 'quorum', 'x-quorum-initial-group-size': 3 });
    }
  });

  it('should leave the replicas to the broker when it is unset, and to classic queues none', async () => {
    for (const args of (await declaredQueues(null, 'quorum')).values()) {
      expect(args).not.toHaveProperty('x-quorum-initial-group-size');
    }
    for (const args of (await declaredQueues(3, 'classic')).values()) {
      expect(args).not.toHaveProperty('x-quorum-initial-group-size');
    }
  });
});
