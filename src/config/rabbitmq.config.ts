import { configNamespace } from './config-namespace.js';
import { ConfigValidationError } from './config-validation.error.js';
import {
  readBool,
  readInt,
  readOptionalInt,
  readString,
  readUrls,
  type Env,
} from './env-readers.js';

export interface RabbitMqConfig {
  /**
   * The broker's nodes (RABBITMQ_URL, comma-separated): each connection goes to one, and to the
   * next in the list when it is lost or cannot connect.
   */
  urls: string[];
  /** Prefix of every exchange and queue name. */
  prefix: string;
  queueType: 'quorum' | 'classic';
  /**
   * Replicas of each quorum queue (`x-quorum-initial-group-size`); null leaves it to the broker
   * (`quorum_cluster_size`: every node, up to 3).
   */
  quorumSize: number | null;
  queueMaxLength: number;
  /** How long a publish waits for the broker's confirm. */
  publishConfirmTimeoutMs: number;
  consumer: ConsumerConfig;
}

/** The order and timeout consumers of this instance. */
export interface ConsumerConfig {
  enabled: boolean;
  prefetch: number;
  batchSize: number;
  batchWaitMs: number;
  /** Deliveries before a failing message is dead-lettered. */
  maxDeliveries: number;
}

function readPrefix(env: Env): string {
  const prefix = readString(env, 'RABBITMQ_PREFIX', 'seckill');
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(prefix)) {
    throw new ConfigValidationError(
      'RABBITMQ_PREFIX may hold only letters, digits, "_", "." and "-"',
    );
  }
  return prefix;
}

function readQueueType(env: Env): RabbitMqConfig['queueType'] {
  const type = readString(env, 'RABBITMQ_QUEUE_TYPE', 'quorum');
  if (type !== 'quorum' && type !== 'classic') {
    throw new ConfigValidationError('RABBITMQ_QUEUE_TYPE must be quorum or classic');
  }
  return type;
}

export const rabbitmqConfig = configNamespace('rabbitmq', (env): RabbitMqConfig => ({
  urls: readUrls(env, 'RABBITMQ_URL', 'amqp://guest:guest@127.0.0.1:5672/', ['amqp:', 'amqps:']),
  prefix: readPrefix(env),
  queueType: readQueueType(env),
  quorumSize: readOptionalInt(env, 'RABBITMQ_QUORUM_SIZE', 1, 99),
  queueMaxLength: readInt(env, 'RABBITMQ_QUEUE_MAX_LENGTH', 1_000_000, 1, 100_000_000),
  publishConfirmTimeoutMs: readInt(env, 'PUBLISH_CONFIRM_TIMEOUT_MS', 3_000, 50, 60_000),
  consumer: {
    enabled: readBool(env, 'CONSUMER_ENABLED', true),
    prefetch: readInt(env, 'CONSUMER_PREFETCH', 500, 1, 10_000),
    batchSize: readInt(env, 'CONSUMER_BATCH_SIZE', 200, 1, 5_000),
    // Only while the consumer is idle (see Batcher): in a crowd, batches take what gathered
    // during the previous one and nothing waits on this.
    batchWaitMs: readInt(env, 'CONSUMER_BATCH_WAIT_MS', 50, 0, 10_000),
    maxDeliveries: readInt(env, 'CONSUMER_MAX_DELIVERIES', 5, 1, 1_000),
  },
}));
