// The Redis commands a side sends itself, per purchase and per sold-out answer. INFO
// commandstats also counts what Lua scripts run inside Redis; MONITOR marks those as "lua", so a
// short, unhurried sample under MONITOR tells the round trips apart. Not during the timed loads:
// MONITOR slows Redis down.
import { setTimeout as sleep } from 'node:timers/promises';

import { runLoad } from '../../scripts/lib/load.js';
import type { Buyers } from './scenarios.js';
import { countOrders, type Side } from './sides.js';

const SAMPLE = 200;
const CONNECTIONS = 10;
const DRAIN_TIMEOUT_MS = 30_000;

export interface SentCommands {
  /** Commands the side sent (a script call counts once), per answer. */
  perAnswer: number;
  /** The same by command name, per answer. */
  byCommand: Record<string, number>;
}

export interface RoundTrips {
  purchase: SentCommands;
  soldOut: SentCommands;
}

async function sample(
  side: Side,
  goodsId: number,
  buyers: Buyers,
  expectOrders: number,
): Promise<SentCommands> {
  const monitor = await side.redis.monitor();
  // ioredis now and then takes a MONITOR line for the reply to a command of its own and emits
  // "Command queue state error": that costs the sample one line, not the whole bench run.
  monitor.on('error', (error: Error) => console.warn(`MONITOR: ${error.message.slice(0, 80)}`));
  const counts: Record<string, number> = {};
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') return;
    const name = (args[0] ?? '?').toLowerCase();
    counts[name] = (counts[name] ?? 0) + 1;
  });
  const headers = Array.from({ length: SAMPLE }, () => buyers.take());
  const path = `/api/v1/seckill/${goodsId}`;
  await runLoad({
    origin: side.origin,
    connections: CONNECTIONS,
    next: (i) => (i < SAMPLE ? { method: 'POST', path, headers: headers[i] ?? {} } : undefined),
  });
  // The consumer's commands belong to the purchases too.
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  while ((await countOrders(side.db, goodsId)) < expectOrders && Date.now() < deadline) {
    await sleep(50);
  }
  await sleep(200);
  monitor.disconnect();
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const byCommand = Object.fromEntries(
    Object.entries(counts)
      .sort((a, b) => b[1] - a[1])
      .map(([name, n]) => [name, Number((n / SAMPLE).toFixed(2))]),
  );
  return { perAnswer: Number((total / SAMPLE).toFixed(2)), byCommand };
}

export async function measureRoundTrips(side: Side, buyers: Buyers): Promise<RoundTrips> {
  const open = await side.createSale(SAMPLE);
  const purchase = await sample(side, open, buyers, SAMPLE);
  // The same goods, now sold out: every further answer is SOLD_OUT.
  const soldOut = await sample(side, open, buyers, SAMPLE);
  return { purchase, soldOut };
}
