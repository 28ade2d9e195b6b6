import { Logger } from '@nestjs/common';
import type { Channel, ConsumeMessage } from 'amqplib';

const logger = new Logger('Delivery');

/**
 * How a delivery is settled: acked, rejected without requeue (dead-lettered), or given back to
 * the queue (requeue: not final, the message is delivered again, perhaps behind a barrier).
 */
export type Settlement = 'ack' | 'reject' | 'requeue';

/**
 * One message as the broker handed it to a consumer, settled at most once. RabbitMQ answers a
 * delivery tag acked twice by closing the channel (406), which requeues every unacked message
 * on it and burns a delivery of each: so a second settle does nothing, whoever asks for it.
 */
export class Delivery {
  private settled = false;

  constructor(
    private readonly channel: Channel,
    readonly message: ConsumeMessage,
    /** Told once, when it is settled, and how (an order barrier waits for deliveries to be). */
    private readonly onSettled?: (how: Settlement) => void,
  ) {}

  /** How many times the broker delivered this message before (quorum queues count). */
  get previousDeliveries(): number {
    return Number(this.message.properties.headers?.['x-delivery-count'] ?? 0);
  }

  /** Acks, rejects or requeues it (see Settlement); false if it was settled already. */
  settle(how: Settlement): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.onSettled?.(how);
    try {
      if (how === 'ack') this.channel.ack(this.message);
      else this.channel.nack(this.message, false, how === 'requeue');
    } catch (error) {
      // The channel closed meanwhile and took its deliveries back to the queue.
      logger.warn(
        `could not ${how}, it will be redelivered: messageId=${String(this.message.properties.messageId)} ${(error as Error).message}`,
      );
    }
    return true;
  }
}
