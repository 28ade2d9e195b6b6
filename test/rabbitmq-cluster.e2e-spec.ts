import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RabbitMqConnection } from '../src/infra/rabbitmq/rabbitmq.connection.js';
import {
  clusterUrls,
  killNode,
  queueLeader,
  quorumQueue,
  startCluster,
  startNode,
  stopCluster,
  type RabbitCluster,
  type RabbitNode,
} from '../scripts/lib/rabbitmq-cluster.js';
import {
  bearer,
  consistentReconcile,
  createSale,
  ordersOnceSettled,
  purchaseResult,
  startApp,
  Stores,
  waitFor,
  type TestApp,
} from './support/harness.js';

/** A purchase as a buyer saw it: when it was sent and answered (ms since the crowd began). */
interface Click {
  userId: number;
  sentMs: number;
  answeredMs: number;
  status: number;
  code?: string;
  requestId?: string;
}

const CONFIRM_TIMEOUT_MS = 800;
const BUYERS = 2_000;
const STOCK = 1_500;
/**
 * How long the crowd keeps arriving (50 buyers a second): past both kills, each node taking
 * about 10 s to come back here.
 */
const CROWD_MS = 40_000;

/**
 * The service on a RabbitMQ cluster of three nodes of its own (scripts/lib/rabbitmq-cluster.ts),
 * RABBITMQ_URL listing all three: the orders and timeout queues are quorum queues with a replica
 * on each node, and the app's connections move to a surviving node when theirs dies.
 */
describe('on a RabbitMQ cluster of three nodes', () => {
  let cluster: RabbitCluster;
  let t: TestApp;
  const stores = new Stores();

  beforeAll(async () => {
    cluster = await startCluster(mkdtempSync(join(tmpdir(), 'seckill-rabbitmq-')), 3);
    t = await startApp({
      RABBITMQ_URL: clusterUrls(cluster).join(','),
      RABBITMQ_QUORUM_SIZE: '3',
      PUBLISH_CONFIRM_TIMEOUT_MS: String(CONFIRM_TIMEOUT_MS),
      TRUSTED_PROXIES: '127.0.0.1',
    });
  }, 300_000);

  afterAll(async () => {
    await t?.close();
    await stores.close();
    if (cluster) await stopCluster(cluster);
  }, 120_000);

  /** The orders queue's leader, asked of a node other than `not` (which may be down). */
  async function ordersLeader(not?: RabbitNode): Promise<RabbitNode> {
    const names = t.app.get(RabbitMqConnection).names;
    const via = cluster.nodes.find((node) => node !== not)!;
    return waitFor(() => queueLeader(cluster, via, names.ordersQueue), {
      timeoutMs: 30_000,
      what: 'the orders queue to have a leader',
    });
  }

  it("should keep every 202 one order while the orders queue's leader, then another node, is SIGKILLed mid-sale and back, answering each purchase within the confirm timeout", async () => {
    const goodsId = await createSale(t.http, { stock: STOCK });
    // RABBITMQ_QUORUM_SIZE=3: each queue has a replica on every node.
    const names = t.app.get(RabbitMqConnection).names;
    for (const queue of [names.ordersQueue, names.timeoutQueue, names.delayQueue]) {
      const replicas = await quorumQueue(cluster, cluster.nodes[0], queue);
      expect(new Set(replicas?.members)).toEqual(new Set(cluster.nodes.map((node) => node.name)));
    }
    const startedAt = Date.now();
    const now = () => Date.now() - startedAt;
    const clicks: Click[] = [];
    const buy = async (userId: number) => {
      const sentMs = now();
      const response = await t.http
        .post(`/api/v1/seckill/${goodsId}`)
        .set('Authorization', bearer(userId))
        .set('X-Forwarded-For', `10.2.${(userId >> 8) & 255}.${userId & 255}`);
      clicks.push({
        userId,
        sentMs,
        answeredMs: now(),
        status: response.status,
        code: response.body.code as string | undefined,
        requestId: response.body.requestId as string | undefined,
      });
    };
    const crowd = Promise.all(
      Array.from({ length: BUYERS }, async (_, i) => {
        await sleep((i * CROWD_MS) / BUYERS);
        await buy(90_000 + i);
      }),
    );

    // The leader dies 3 s in, down 4 s; once it is back, the queue's leader then (another node)
    // dies and comes back too.
    const kills: { node: string; atMs: number; backMs: number }[] = [];
    for (const delayMs of [3_000, 1_000]) {
      await sleep(delayMs);
      const victim = kills.length === 0 ? await ordersLeader() : await anotherThan(kills[0].node);
      await killNode(victim);
      const killedAt = now();
      await sleep(4_000);
      await startNode(cluster, victim);
      kills.push({ node: victim.name, atMs: killedAt, backMs: now() });
    }
    await crowd;

    // Every answer is the sale's own: taken, refused for a reason, or 503 (nothing taken, or an
    // unknown outcome that its result settles).
    for (const click of clicks) {
      expect([202, 409, 503]).toContain(click.status);
    }
    const accepted = clicks.filter((click) => click.status === 202);
    expect(accepted.length).toBeGreaterThan(0);
    // Once the queues drain: every 202 is one order; a 503 that carried a request id ended as an
    // order or as nothing, as its result says; no buyer has two.
    const orders = await ordersOnceSettled(stores, goodsId, accepted.length, 60_000);
    const byRequest = new Map(orders.map((order) => [String(order.request_id), order]));
    for (const click of accepted) expect(byRequest.has(click.requestId!)).toBe(true);
    for (const click of clicks.filter((c) => c.status === 503 && c.requestId)) {
      const result = await purchaseResult(t.http, goodsId, click.userId);
      expect(result.status === 'SUCCESS').toBe(byRequest.has(click.requestId!));
    }
    expect(new Set(orders.map((order) => Number(order.user_id))).size).toBe(orders.length);
    expect(orders.length).toBeLessThanOrEqual(STOCK);
    expect(await consistentReconcile(t.http, goodsId)).toMatchObject({ inFlight: 0 });

    // No purchase waited for a dead node: each was answered within the confirm timeout and the
    // request's own work (a loose bound: two cores, three brokers and the crowd on one machine).
    const slowest = Math.max(...clicks.map((click) => click.answeredMs - click.sentMs));
    expect(slowest).toBeLessThan(CONFIRM_TIMEOUT_MS + 2_000);
    report(clicks, kills);
  });

  async function anotherThan(name: string): Promise<RabbitNode> {
    const leader = await ordersLeader();
    return leader.name !== name ? leader : cluster.nodes.find((node) => node.name !== name)!;
  }
});

/** Prints what the kills did to the buyers (the figures docs/scaling.md quotes). */
function report(clicks: Click[], kills: { node: string; atMs: number; backMs: number }[]): void {
  const accepted = clicks.filter((click) => click.status === 202).map((c) => c.answeredMs);
  accepted.sort((a, b) => a - b);
  const lines = kills.map(({ node, atMs, backMs }) => {
    // The longest stretch without a 202 from 1 s before the kill to 2 s after the node is back.
    const around = accepted.filter((ms) => ms >= atMs - 1_000 && ms <= backMs + 2_000);
    let gap = 0;
    for (let i = 1; i < around.length; i++) gap = Math.max(gap, around[i] - around[i - 1]);
    const unavailable = clicks.filter(
      (c) => c.status === 503 && c.sentMs >= atMs && c.sentMs <= backMs,
    );
    const unknown = unavailable.filter((c) => c.requestId !== undefined).length;
    return `${node} killed at ${atMs} ms, back at ${backMs} ms: longest pause in 202s ${gap} ms, 503s meanwhile ${unavailable.length} (${unknown} of unknown outcome)`;
  });
  const latencies = clicks.map((c) => c.answeredMs - c.sentMs).sort((a, b) => a - b);
  const p = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  console.log(
    [
      `rabbitmq cluster: ${clicks.length} purchases, ${accepted.length} accepted, answers p50 ${p(0.5)} ms p99 ${p(0.99)} ms max ${latencies.at(-1)} ms`,
      ...lines,
    ].join('\n'),
  );
}
