import { describe, expect, it, vi } from 'vitest';
import { Delivery, type ReceivedMessage, type Settlement } from './delivery.js';

const message: ReceivedMessage = {
  content: Buffer.from('{}'),
  messageId: 'request-1',
  previousDeliveries: 0,
};

describe('Delivery', () => {
  it('should reach the broker once however often it is settled', () => {
    const tellBroker = vi.fn<(how: Settlement) => void>();
    const delivery = new Delivery(message, tellBroker);

    expect(delivery.settle('ack')).toBe(true);
    expect(delivery.settle('ack')).toBe(false);
    expect(delivery.settle('reject')).toBe(false);

    expect(tellBroker).toHaveBeenCalledExactlyOnceWith('ack');
  });

  it('should count as settled when its channel closed meanwhile (the broker requeued it)', () => {
    const tellBroker = vi.fn<(how: Settlement) => void>(() => {
      throw new Error('Channel closed');
    });
    const delivery = new Delivery(message, tellBroker);

    expect(delivery.settle('ack')).toBe(true);
    expect(delivery.settle('ack')).toBe(false);
    expect(tellBroker).toHaveBeenCalledTimes(1);
  });

  it('should tell its listeners once, before the broker, how it was settled', () => {
    const order: string[] = [];
    const delivery = new Delivery(message, (how) => order.push(`broker ${how}`));
    delivery.whenSettled((how) => order.push(`listener ${how}`));

    delivery.settle('requeue');
    delivery.settle('ack');

    expect(order).toEqual(['listener requeue', 'broker requeue']);
  });
});
