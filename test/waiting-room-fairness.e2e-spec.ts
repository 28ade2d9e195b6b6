import { describe, expect, it } from 'vitest';
import { queueKeys } from '../src/infra/redis/seckill-keys.js';
import { buyerHeaders, runLoad, type LoadRequest } from '../scripts/lib/load.js';
import { createSale, waitFor, useApp } from './support/harness.js';
import { baseUrlOf } from './support/sse.js';

const HUMANS = 5_000;
const SCRIPTS = 200;
const STOCK = 500;
const HUMAN_IDS = Array.from({ length: HUMANS }, (_, i) => 20_000 + i);
const SCRIPT_IDS = Array.from({ length: SCRIPTS }, (_, i) => 30_000 + i);

/**
 * The scripted buyers' sales when STOCK places are drawn at random from HUMANS + SCRIPTS
 * buyers: hypergeometric, mean 19.2 and standard deviation 4.1. The bound is five deviations
 * either side, which a fair draw leaves with a probability under 1e-5.
 */
const FAIR_MEAN = (STOCK * SCRIPTS) / (HUMANS + SCRIPTS);
const FAIR_SD = Math.sqrt(
  ((((STOCK * SCRIPTS) / (HUMANS + SCRIPTS)) * HUMANS) / (HUMANS + SCRIPTS)) *
    ((HUMANS + SCRIPTS - STOCK) / (HUMANS + SCRIPTS - 1)),
);

/** A purchase's final answers: asking again gets the same. */
const FINAL = new Set(['SOLD_OUT', 'ALREADY_PURCHASED', 'SALE_ENDED']);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

describe('a queue sale against scripted buyers (QUEUE_ADMIT_STOCK_FACTOR 1)', () => {
  // The load generator is one client address: the account cap would refuse all but 100 of them.
  const t = useApp({
    THROTTLE_ENABLED: 'false',
    SOLD_OUT_MEMO_MS: '0',
    QUEUE_TICK_MS: '50',
    QUEUE_MAX_ACCOUNTS_PER_ADDRESS: '1000000',
  });
  const stores = t.stores;
  const origin = () => baseUrlOf(t.app);
  const request = (method: 'GET' | 'POST', path: string, userId: number): LoadRequest => ({
    method,
    path,
    headers: { ...buyerHeaders(userId, userId), 'x-user': String(userId) },
  });

  /**
   * The scripts, firing purchases as fast as 50 connections go, each until it has a final
   * answer (202, SOLD_OUT, ALREADY_PURCHASED). Returns how often they were refused NOT_ADMITTED.
   */
  async function hammer(goodsId: number): Promise<number> {
    const pending = new Set(SCRIPT_IDS);
    let notAdmitted = 0;
    let turn = 0;
    await runLoad({
      origin: origin(),
      connections: 50,
      durationMs: 60_000,
      next: () => {
        if (pending.size === 0) return undefined;
        const ids = [...pending];
        return request('POST', `/api/v1/seckill/${goodsId}`, ids[turn++ % ids.length]);
      },
      onResult: (result, sent) => {
        if (result.code === 'NOT_ADMITTED') notAdmitted++;
        if (result.status === 202 || FINAL.has(result.code ?? '')) {
          pending.delete(Number(sent.headers['x-user']));
        }
      },
    });
    return notAdmitted;
  }

  it('should sell the scripted buyers about their share of the queue, where an open sale lets them take far more', async () => {
    const startAt = Date.now() + 12_000;
    const goodsId = await createSale(t.http, {
      stock: STOCK,
      startsInMs: startAt - Date.now(),
      queue: { admitPerSecond: 2_000, admissionTtlSeconds: 60 },
    });

    // The people join over the pre-queue, the scripts in the last few hundred ms before the start.
    const joined = await runLoad({
      origin: origin(),
      connections: 50,
      next: (i) =>
        i < HUMANS ? request('POST', `/api/v1/seckill/${goodsId}/queue`, HUMAN_IDS[i]) : undefined,
    });
    expect(joined.results.every((r) => r.status === 200)).toBe(true);
    expect(Date.now()).toBeLessThan(startAt - 1_000);
    await sleep(startAt - 400 - Date.now());
    const late = await runLoad({
      origin: origin(),
      connections: 50,
      next: (i) =>
        i < SCRIPTS
          ? request('POST', `/api/v1/seckill/${goodsId}/queue`, SCRIPT_IDS[i])
          : undefined,
    });
    expect(late.results.every((r) => r.status === 200)).toBe(true);
    expect(Date.now()).toBeLessThan(startAt);
    expect(await stores.redis.zcard(queueKeys(goodsId).pre)).toBe(HUMANS + SCRIPTS);

    // From the start the scripts hammer the purchase route; each person buys once admitted (as
    // their page would tell them; here read from the admitted set, one read for all of them).
    await sleep(startAt - Date.now());
    const scripts = hammer(goodsId);
    const bought = new Set<number>();
    const people = (async () => {
      while ((await stores.redisStock(goodsId))! > 0 || (await stores.inflight(goodsId)) > 0) {
        const admitted = (await stores.redis.zrangebyscore(queueKeys(goodsId).admitted, 0, '+inf'))
          .map(Number)
          .filter((id) => id < 30_000 && !bought.has(id));
        for (const id of admitted) bought.add(id);
        await runLoad({
          origin: origin(),
          connections: 20,
          next: (i) =>
            i < admitted.length
              ? request('POST', `/api/v1/seckill/${goodsId}`, admitted[i])
              : undefined,
        });
        await sleep(100);
      }
    })();
    const [notAdmitted] = await Promise.all([scripts, people]);
    expect(notAdmitted).toBeGreaterThan(0);
    const orders = await waitFor(
      async () => {
        const rows = await stores.orders(goodsId);
        return rows.length === STOCK ? rows : null;
      },
      { what: 'every unit sold', timeoutMs: 60_000 },
    );

    // Sold exactly to the admitted, the first STOCK places of the shuffled order (factor 1, and
    // nobody's admission lapsed): nobody bought around it.
    const admitted = (await stores.redis.zrange(queueKeys(goodsId).admitted, 0, -1)).map(Number);
    expect(admitted).toHaveLength(STOCK);
    expect(await stores.redis.hget(queueKeys(goodsId).state, 'head')).toBe(String(STOCK));
    expect(new Set(orders.map((o) => o.user_id))).toEqual(new Set(admitted));
    const scriptedSales = orders.filter((o) => o.user_id >= 30_000).length;
    expect(scriptedSales).toBeGreaterThanOrEqual(Math.floor(FAIR_MEAN - 5 * FAIR_SD));
    expect(scriptedSales).toBeLessThanOrEqual(Math.ceil(FAIR_MEAN + 5 * FAIR_SD));

    // The same crowd on an open sale: the scripts fire at the start, the people click once each.
    const open = await createSale(t.http, { stock: STOCK, startsInMs: 2_000 });
    await sleep(2_000);
    await Promise.all([
      hammer(open),
      runLoad({
        origin: origin(),
        connections: 20,
        next: (i) =>
          i < HUMANS ? request('POST', `/api/v1/seckill/${open}`, HUMAN_IDS[i]) : undefined,
      }),
    ]);
    const openOrders = await waitFor(
      async () => {
        const rows = await stores.orders(open);
        return rows.length === STOCK ? rows : null;
      },
      { what: 'the open sale sold out', timeoutMs: 60_000 },
    );
    const openScripted = openOrders.filter((o) => o.user_id >= 30_000).length;
    console.log(
      `fairness: ${HUMANS} joins in ${Math.round(joined.elapsedMs)} ms ` +
        `(${Math.round((HUMANS * 1000) / joined.elapsedMs)}/s); scripts are ${((100 * SCRIPTS) / (HUMANS + SCRIPTS)).toFixed(1)} % of the queue; ` +
        `queue sale: ${scriptedSales} of ${STOCK} units to scripts (${((100 * scriptedSales) / STOCK).toFixed(1)} %, ` +
        `a fair draw ${FAIR_MEAN.toFixed(1)} ± ${FAIR_SD.toFixed(1)}); ` +
        `open sale: ${openScripted} (${((100 * openScripted) / STOCK).toFixed(1)} %)`,
    );
    expect(openScripted).toBeGreaterThan(Math.ceil(FAIR_MEAN + 5 * FAIR_SD));
  });
});
