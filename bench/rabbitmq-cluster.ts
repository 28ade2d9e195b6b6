// The broker's side of a purchase on a three-node RabbitMQ cluster against one node: persistent
// messages of an order's size published on a confirm channel to a quorum queue (three replicas on
// the cluster, one on the machine's broker), each confirmed once the replicas have it, while a
// consumer acks them as the order consumer does. Alternating within each round, read as a ratio
// (docs/scaling.md, "On a RabbitMQ cluster").
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import amqp from 'amqplib';

import { onCleanup } from '../scripts/lib/cleanup.js';
import { integerFlag, readFlags } from '../scripts/lib/args.js';
import { runScript } from '../scripts/lib/main.js';
import { clusterUrls, startCluster, stopCluster } from '../scripts/lib/rabbitmq-cluster.js';

const USAGE = `usage: npm run bench:rabbitmq -- [--seconds <s>] [--in-flight <n>] [--rounds <n>]

Starts a private three-node RabbitMQ cluster and measures, against the machine's own broker
(RABBITMQ_URL, default amqp://guest:guest@127.0.0.1:5672/), how many order-sized persistent
messages per second a confirm channel gets confirmed by a quorum queue (3 replicas on the
cluster, 1 on the single node) while a consumer acks them.

  --seconds <s>     seconds per measurement (default 5)
  --in-flight <n>   publishes awaiting their confirm at once (default 200)
  --rounds <n>      alternating single-node / cluster measurements of each (default 3)`;

interface Options {
  seconds: number;
  inFlight: number;
  rounds: number;
}

function parse(argv: string[]): Options | 'help' {
  const values = readFlags(argv, {
    seconds: { type: 'string', default: '5' },
    'in-flight': { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  return {
    seconds: integerFlag('seconds', values.seconds, 1, 600),
    inFlight: integerFlag('in-flight', values['in-flight'], 1, 10_000),
    rounds: integerFlag('rounds', values.rounds, 1, 20),
  };
}

/** About an order message's size (src/modules/messaging/order-message.ts). */
const MESSAGE = Buffer.from(
  JSON.stringify({
    requestId: randomUUID(),
    orderNo: `SK${Date.now()}ABCDEF0123456789`,
    userId: 1_234_567,
    goodsId: 42,
    quantity: 1,
    acceptedAt: Date.now(),
  }),
);

interface Measurement {
  confirmedPerSecond: number;
  consumedPerSecond: number;
}

/** One measurement on the broker at `url` (the first node of a list): a fresh queue, dropped after. */
async function measure(url: string, options: Options): Promise<Measurement> {
  const connection = await amqp.connect(url, { noDelay: true });
  try {
    const queue = `bench.${randomUUID()}`;
    const publisher = await connection.createConfirmChannel();
    const consumer = await connection.createChannel();
    await publisher.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    await consumer.prefetch(500);
    let consumed = 0;
    await consumer.consume(queue, (message) => {
      if (message === null) return;
      consumer.ack(message);
      consumed++;
    });
    let confirmed = 0;
    let stopping = false;
    const startedAt = Date.now();
    const endsAt = startedAt + options.seconds * 1_000;
    const lane = async () => {
      while (!stopping && Date.now() < endsAt) {
        await new Promise<void>((resolve, reject) =>
          publisher.sendToQueue(queue, MESSAGE, { persistent: true }, (error: unknown) =>
            error
              ? reject(error instanceof Error ? error : new Error('publish nacked'))
              : resolve(),
          ),
        );
        confirmed++;
      }
    };
    await Promise.all(Array.from({ length: options.inFlight }, lane));
    stopping = true;
    const seconds = (Date.now() - startedAt) / 1_000;
    const result = {
      confirmedPerSecond: confirmed / seconds,
      consumedPerSecond: consumed / seconds,
    };
    await publisher.deleteQueue(queue);
    return result;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];

async function run(options: Options): Promise<boolean> {
  const single = process.env.RABBITMQ_URL?.split(',')[0] ?? 'amqp://guest:guest@127.0.0.1:5672/';
  console.error('starting a three-node RabbitMQ cluster…');
  const cluster = await startCluster(mkdtempSync(join(tmpdir(), 'seckill-bench-rabbitmq-')), 3);
  onCleanup(() => stopCluster(cluster));
  const onCluster = clusterUrls(cluster)[0];
  const results = { single: [] as Measurement[], cluster: [] as Measurement[] };
  for (let round = 1; round <= options.rounds; round++) {
    // Alternating which goes first, so that neither always meets a warmer machine.
    const order =
      round % 2 === 1 ? (['single', 'cluster'] as const) : (['cluster', 'single'] as const);
    for (const side of order) {
      const result = await measure(side === 'single' ? single : onCluster, options);
      results[side].push(result);
      console.error(
        `round ${round} ${side}: ${result.confirmedPerSecond.toFixed(0)} confirmed/s, ${result.consumedPerSecond.toFixed(0)} consumed/s`,
      );
    }
  }
  const confirmed = (side: 'single' | 'cluster') =>
    median(results[side].map((result) => result.confirmedPerSecond));
  const ratios = results.cluster.map(
    (result, i) => result.confirmedPerSecond / results.single[i].confirmedPerSecond,
  );
  console.log(
    `quorum queue, ${options.inFlight} publishes in flight, ${options.seconds} s × ${options.rounds} rounds: ` +
      `single node ${confirmed('single').toFixed(0)} confirmed/s, three-node cluster ${confirmed('cluster').toFixed(0)} confirmed/s; ` +
      `cluster / single per round ${ratios.map((ratio) => ratio.toFixed(2)).join(', ')} (median ${median(ratios).toFixed(2)})`,
  );
  return true;
}

void runScript(parse, USAGE, run);
