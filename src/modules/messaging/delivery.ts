import { Logger } from '@nestjs/common';

const logger = new Logger('Delivery');

/**
 * How a delivery is settled: acked, rejected without requeue (dead-lettered), or given back to
 * the queue (requeue: not final, the message is delivered again, perhaps behind a barrier).
 */
export type Settlement = 'ack' | 'reject' | 'requeue';

/** What a consumer reads of a message the broker delivered. */
export interface ReceivedMessage {
  readonly content: Buffer;
  /** The message's `type` property (the order queue carries order barriers among the orders). */
  readonly type?: string;
  readonly messageId: string;
  /** How many times the broker delivered this message before (quorum queues count). */
  readonly previousDeliveries: number;
  /** The sender's trace context (W3C `traceparent` header), when it was traced. */
  readonly traceparent?: string;
}

/**
 * One message as the broker handed it to a consumer (QueueConsumer), settled at most once.
 * RabbitMQ answers a delivery tag acked twice by closing the channel (406), which requeues every
 * unacked message on it and burns a delivery of each: so a second settle does nothing, whoever
 * asks for it.
 */
export class Delivery {
  private settled = false;
  private readonly listeners: ((how: Settlement) => void)[] = [];

  constructor(
    readonly message: ReceivedMessage,
    /** Tells the broker, on the channel the message came on; throws once that channel closed. */
    private readonly tellBroker: (how: Settlement) => void,
  ) {}

  /** `listener` is told once, when it is settled, and how (an order barrier waits for deliveries to be). */
  whenSettled(listener: (how: Settlement) => void): void {
    this.listeners.push(listener);
  }

  /** Acks, rejects or requeues it (see Settlement); false if it was settled already. */
  settle(how: Settlement): boolean {
    if (this.settled) return false;
    this.settled = true;
    for (const listener of this.listeners) listener(how);
    try {
      this.tellBroker(how);
    } catch (error) {
      // The channel closed meanwhile and took its deliveries back to the queue.
      logger.warn(
        `could not ${how}, it will be redelivered: messageId=${this.message.messageId} ${(error as Error).message}`,
      );
    }
    return true;
  }
}
