import { createHash, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import { withIncludes } from '../../infra/redis/lua-source.js';
import { saleKeys, throttleKeys, type SaleKeys } from '../../infra/redis/seckill-keys.js';
import { encodeOrderMessage } from '../messaging/order-message.js';
import { ThrottleScripts } from '../rate-limit/throttle.scripts.js';
import {
  DeductCode,
  LedgerScripts,
  ReleaseCode,
  RestockCode,
  RetakeCode,
} from './ledger.scripts.js';
import { LoadScripts } from './load.scripts.js';
import { LoanCode, LoanScripts } from './loan.scripts.js';
import { RepairScripts, type ActiveOrderRef } from './repair.scripts.js';

const HOUR = 60 * 60 * 1000;
const MINUTE = 60 * 1000;
/** A consumer's claim holder (lua/seckill-claim.lua). */
const CONSUMER = 'consumer-a';

interface Sale {
  goodsId: number;
  keys: SaleKeys;
}

interface Purchase {
  requestId: string;
  message: string;
  code: DeductCode;
  remaining: number;
}

describe("the sale's scripts (real Redis)", () => {
  let redis: Redis;
  let ledger: LedgerScripts;
  let loans: LoanScripts;
  let load: LoadScripts;
  let repair: RepairScripts;
  // Goods ids far from anything the e2e tests create, unique per test of this run.
  let nextGoodsId = 900_000_000 + Math.floor(Math.random() * 90_000) * 1_000;
  let sales: Sale[] = [];

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
    const lua = new LuaScriptsService(redis);
    lua.onModuleInit();
    ledger = new LedgerScripts(lua);
    loans = new LoanScripts(lua);
    load = new LoadScripts(lua);
    repair = new RepairScripts(lua, redis);
  });

  afterEach(async () => {
    const keys = sales.flatMap(({ keys }) =>
      Object.values(keys).filter((key): key is string => typeof key === 'string'),
    );
    sales = [];
    if (keys.length > 0) await redis.del(...keys);
  });

  afterAll(async () => {
    await redis.quit();
  });

  /** A sale with no Redis state at all. */
  function newSale(): Sale {
    const goodsId = nextGoodsId++;
    const sale = { goodsId, keys: saleKeys(goodsId) };
    sales.push(sale);
    return sale;
  }

  /** A sale preheated through the script itself; open for an hour either side of now by default. */
  async function openSale(
    options: {
      stock?: number;
      limit?: number;
      startAt?: Date;
      endAt?: Date;
      admission?: 'open' | 'queue';
    } = {},
  ): Promise<Sale> {
    const sale = newSale();
    const stock = options.stock ?? 10;
    await load.preheat(sale.keys, {
      totalStock: stock,
      stock,
      startAt: options.startAt ?? new Date(Date.now() - HOUR),
      endAt: options.endAt ?? new Date(Date.now() + HOUR),
      perUserLimit: options.limit ?? 5,
      admission: options.admission,
    });
    return sale;
  }

  async function buy(
    sale: Sale,
    userId: number,
    quantity = 1,
    requestId: string = randomUUID(),
    borrowedFrom?: number,
  ): Promise<Purchase> {
    const message = encodeOrderMessage({
      requestId,
      orderNo: `SK${Date.now()}${requestId.slice(0, 8).toUpperCase()}`,
      userId,
      goodsId: sale.goodsId,
      quantity,
      acceptedAt: Date.now(),
    });
    const result = await ledger.deduct(
      sale.keys,
      userId,
      quantity,
      requestId,
      message,
      borrowedFrom,
    );
    return { requestId, message, ...result };
  }

  /** A purchase recorded in its home bucket on stock lent by bucket 1 (seckill-loan.lua). */
  const buyBorrowed = (sale: Sale, userId: number, quantity = 1, requestId = randomUUID()) =>
    buy(sale, userId, quantity, requestId, 1);

  /** Everything the scripts may touch, to assert that a call changed nothing. */
  async function snapshot({ keys }: Sale) {
    return {
      stock: await redis.get(keys.stock),
      meta: await redis.hgetall(keys.meta),
      buyers: await redis.hgetall(keys.buyers),
      inflight: await redis.hgetall(keys.inflight),
      outbox: await redis.zrange(keys.outbox, 0, -1, 'WITHSCORES'),
      claims: await redis.hgetall(keys.claims),
      voided: await redis.zrange(keys.voided, 0, -1, 'WITHSCORES'),
      results: await redis.hgetall(keys.results),
      completed: await redis.zrange(keys.completed, 0, -1, 'WITHSCORES'),
      restocked: (await redis.smembers(keys.restocked)).sort(),
      loans: await redis.hgetall(keys.loans),
      borrowed: await redis.hgetall(keys.borrowed),
      retaken: await redis.hgetall(keys.retaken),
      admitted: await redis.zrange(keys.admitted, 0, -1, 'WITHSCORES'),
    };
  }

  /** Redis's clock in epoch ms, as the scripts compute it. */
  async function redisNowMs(): Promise<number> {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /** A member of the `completed` zset, as seckill-complete.lua writes it. */
  const completedMember = (requestId: string, userId: number, quantity: number, orderNo: string) =>
    `${requestId}|${userId}|${quantity}|${orderNo}`;

  async function resultOf({ keys }: Sale, userId: number): Promise<unknown> {
    const raw = await redis.hget(keys.results, String(userId));
    return raw === null ? null : JSON.parse(raw);
  }

  const stockOf = async ({ keys }: Sale) => Number(await redis.get(keys.stock));

  describe('deduct', () => {
    it('should accept a purchase: take the stock and record buyer, in-flight message, outbox and QUEUED result', async () => {
      const sale = await openSale({ stock: 10 });
      const before = Date.now();

      const purchase = await buy(sale, 101, 2);

      const after = Date.now();
      expect(purchase).toMatchObject({ code: DeductCode.Accepted, remaining: 8 });
      expect(await stockOf(sale)).toBe(8);
      expect(await redis.hget(sale.keys.buyers, '101')).toBe('2');
      expect(await redis.hget(sale.keys.inflight, purchase.requestId)).toBe(purchase.message);
      const acceptedAt = Number(await redis.zscore(sale.keys.outbox, purchase.requestId));
      expect(acceptedAt).toBeGreaterThanOrEqual(before - 1_000);
      expect(acceptedAt).toBeLessThanOrEqual(after + 1_000);
      expect(await resultOf(sale, 101)).toEqual({
        status: 'QUEUED',
        requestId: purchase.requestId,
      });
    });

    it('should accept a quantity equal to the per-user limit', async () => {
      const sale = await openSale({ stock: 10, limit: 3 });

      expect(await buy(sale, 102, 3)).toMatchObject({ code: DeductCode.Accepted, remaining: 7 });
    });

    it('should accept the purchase that takes the last unit', async () => {
      const sale = await openSale({ stock: 2 });

      expect(await buy(sale, 103, 2)).toMatchObject({ code: DeductCode.Accepted, remaining: 0 });
      expect(await stockOf(sale)).toBe(0);
    });

    it('should refuse a purchase as NOT_PREHEATED when the sale has no stock key', async () => {
      const empty = newSale();
      expect(await buy(empty, 104)).toMatchObject({ code: DeductCode.NotPreheated, remaining: 0 });
      const { keys } = empty;
      expect(
        await redis.exists(keys.stock, keys.buyers, keys.inflight, keys.outbox, keys.results),
      ).toBe(0);

      const metaOnly = await openSale();
      await redis.del(metaOnly.keys.stock);
      const before = await snapshot(metaOnly);
      expect(await buy(metaOnly, 104)).toMatchObject({
        code: DeductCode.NotPreheated,
        remaining: 0,
      });
      expect(await snapshot(metaOnly)).toEqual(before);
    });

    it('should refuse a purchase as NOT_PREHEATED when the stock is present but the meta is not', async () => {
      const sale = newSale();
      await redis.set(sale.keys.stock, '5');

      expect(await buy(sale, 105)).toMatchObject({ code: DeductCode.NotPreheated, remaining: 0 });
      expect(await stockOf(sale)).toBe(5);
      expect(await redis.exists(sale.keys.buyers, sale.keys.inflight, sale.keys.results)).toBe(0);
    });

    it('should refuse a purchase as SALE_NOT_STARTED before the window opens', async () => {
      const sale = await openSale({
        stock: 10,
        startAt: new Date(Date.now() + HOUR),
        endAt: new Date(Date.now() + 2 * HOUR),
      });
      const before = await snapshot(sale);

      expect(await buy(sale, 106)).toMatchObject({
        code: DeductCode.SaleNotStarted,
        remaining: 10,
      });
      expect(await snapshot(sale)).toEqual(before);
    });

    it('should refuse a purchase as SALE_ENDED after the window closed', async () => {
      const sale = await openSale({
        stock: 10,
        startAt: new Date(Date.now() - 2 * HOUR),
        endAt: new Date(Date.now() - HOUR),
      });
      const before = await snapshot(sale);

      expect(await buy(sale, 107)).toMatchObject({ code: DeductCode.SaleEnded, remaining: 10 });
      expect(await snapshot(sale)).toEqual(before);
    });

    it('should refuse a purchase as SOLD_OUT when no stock is left', async () => {
      const sale = await openSale({ stock: 0 });
      const before = await snapshot(sale);

      expect(await buy(sale, 108)).toMatchObject({ code: DeductCode.SoldOut, remaining: 0 });
      expect(await snapshot(sale)).toEqual(before);
    });

    it('should refuse a purchase as SOLD_OUT when less stock is left than asked for', async () => {
      const sale = await openSale({ stock: 1, limit: 5 });
      const before = await snapshot(sale);

      expect(await buy(sale, 109, 2)).toMatchObject({ code: DeductCode.SoldOut, remaining: 1 });
      expect(await snapshot(sale)).toEqual(before);
    });

    it('should refuse a second purchase by the same user as ALREADY_PURCHASED', async () => {
      const sale = await openSale({ stock: 10 });
      const first = await buy(sale, 110);
      expect(first.code).toBe(DeductCode.Accepted);
      const before = await snapshot(sale);

      expect(await buy(sale, 110)).toMatchObject({
        code: DeductCode.AlreadyPurchased,
        remaining: 9,
      });
      expect(await snapshot(sale)).toEqual(before);
    });

    it('should refuse a quantity above the per-user limit as OVER_LIMIT', async () => {
      const sale = await openSale({ stock: 10, limit: 2 });
      const before = await snapshot(sale);

      expect(await buy(sale, 111, 3)).toMatchObject({ code: DeductCode.OverLimit, remaining: 10 });
      expect(await snapshot(sale)).toEqual(before);
    });

    it('should answer REPLAYED to a resent request id and change nothing', async () => {
      const sale = await openSale({ stock: 10 });
      const first = await buy(sale, 112, 1);
      expect(first).toMatchObject({ code: DeductCode.Accepted, remaining: 9 });
      const before = await snapshot(sale);

      const replay = await buy(sale, 112, 1, first.requestId);

      expect(replay).toMatchObject({ code: DeductCode.Replayed, remaining: 9 });
      expect(await snapshot(sale)).toEqual(before);
      expect(await stockOf(sale)).toBe(9);
    });
  });

  describe('a queue sale', () => {
    it('should refuse a buyer without an admission in force NOT_ADMITTED and change nothing', async () => {
      const sale = await openSale({ stock: 3, admission: 'queue' });
      await redis.zadd(sale.keys.admitted, Date.now() - 1_000, '602');
      const before = await snapshot(sale);

      expect((await buy(sale, 601)).code).toBe(DeductCode.NotAdmitted);
      expect((await buy(sale, 602)).code).toBe(DeductCode.NotAdmitted);

      expect(await snapshot(sale)).toEqual(before);
    });

    it('should spend an admission on an accepted purchase, and give it back with a release', async () => {
      const sale = await openSale({ stock: 3, admission: 'queue' });
      const until = Date.now() + MINUTE;
      await redis.zadd(sale.keys.admitted, until, '603');

      const purchase = await buy(sale, 603);
      expect(purchase.code).toBe(DeductCode.Accepted);
      expect(Number(await redis.zscore(sale.keys.admitted, '603'))).toBe(-until);

      expect(await ledger.release(sale.keys, purchase.requestId, false, 'UNAVAILABLE')).toBe(
        ReleaseCode.Released,
      );
      expect(Number(await redis.zscore(sale.keys.admitted, '603'))).toBe(until);
      expect((await buy(sale, 603)).code).toBe(DeductCode.Accepted);
    });

    it('should answer SOLD_OUT before NOT_ADMITTED once the stock is gone', async () => {
      const sale = await openSale({ stock: 1, admission: 'queue' });
      await redis.zadd(sale.keys.admitted, Date.now() + MINUTE, '604');
      expect((await buy(sale, 604)).code).toBe(DeductCode.Accepted);

      expect((await buy(sale, 605)).code).toBe(DeductCode.SoldOut);
    });
  });

  describe('release', () => {
    it('should give back the stock and buyer slot, void the request and report FAILED with the reason', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 201, 2);
      await ledger.claim(sale.keys, [purchase.requestId], CONSUMER, MINUTE);

      expect(await ledger.release(sale.keys, purchase.requestId, CONSUMER, 'UNAVAILABLE')).toBe(
        ReleaseCode.Released,
      );

      expect(await stockOf(sale)).toBe(10);
      expect(await redis.hexists(sale.keys.buyers, '201')).toBe(0);
      expect(await redis.hlen(sale.keys.inflight)).toBe(0);
      expect(await redis.zcard(sale.keys.outbox)).toBe(0);
      expect(await redis.hlen(sale.keys.claims)).toBe(0);
      expect(await redis.zscore(sale.keys.voided, purchase.requestId)).not.toBeNull();
      expect(await resultOf(sale, 201)).toEqual({
        status: 'FAILED',
        requestId: purchase.requestId,
        reason: 'UNAVAILABLE',
      });
    });

    it('should give back the buyer slot of a user id of 16 digits', async () => {
      const sale = await openSale({ stock: 10 });
      const userId = Number.MAX_SAFE_INTEGER;
      const purchase = await buy(sale, userId);
      expect(await ledger.release(sale.keys, purchase.requestId, false, 'UNAVAILABLE')).toBe(
        ReleaseCode.Released,
      );
      expect(await redis.hgetall(sale.keys.buyers)).toEqual({});
      expect(await resultOf(sale, userId)).toMatchObject({ status: 'FAILED' });
      expect((await buy(sale, userId)).code).toBe(DeductCode.Accepted);
    });

    it('should release an unclaimed request without force', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 202);

      expect(await ledger.release(sale.keys, purchase.requestId, false, 'SOLD_OUT')).toBe(
        ReleaseCode.Released,
      );
      expect(await stockOf(sale)).toBe(10);
      expect(await resultOf(sale, 202)).toEqual({
        status: 'FAILED',
        requestId: purchase.requestId,
        reason: 'SOLD_OUT',
      });
    });

    it('should leave the result alone when it belongs to another request of the same user', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 203);
      const newer = JSON.stringify({ status: 'QUEUED', requestId: randomUUID() });
      await redis.hset(sale.keys.results, '203', newer);

      expect(await ledger.release(sale.keys, purchase.requestId, false, 'UNAVAILABLE')).toBe(
        ReleaseCode.Released,
      );
      expect(await stockOf(sale)).toBe(10);
      expect(await redis.hget(sale.keys.results, '203')).toBe(newer);
    });

    it('should answer NOT_IN_FLIGHT to a second release and give nothing back twice', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 204, 2);
      expect(await ledger.release(sale.keys, purchase.requestId, false, 'UNAVAILABLE')).toBe(
        ReleaseCode.Released,
      );
      const before = await snapshot(sale);

      expect(await ledger.release(sale.keys, purchase.requestId, false, 'UNAVAILABLE')).toBe(
        ReleaseCode.NotInFlight,
      );
      expect(await ledger.release(sale.keys, purchase.requestId, CONSUMER, 'UNAVAILABLE')).toBe(
        ReleaseCode.NotInFlight,
      );
      expect(await snapshot(sale)).toEqual(before);
      expect(await stockOf(sale)).toBe(10);
    });

    it('should answer NOT_IN_FLIGHT for a request id it never accepted, and void it so a late deduct is refused', async () => {
      const sale = await openSale({ stock: 10 });
      const requestId = randomUUID();
      const before = await snapshot(sale);

      expect(await ledger.release(sale.keys, requestId, false, 'UNAVAILABLE')).toBe(
        ReleaseCode.NotInFlight,
      );
      const after = await snapshot(sale);
      expect({ ...after, voided: [] }).toEqual({ ...before, voided: [] });
      expect(await redis.zscore(sale.keys.voided, requestId)).not.toBeNull();

      // The deduct command arrives after the release (it was resent after a timeout).
      const late = await buy(sale, 209, 1, requestId);
      expect(late.code).toBe(DeductCode.Voided);
      expect(await stockOf(sale)).toBe(10);
    });

    it('should answer COMPLETED for a request that is an order already', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 210);
      await ledger.claim(sale.keys, [purchase.requestId], CONSUMER, MINUTE);
      await ledger.complete(sale.keys, [
        { requestId: purchase.requestId, userId: 210, orderNo: 'SK0000000210', quantity: 1 },
      ]);
      const before = await snapshot(sale);

      expect(await ledger.release(sale.keys, purchase.requestId, false, 'UNAVAILABLE', 210)).toBe(
        ReleaseCode.Completed,
      );
      expect(await snapshot(sale)).toEqual(before);
    });

    it('should refuse to release a claimed request without force, and release it with force', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 205, 3);
      expect(await ledger.claim(sale.keys, [purchase.requestId], CONSUMER, MINUTE)).toEqual([true]);
      const before = await snapshot(sale);

      expect(await ledger.release(sale.keys, purchase.requestId, false, 'UNAVAILABLE')).toBe(
        ReleaseCode.Claimed,
      );
      expect(await snapshot(sale)).toEqual(before);
      expect(await stockOf(sale)).toBe(7);

      expect(await ledger.release(sale.keys, purchase.requestId, CONSUMER, 'SOLD_OUT')).toBe(
        ReleaseCode.Released,
      );
      expect(await stockOf(sale)).toBe(10);
      expect(await redis.hlen(sale.keys.claims)).toBe(0);
      expect(await redis.hexists(sale.keys.buyers, '205')).toBe(0);
    });

    it("should refuse a forced release while another consumer's claim is in force, dropping only the caller's own claim", async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 206, 2);
      // Two copies of the request: the sweeper's republish and the original.
      await ledger.claim(sale.keys, [purchase.requestId], 'consumer-b', MINUTE);
      await ledger.claim(sale.keys, [purchase.requestId], CONSUMER, MINUTE);

      // The caller's copy is given up (exhausted, or refused by MySQL); consumer-b writes its own.
      expect(await ledger.release(sale.keys, purchase.requestId, CONSUMER, 'UNDELIVERABLE')).toBe(
        ReleaseCode.Claimed,
      );
      // A consumer that claimed nothing (an exhausted copy) is refused the same way.
      expect(await ledger.release(sale.keys, purchase.requestId, 'consumer-c', 'X')).toBe(
        ReleaseCode.Claimed,
      );
      expect(await stockOf(sale)).toBe(8);
      expect(await redis.hget(sale.keys.buyers, '206')).toBe('2');
      expect(await redis.hexists(sale.keys.inflight, purchase.requestId)).toBe(1);
      expect(await redis.zscore(sale.keys.voided, purchase.requestId)).toBeNull();
      expect(await resultOf(sale, 206)).toEqual({
        status: 'QUEUED',
        requestId: purchase.requestId,
      });
      const claim = JSON.parse((await redis.hget(sale.keys.claims, purchase.requestId))!) as object;
      expect(Object.keys(claim)).toEqual(['consumer-b']);

      // The holder itself may give it up: no other claim holds it now.
      expect(await ledger.release(sale.keys, purchase.requestId, 'consumer-b', 'SOLD_OUT')).toBe(
        ReleaseCode.Released,
      );
      expect(await stockOf(sale)).toBe(10);
    });

    it("should only answer when asked: CLAIMED while another holder's lease is in force, RELEASABLE once it lapsed, changing nothing", async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 208);
      await ledger.claim(sale.keys, [purchase.requestId], 'consumer-b', MINUTE);
      await ledger.claim(sale.keys, [purchase.requestId], CONSUMER, 0);
      const before = await snapshot(sale);

      expect(await ledger.askRelease(sale.keys, purchase.requestId, CONSUMER)).toBe(
        ReleaseCode.Claimed,
      );
      // The caller's own claim does not count, nor is it dropped (a release would drop it).
      expect(await ledger.askRelease(sale.keys, purchase.requestId, 'consumer-b')).toBe(
        ReleaseCode.Releasable,
      );
      expect(await snapshot(sale)).toEqual(before);

      await ledger.claim(sale.keys, [purchase.requestId], 'consumer-b', 0);
      const lapsed = await snapshot(sale);
      expect(await ledger.askRelease(sale.keys, purchase.requestId, CONSUMER)).toBe(
        ReleaseCode.Releasable,
      );
      expect(await snapshot(sale)).toEqual(lapsed);
      expect(await stockOf(sale)).toBe(9);
      // Nothing in flight (released, or never accepted): the release would not be refused.
      expect(await ledger.askRelease(sale.keys, randomUUID(), CONSUMER)).toBe(
        ReleaseCode.Releasable,
      );
    });

    it('should let a forced release take over a claim whose lease lapsed (its holder is gone)', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 207);
      await ledger.claim(sale.keys, [purchase.requestId], 'consumer-b', 0);

      expect(await ledger.release(sale.keys, purchase.requestId, CONSUMER, 'UNDELIVERABLE')).toBe(
        ReleaseCode.Released,
      );
      expect(await stockOf(sale)).toBe(10);
      expect(await redis.hlen(sale.keys.claims)).toBe(0);
      expect(await resultOf(sale, 207)).toMatchObject({
        status: 'FAILED',
        reason: 'UNDELIVERABLE',
      });
    });
  });

  describe('claim', () => {
    it('should claim in-flight requests and record them in the claims hash', async () => {
      const sale = await openSale({ stock: 10 });
      const first = await buy(sale, 301);
      const second = await buy(sale, 302);

      expect(
        await ledger.claim(sale.keys, [first.requestId, second.requestId], CONSUMER, MINUTE),
      ).toEqual([true, true]);
      const claims = await redis.hgetall(sale.keys.claims);
      expect(Object.keys(claims).sort()).toEqual([first.requestId, second.requestId].sort());
      for (const claim of Object.values(claims)) {
        expect(Object.keys(JSON.parse(claim) as object)).toEqual([CONSUMER]);
      }
    });

    it("should renew the caller's lease, keep another holder's in force and drop a lapsed one", async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 306);
      const leases = async () =>
        JSON.parse((await redis.hget(sale.keys.claims, purchase.requestId))!) as Record<
          string,
          number
        >;
      await ledger.claim(sale.keys, [purchase.requestId], 'gone', 0);
      await ledger.claim(sale.keys, [purchase.requestId], 'consumer-b', MINUTE);
      const first = await leases();
      expect(Object.keys(first)).toEqual(['consumer-b']);

      const before = await redisNowMs();
      expect(await ledger.claim(sale.keys, [purchase.requestId], CONSUMER, HOUR)).toEqual([true]);
      const renewed = await leases();
      expect(renewed['consumer-b']).toBe(first['consumer-b']);
      expect(renewed[CONSUMER]).toBeGreaterThanOrEqual(before + HOUR);
    });

    it('should refuse a voided request without claiming it', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 303);
      await ledger.release(sale.keys, purchase.requestId, false, 'UNAVAILABLE');

      expect(await ledger.claim(sale.keys, [purchase.requestId], CONSUMER, MINUTE)).toEqual([
        false,
      ]);
      expect(await redis.hlen(sale.keys.claims)).toBe(0);
    });

    it('should allow an unknown request id without adding it to the claims', async () => {
      const sale = await openSale({ stock: 10 });

      expect(await ledger.claim(sale.keys, [randomUUID()], CONSUMER, MINUTE)).toEqual([true]);
      expect(await redis.exists(sale.keys.claims)).toBe(0);
    });

    it('should answer per request id in the order given', async () => {
      const sale = await openSale({ stock: 10 });
      const inflight = await buy(sale, 304);
      const voided = await buy(sale, 305);
      await ledger.release(sale.keys, voided.requestId, false, 'UNAVAILABLE');
      const unknown = randomUUID();

      expect(
        await ledger.claim(
          sale.keys,
          [voided.requestId, inflight.requestId, unknown],
          CONSUMER,
          MINUTE,
        ),
      ).toEqual([false, true, true]);
      expect(await redis.hkeys(sale.keys.claims)).toEqual([inflight.requestId]);
    });

    it('should return an empty list without calling Redis', async () => {
      const noRedis = new Proxy(
        {},
        {
          get() {
            throw new Error('Redis must not be called');
          },
        },
      ) as Redis;

      await expect(
        new LedgerScripts(new LuaScriptsService(noRedis)).claim(
          newSale().keys,
          [],
          CONSUMER,
          MINUTE,
        ),
      ).resolves.toEqual([]);
    });
  });

  describe('complete', () => {
    it('should drop completed requests from the in-flight bookkeeping and report SUCCESS with the order number', async () => {
      const sale = await openSale({ stock: 10 });
      const first = await buy(sale, 401);
      const second = await buy(sale, 402);
      await ledger.claim(sale.keys, [first.requestId, second.requestId], CONSUMER, MINUTE);

      const { completed } = await ledger.complete(sale.keys, [
        { requestId: first.requestId, userId: 401, orderNo: 'SK0000000001', quantity: 1 },
        { requestId: second.requestId, userId: 402, orderNo: 'SK0000000002', quantity: 1 },
      ]);

      expect(completed).toBe(2);
      expect(await redis.hlen(sale.keys.inflight)).toBe(0);
      expect(await redis.zcard(sale.keys.outbox)).toBe(0);
      expect(await redis.hlen(sale.keys.claims)).toBe(0);
      expect(await resultOf(sale, 401)).toEqual({
        status: 'SUCCESS',
        requestId: first.requestId,
        orderNo: 'SK0000000001',
      });
      expect(await resultOf(sale, 402)).toEqual({
        status: 'SUCCESS',
        requestId: second.requestId,
        orderNo: 'SK0000000002',
      });
      // The stock stays taken and the buyer keeps the slot: the order exists now.
      expect(await stockOf(sale)).toBe(8);
      expect(await redis.hget(sale.keys.buyers, '401')).toBe('1');
    });

    it('should count only the requests that were still in flight', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 403);
      const other = await buy(sale, 404);

      const { completed } = await ledger.complete(sale.keys, [
        { requestId: purchase.requestId, userId: 403, orderNo: 'SK0000000003', quantity: 1 },
        { requestId: randomUUID(), userId: 405, orderNo: 'SK0000000005', quantity: 1 },
      ]);

      expect(completed).toBe(1);
      expect(await redis.hkeys(sale.keys.inflight)).toEqual([other.requestId]);
      expect(await redis.zrange(sale.keys.outbox, 0, -1)).toEqual([other.requestId]);
    });

    it('should not overwrite the result of a newer request by the same user', async () => {
      const sale = await openSale({ stock: 10 });
      const old = await buy(sale, 406);
      await ledger.release(sale.keys, old.requestId, false, 'UNAVAILABLE');
      const newer = await buy(sale, 406);
      expect(newer.code).toBe(DeductCode.Accepted);

      const { completed } = await ledger.complete(sale.keys, [
        { requestId: old.requestId, userId: 406, orderNo: 'SK0000000006', quantity: 1 },
      ]);

      expect(completed).toBe(0);
      expect(await resultOf(sale, 406)).toEqual({
        status: 'QUEUED',
        requestId: newer.requestId,
      });
      expect(await redis.hexists(sale.keys.inflight, newer.requestId)).toBe(1);
    });

    it('should take the stock and buyer slot again, once, for an order that lands after its purchase was released', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 416, 2);
      // Its writer's lease lapsed (it lost Redis), and another copy's consumer gave it up.
      await ledger.claim(sale.keys, [purchase.requestId], 'consumer-b', 0);
      expect(await ledger.release(sale.keys, purchase.requestId, CONSUMER, 'UNDELIVERABLE')).toBe(
        ReleaseCode.Released,
      );
      expect(await stockOf(sale)).toBe(10);
      // The writer's transaction commits all the same.
      const order = {
        requestId: purchase.requestId,
        userId: 416,
        orderNo: 'SK0000000416',
        quantity: 2,
      };

      expect(await ledger.complete(sale.keys, [order])).toEqual({
        completed: 0,
        retaken: [purchase.requestId],
      });

      expect(await stockOf(sale)).toBe(8);
      expect(await redis.hget(sale.keys.buyers, '416')).toBe('2');
      expect(await resultOf(sale, 416)).toEqual({
        status: 'SUCCESS',
        requestId: purchase.requestId,
        orderNo: 'SK0000000416',
      });
      expect(
        await redis.zscore(
          sale.keys.completed,
          completedMember(purchase.requestId, 416, 2, 'SK0000000416'),
        ),
      ).not.toBeNull();
      const before = await snapshot(sale);
      expect(await ledger.complete(sale.keys, [order])).toEqual({ completed: 0, retaken: [] });
      expect(await snapshot(sale)).toEqual(before);
      // Still voided: a late copy of its message is dropped.
      expect(await ledger.claim(sale.keys, [purchase.requestId], 'consumer-c', MINUTE)).toEqual([
        false,
      ]);
    });

    it('should write SUCCESS when the user has no result yet', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 407);
      await redis.hdel(sale.keys.results, '407');

      await ledger.complete(sale.keys, [
        { requestId: purchase.requestId, userId: 407, orderNo: 'SK0000000007', quantity: 1 },
      ]);

      expect(await resultOf(sale, 407)).toEqual({
        status: 'SUCCESS',
        requestId: purchase.requestId,
        orderNo: 'SK0000000007',
      });
    });

    it('should be idempotent: a second completion counts nothing and changes nothing', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 408);
      const order = {
        requestId: purchase.requestId,
        userId: 408,
        orderNo: 'SK0000000008',
        quantity: 1,
      };
      expect((await ledger.complete(sale.keys, [order])).completed).toBe(1);
      const before = await snapshot(sale);

      expect((await ledger.complete(sale.keys, [order])).completed).toBe(0);
      expect(await snapshot(sale)).toEqual(before);
    });

    it('should count nothing for an empty list without calling Redis', async () => {
      const noRedis = new Proxy(
        {},
        {
          get() {
            throw new Error('Redis must not be called');
          },
        },
      ) as Redis;

      await expect(
        new LedgerScripts(new LuaScriptsService(noRedis)).complete(newSale().keys, []),
      ).resolves.toEqual({
        completed: 0,
        retaken: [],
      });
    });

    it('should record a request that was in flight in the completed zset as "requestId|userId|quantity" at the Redis time', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const purchase = await buy(sale, 409, 3);
      const unknown = randomUUID();
      const before = await redisNowMs();

      await ledger.complete(sale.keys, [
        { requestId: purchase.requestId, userId: 409, orderNo: 'SK0000000009', quantity: 3 },
        { requestId: unknown, userId: 410, orderNo: 'SK0000000010', quantity: 1 },
      ]);

      const after = await redisNowMs();
      const entries = await redis.zrange(sale.keys.completed, 0, -1, 'WITHSCORES');
      expect(entries).toHaveLength(2);
      expect(entries[0]).toBe(completedMember(purchase.requestId, 409, 3, 'SK0000000009'));
      expect(Number(entries[1])).toBeGreaterThanOrEqual(before);
      expect(Number(entries[1])).toBeLessThanOrEqual(after);
    });

    it('should add nothing to the completed zset on a second completion of the same request', async () => {
      const sale = await openSale({ stock: 10 });
      const purchase = await buy(sale, 411, 2);
      const order = {
        requestId: purchase.requestId,
        userId: 411,
        orderNo: 'SK0000000011',
        quantity: 2,
      };
      await ledger.complete(sale.keys, [order]);
      const before = await redis.zrange(sale.keys.completed, 0, -1, 'WITHSCORES');
      expect(before).toHaveLength(2);

      await ledger.complete(sale.keys, [order]);

      expect(await redis.zrange(sale.keys.completed, 0, -1, 'WITHSCORES')).toEqual(before);
    });

    it('should write a user id of 16 digits in full in the completed member', async () => {
      const sale = await openSale({ stock: 10 });
      const userId = Number.MAX_SAFE_INTEGER;
      const purchase = await buy(sale, userId, 2);

      await ledger.complete(sale.keys, [
        { requestId: purchase.requestId, userId, orderNo: 'SK0000000012', quantity: 2 },
      ]);

      expect(await redis.zrange(sale.keys.completed, 0, -1)).toEqual([
        `${purchase.requestId}|9007199254740991|2|SK0000000012`,
      ]);
    });

    it('should trim completed members older than ten minutes and keep the recent ones', async () => {
      const sale = await openSale({ stock: 10 });
      const now = await redisNowMs();
      const old = completedMember(randomUUID(), 413, 1, 'SK0000000013');
      const recent = completedMember(randomUUID(), 414, 1, 'SK0000000014');
      await redis.zadd(sale.keys.completed, now - 10 * MINUTE - 1, old, now - 9 * MINUTE, recent);
      const purchase = await buy(sale, 415);

      await ledger.complete(sale.keys, [
        { requestId: purchase.requestId, userId: 415, orderNo: 'SK0000000015', quantity: 1 },
      ]);

      expect(await redis.zscore(sale.keys.completed, old)).toBeNull();
      expect(await redis.zscore(sale.keys.completed, recent)).toBe(String(now - 9 * MINUTE));
      expect(
        await redis.zscore(
          sale.keys.completed,
          completedMember(purchase.requestId, 415, 1, 'SK0000000015'),
        ),
      ).not.toBeNull();
    });
  });

  describe('preheat', () => {
    it('should load the stock and the meta on the first call', async () => {
      const sale = newSale();
      const startAt = new Date(Date.now() - HOUR);
      const endAt = new Date(Date.now() + HOUR);

      const result = await load.preheat(sale.keys, {
        totalStock: 12,
        stock: 10,
        startAt,
        endAt,
        perUserLimit: 3,
      });

      expect(result).toEqual({ loaded: true, lost: false, stock: 10 });
      expect(await redis.get(sale.keys.stock)).toBe('10');
      expect(await redis.hgetall(sale.keys.meta)).toEqual({
        total: '12',
        startAt: String(startAt.getTime()),
        endAt: String(endAt.getTime()),
        limit: '3',
        admission: 'open',
      });
    });

    it('should keep the live stock on a later call but rewrite the meta', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      expect((await buy(sale, 501, 2)).code).toBe(DeductCode.Accepted);
      const startAt = new Date(Date.now() - 2 * HOUR);
      const endAt = new Date(Date.now() + 3 * HOUR);

      const result = await load.preheat(sale.keys, {
        totalStock: 50,
        stock: 50,
        startAt,
        endAt,
        perUserLimit: 1,
      });

      expect(result).toEqual({ loaded: false, lost: false, stock: 8 });
      expect(await redis.get(sale.keys.stock)).toBe('8');
      expect(await redis.hgetall(sale.keys.meta)).toEqual({
        total: '50',
        startAt: String(startAt.getTime()),
        endAt: String(endAt.getTime()),
        limit: '1',
        admission: 'open',
      });
    });

    it('should refresh the meta of a sale Redis holds, and keep its stock', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      expect((await buy(sale, 511, 1)).code).toBe(DeductCode.Accepted);
      const endAt = new Date(Date.now() + 3 * HOUR);

      const result = await load.preheat(
        sale.keys,
        { totalStock: 10, stock: 10, startAt: new Date(Date.now() - HOUR), endAt, perUserLimit: 5 },
        undefined,
        { refresh: true },
      );

      expect(result).toEqual({ loaded: false, lost: false, stock: 9 });
      expect(await redis.hget(sale.keys.meta, 'endAt')).toBe(String(endAt.getTime()));
    });

    it('should write nothing on a refresh of a sale Redis has lost, so it stays NOT_PREHEATED', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      expect((await buy(sale, 512, 1)).code).toBe(DeductCode.Accepted);
      // Redis restarted empty between the caller's look and its refresh.
      await redis.del(sale.keys.stock, sale.keys.meta, sale.keys.buyers, sale.keys.inflight);

      const result = await load.preheat(
        sale.keys,
        {
          totalStock: 10,
          stock: 10,
          startAt: new Date(Date.now() - HOUR),
          endAt: new Date(Date.now() + HOUR),
          perUserLimit: 5,
        },
        undefined,
        { refresh: true },
      );

      expect(result).toEqual({ loaded: false, lost: true, stock: 0 });
      expect(await redis.exists(sale.keys.stock, sale.keys.meta)).toBe(0);
      expect((await buy(sale, 513, 1)).code).toBe(DeductCode.NotPreheated);
    });
  });

  describe('restock', () => {
    it('should give the quantity back to the stock, free the buyer slot and mark the order number as RESTOCKED', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      expect((await buy(sale, 701, 3)).code).toBe(DeductCode.Accepted);

      expect(await ledger.restock(sale.keys, 'SK0000000701', 701, 3)).toBe(RestockCode.Restocked);

      expect(await stockOf(sale)).toBe(10);
      expect(await redis.hexists(sale.keys.buyers, '701')).toBe(0);
      expect(await redis.smembers(sale.keys.restocked)).toEqual(['SK0000000701']);
      expect((await buy(sale, 701, 2)).code).toBe(DeductCode.Accepted);
    });

    it('should decrement the held quantity and keep the buyer while some is left', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      await redis.hset(sale.keys.buyers, '702', '3');

      expect(await ledger.restock(sale.keys, 'SK0000000702', 702, 2)).toBe(RestockCode.Restocked);
      expect(await redis.hget(sale.keys.buyers, '702')).toBe('1');
      expect(await stockOf(sale)).toBe(12);

      expect(await ledger.restock(sale.keys, 'SK0000000703', 702, 1)).toBe(RestockCode.Restocked);
      expect(await redis.hexists(sale.keys.buyers, '702')).toBe(0);
      expect(await stockOf(sale)).toBe(13);
    });

    it('should answer ALREADY_RESTOCKED to a second call with the same order number and change nothing', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      await buy(sale, 704, 2);
      expect(await ledger.restock(sale.keys, 'SK0000000704', 704, 2)).toBe(RestockCode.Restocked);
      await buy(sale, 705, 1);
      const before = await snapshot(sale);

      expect(await ledger.restock(sale.keys, 'SK0000000704', 704, 2)).toBe(
        RestockCode.AlreadyRestocked,
      );
      // Even with other arguments: the order number alone decides.
      expect(await ledger.restock(sale.keys, 'SK0000000704', 705, 1)).toBe(
        RestockCode.AlreadyRestocked,
      );
      expect(await snapshot(sale)).toEqual(before);
      expect(await stockOf(sale)).toBe(9);
    });

    it('should answer NOT_PREHEATED without a stock key, create no key and leave the order number unmarked', async () => {
      const empty = newSale();
      expect(await ledger.restock(empty.keys, 'SK0000000706', 706, 2)).toBe(
        RestockCode.NotPreheated,
      );
      expect(await redis.exists(empty.keys.stock, empty.keys.buyers, empty.keys.restocked)).toBe(0);

      const metaOnly = await openSale({ stock: 10 });
      await redis.hset(metaOnly.keys.buyers, '706', '2');
      await redis.del(metaOnly.keys.stock);
      const before = await snapshot(metaOnly);
      expect(await ledger.restock(metaOnly.keys, 'SK0000000706', 706, 2)).toBe(
        RestockCode.NotPreheated,
      );
      expect(await snapshot(metaOnly)).toEqual(before);

      // Not marked: once the sale is back in Redis, the same order can still be given back.
      await redis.set(metaOnly.keys.stock, '8');
      expect(await ledger.restock(metaOnly.keys, 'SK0000000706', 706, 2)).toBe(
        RestockCode.Restocked,
      );
      expect(await stockOf(metaOnly)).toBe(10);
    });

    it('should free the buyer slot of a user id of 16 digits', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const userId = Number.MAX_SAFE_INTEGER;
      expect((await buy(sale, userId, 2)).code).toBe(DeductCode.Accepted);
      expect(await redis.hgetall(sale.keys.buyers)).toEqual({ '9007199254740991': '2' });

      expect(await ledger.restock(sale.keys, 'SK0000000707', userId, 2)).toBe(
        RestockCode.Restocked,
      );

      expect(await redis.hgetall(sale.keys.buyers)).toEqual({});
      expect(await stockOf(sale)).toBe(10);
      expect((await buy(sale, userId)).code).toBe(DeductCode.Accepted);
    });
  });

  describe('retake (a late payment)', () => {
    const order = (userId: number, quantity = 1) => ({
      orderNo: `SK${String(userId).padStart(10, '0')}`,
      requestId: randomUUID(),
      userId,
      quantity,
    });

    it("should take a restocked order's unit again once, however often it is asked", async () => {
      const sale = await openSale({ stock: 3, limit: 5 });
      const late = order(1201, 2);
      await buy(sale, 1201, 2);
      expect(await ledger.restock(sale.keys, late.orderNo, 1201, 2)).toBe(RestockCode.Restocked);
      expect(await stockOf(sale)).toBe(3);

      expect(await ledger.retake(sale.keys, 'take', late)).toBe(RetakeCode.Retaken);
      const after = await snapshot(sale);
      expect(await ledger.retake(sale.keys, 'take', late)).toBe(RetakeCode.Already);
      expect(await snapshot(sale)).toEqual(after);
      expect(after.stock).toBe('1');
      expect(after.buyers).toEqual({ '1201': '2' });
      // Its cancel's restock, redelivered, gives nothing back.
      expect(await ledger.restock(sale.keys, late.orderNo, 1201, 2)).toBe(
        RestockCode.AlreadyRestocked,
      );
      expect(await stockOf(sale)).toBe(1);
    });

    it('should keep the unit of an order whose restock has not come, and make that restock a no-op', async () => {
      const sale = await openSale({ stock: 3, limit: 5 });
      const late = order(1202);
      await buy(sale, 1202);
      const before = await snapshot(sale);

      expect(await ledger.retake(sale.keys, 'take', late)).toBe(RetakeCode.Kept);
      expect((await snapshot(sale)).stock).toBe(before.stock);
      expect(await ledger.restock(sale.keys, late.orderNo, 1202, 1)).toBe(
        RestockCode.AlreadyRestocked,
      );
      expect(await stockOf(sale)).toBe(2);
      expect(await redis.hget(sale.keys.buyers, '1202')).toBe('1');
    });

    it('should refuse, changing nothing, when the unit is gone or the buyer holds another purchase', async () => {
      const sale = await openSale({ stock: 1, limit: 5 });
      const late = order(1203);
      await buy(sale, 1203);
      await ledger.restock(sale.keys, late.orderNo, 1203, 1);
      expect((await buy(sale, 1204)).code).toBe(DeductCode.Accepted);
      let before = await snapshot(sale);
      expect(await ledger.retake(sale.keys, 'take', late)).toBe(RetakeCode.SoldOut);
      expect(await snapshot(sale)).toEqual(before);

      const other = await openSale({ stock: 5, limit: 5 });
      const again = order(1205);
      await buy(other, 1205);
      await ledger.restock(other.keys, again.orderNo, 1205, 1);
      expect((await buy(other, 1205)).code).toBe(DeductCode.Accepted);
      before = await snapshot(other);
      expect(await ledger.retake(other.keys, 'take', again)).toBe(RetakeCode.BuyerHolds);
      expect(await snapshot(other)).toEqual(before);
      expect(await ledger.retake(newSale().keys, 'take', again)).toBe(RetakeCode.NotPreheated);
    });

    it('should give back what the order holds once, whether it was taken again or never restocked', async () => {
      const sale = await openSale({ stock: 4, limit: 5 });
      const retaken = order(1206);
      const kept = order(1207);
      await buy(sale, 1206);
      await buy(sale, 1207);
      await ledger.restock(sale.keys, retaken.orderNo, 1206, 1);
      await ledger.retake(sale.keys, 'take', retaken);
      expect(await stockOf(sale)).toBe(2);

      expect(await ledger.retake(sale.keys, 'give-back', retaken)).toBe(RetakeCode.Retaken);
      expect(await ledger.retake(sale.keys, 'give-back', kept)).toBe(RetakeCode.Retaken);
      expect(await ledger.retake(sale.keys, 'give-back', retaken)).toBe(RetakeCode.Already);
      expect(await ledger.retake(sale.keys, 'give-back', kept)).toBe(RetakeCode.Already);
      expect(await ledger.restock(sale.keys, kept.orderNo, 1207, 1)).toBe(
        RestockCode.AlreadyRestocked,
      );
      expect(await stockOf(sale)).toBe(4);
      expect(await redis.hgetall(sale.keys.buyers)).toEqual({});
    });

    it('should take the unit on a loan from another bucket without taking the home stock, writing the loan down as borrowed, and refuse a loan the sweeper voided', async () => {
      const sale = await openSale({ stock: 1, limit: 5 });
      const late = order(1211);
      await buy(sale, 1211);
      await ledger.restock(sale.keys, late.orderNo, 1211, 1);
      expect((await buy(sale, 1212)).code).toBe(DeductCode.Accepted);
      expect(await ledger.retake(sale.keys, 'take', late)).toBe(RetakeCode.SoldOut);

      const loan = { id: `retake:${late.orderNo}:a`, bucket: 2 };
      expect(await ledger.retake(sale.keys, 'take', late, loan)).toBe(RetakeCode.Retaken);
      const after = await snapshot(sale);
      expect(after.stock).toBe('0');
      expect(after.buyers).toEqual({ '1211': '1', '1212': '1' });
      expect(after.borrowed).toEqual({ [loan.id]: '2' });
      expect(Object.keys(after.retaken)).toEqual([late.orderNo]);
      // A later attempt's loan is not written down: the caller gives that one back.
      const again = { id: `retake:${late.orderNo}:b`, bucket: 1 };
      expect(await ledger.retake(sale.keys, 'take', late, again)).toBe(RetakeCode.Already);
      expect(await snapshot(sale)).toEqual(after);

      const other = await openSale({ stock: 1, limit: 5 });
      const slow = order(1213);
      await buy(other, 1213);
      await ledger.restock(other.keys, slow.orderNo, 1213, 1);
      expect((await buy(other, 1214)).code).toBe(DeductCode.Accepted);
      const voided = { id: `retake:${slow.orderNo}:a`, bucket: 3 };
      await redis.zadd(other.keys.voided, Date.now(), voided.id);
      const before = await snapshot(other);
      expect(await ledger.retake(other.keys, 'take', slow, voided)).toBe(RetakeCode.LoanVoided);
      expect(await snapshot(other)).toEqual(before);
    });

    it("should have a rebuild count a retaken unit that MySQL's snapshot still has as cancelled", async () => {
      const sale = await openSale({ stock: 3, limit: 5 });
      const late = { ...order(1208), requestId: (await buy(sale, 1208)).requestId };
      await ledger.complete(sale.keys, [{ ...late }]);
      await ledger.restock(sale.keys, late.orderNo, 1208, 1);
      await ledger.retake(sale.keys, 'take', late);
      const since = await redisNowMs();

      // The retake's MySQL commit (PAID) has not come: the snapshot has the order as cancelled.
      const result = await repair.rebuild(sale.keys, 3, since, [], [late.orderNo]);
      expect(result).toEqual({ stock: 2, usedQuantity: 1, buyerCount: 1 });
      // Then it commits: MySQL has it PAID, restocked in Redis, and the rebuild counts it once.
      const paid = { ...late };
      expect(await repair.rebuild(sale.keys, 3, since, [paid])).toEqual({
        stock: 2,
        usedQuantity: 1,
        buyerCount: 1,
      });
    });
  });

  describe('snapshot', () => {
    it('should report a null stock and zero quantities when the sale is not preheated', async () => {
      const sale = newSale();

      expect(await repair.snapshot(sale.keys)).toEqual({
        stock: null,
        buyersQuantity: 0,
        inFlightQuantity: 0,
        inFlightCount: 0,
        loans: [],
      });
      expect(await redis.exists(sale.keys.stock, sale.keys.buyers, sale.keys.inflight)).toBe(0);
    });

    it('should report a stock of 0, not null, for a sold-out sale', async () => {
      const sale = await openSale({ stock: 0 });

      expect((await repair.snapshot(sale.keys)).stock).toBe(0);
    });

    it('should report the stock, the buyers quantity and the in-flight quantity and count after purchases', async () => {
      const sale = await openSale({ stock: 10, limit: 3 });
      for (const [userId, quantity] of [
        [801, 1],
        [802, 2],
        [803, 3],
      ]) {
        expect((await buy(sale, userId, quantity)).code).toBe(DeductCode.Accepted);
      }

      expect(await repair.snapshot(sale.keys)).toEqual({
        stock: 4,
        buyersQuantity: 6,
        inFlightQuantity: 6,
        inFlightCount: 3,
        loans: [],
      });
    });

    it('should drop a completed request from the in-flight numbers but keep its stock and buyer', async () => {
      const sale = await openSale({ stock: 10, limit: 3 });
      await buy(sale, 804, 1);
      const completed = await buy(sale, 805, 2);
      await buy(sale, 806, 3);

      await ledger.complete(sale.keys, [
        { requestId: completed.requestId, userId: 805, orderNo: 'SK0000000805', quantity: 1 },
      ]);

      expect(await repair.snapshot(sale.keys)).toEqual({
        stock: 4,
        buyersQuantity: 6,
        inFlightQuantity: 4,
        inFlightCount: 2,
        loans: [],
      });
    });
  });

  describe('rebuild', () => {
    const activeOrder = (userId: number, quantity: number): ActiveOrderRef => ({
      requestId: randomUUID(),
      userId,
      quantity,
      orderNo: `SK${String(userId).padStart(10, '0')}`,
    });

    it('should return null and write nothing when the sale has no meta', async () => {
      const empty = newSale();
      expect(await repair.rebuild(empty.keys, 10, 0, [activeOrder(900, 1)])).toBeNull();
      expect(await redis.exists(empty.keys.stock, empty.keys.buyers)).toBe(0);

      const stockOnly = newSale();
      await redis.set(stockOnly.keys.stock, '5');
      expect(await repair.rebuild(stockOnly.keys, 10, 0, [activeOrder(900, 1)])).toBeNull();
      expect(await stockOf(stockOnly)).toBe(5);
      expect(await redis.exists(stockOnly.keys.buyers)).toBe(0);
    });

    it("should mark the snapshot's cancelled orders as restocked so a late restock adds nothing", async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const first = await buy(sale, 950, 2);
      await ledger.complete(sale.keys, [
        { requestId: first.requestId, userId: 950, orderNo: 'SK0000000950', quantity: 1 },
      ]);
      // MySQL has cancelled that order; its Redis restock has not run yet when the repair reads.
      const completedAt = await redisNowMs();
      let since = completedAt;
      while (since <= completedAt) since = await redisNowMs();
      await repair.rebuild(sale.keys, 10, since, [], ['SK0000000950', 'SK0000000951']);
      expect(await stockOf(sale)).toBe(10);
      expect(await redis.sismember(sale.keys.restocked, 'SK0000000950')).toBe(1);

      expect((await buy(sale, 950, 2)).code).toBe(DeductCode.Accepted);
      expect(await ledger.restock(sale.keys, 'SK0000000950', 950, 2)).toBe(
        RestockCode.AlreadyRestocked,
      );
      expect(await stockOf(sale)).toBe(8);
      expect(await redis.hget(sale.keys.buyers, '950')).toBe('2');
    });

    it('should not count an active order of the snapshot whose stock came back since (cancelled or expired after the snapshot)', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const kept = activeOrder(960, 2);
      const expired = activeOrder(961, 3);
      await redis.set(sale.keys.stock, '5');
      await redis.hset(sale.keys.buyers, '960', '2', '961', '3');
      const since = await redisNowMs();
      // MySQL's snapshot is read (both active), then 961's order expires and its stock comes back.
      expect(await ledger.restock(sale.keys, expired.orderNo, 961, 3)).toBe(RestockCode.Restocked);
      expect(await stockOf(sale)).toBe(8);

      const result = await repair.rebuild(sale.keys, 10, since, [kept, expired]);

      expect(result).toEqual({ stock: 8, usedQuantity: 2, buyerCount: 1 });
      expect(await redis.hgetall(sale.keys.buyers)).toEqual({ '960': '2' });
      // Its restock, sent again, adds nothing.
      expect(await ledger.restock(sale.keys, expired.orderNo, 961, 3)).toBe(
        RestockCode.AlreadyRestocked,
      );
      expect(await stockOf(sale)).toBe(8);
    });

    it('should not count an order that landed after the snapshot time and was cancelled and given back before the rebuild', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const since = await redisNowMs();
      // Between the repair's clock read and its script: the purchase lands, its buyer cancels,
      // and its stock comes back. MySQL's snapshot has it active or cancelled; either way it
      // is in the `completed` zset from `since` on, and in `restocked`.
      const purchase = await buy(sale, 962, 2);
      await ledger.complete(sale.keys, [
        { requestId: purchase.requestId, userId: 962, orderNo: 'SK0000000962', quantity: 2 },
      ]);
      expect(await ledger.restock(sale.keys, 'SK0000000962', 962, 2)).toBe(RestockCode.Restocked);
      expect(await stockOf(sale)).toBe(10);

      for (const snapshotActive of [
        [{ requestId: purchase.requestId, userId: 962, quantity: 2, orderNo: 'SK0000000962' }],
        [],
      ]) {
        const result = await repair.rebuild(sale.keys, 10, since, snapshotActive);

        expect(result).toEqual({ stock: 10, usedQuantity: 0, buyerCount: 0 });
        expect(await redis.hgetall(sale.keys.buyers)).toEqual({});
      }
    });

    it('should count an active order that is also still in flight once', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const purchase = await buy(sale, 901, 2);
      const since = await redisNowMs();

      const result = await repair.rebuild(sale.keys, 10, since, [
        { requestId: purchase.requestId, userId: 901, quantity: 2, orderNo: 'SK0000000901' },
      ]);

      expect(result).toEqual({ stock: 8, usedQuantity: 2, buyerCount: 1 });
      expect(await stockOf(sale)).toBe(8);
      expect(await redis.hgetall(sale.keys.buyers)).toEqual({ '901': '2' });
      expect(await redis.hget(sale.keys.inflight, purchase.requestId)).toBe(purchase.message);
    });

    it('should rewrite the stock and the buyers hash exactly from the active and in-flight purchases', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const inflight = await buy(sale, 902, 2);
      await redis.hset(sale.keys.buyers, '902', '5', '904', '4');
      await redis.set(sale.keys.stock, '0');
      const since = await redisNowMs();

      const result = await repair.rebuild(sale.keys, 10, since, [activeOrder(903, 3)]);

      expect(result).toEqual({ stock: 5, usedQuantity: 5, buyerCount: 2 });
      expect(await stockOf(sale)).toBe(5);
      // 902 is corrected from the in-flight message, 904 is in no source and goes.
      expect(await redis.hgetall(sale.keys.buyers)).toEqual({ '902': '2', '903': '3' });
      expect(await redis.hkeys(sale.keys.inflight)).toEqual([inflight.requestId]);
    });

    it('should count a request completed after completedSince that the active list misses, once even when the list has it', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const since = await redisNowMs();
      const missing = await buy(sale, 911, 2);
      const listed = await buy(sale, 912, 1);
      await ledger.complete(sale.keys, [
        { requestId: missing.requestId, userId: 911, orderNo: 'SK0000000911', quantity: 1 },
        { requestId: listed.requestId, userId: 912, orderNo: 'SK0000000912', quantity: 1 },
      ]);
      const score = Number(
        await redis.zscore(
          sale.keys.completed,
          completedMember(missing.requestId, 911, 2, 'SK0000000911'),
        ),
      );
      expect(score).toBeGreaterThanOrEqual(since);
      await redis.hdel(sale.keys.buyers, '911', '912');

      const result = await repair.rebuild(sale.keys, 10, since, [
        { requestId: listed.requestId, userId: 912, quantity: 1, orderNo: 'SK0000000912' },
      ]);

      expect(result).toEqual({ stock: 7, usedQuantity: 3, buyerCount: 2 });
      expect(await redis.hgetall(sale.keys.buyers)).toEqual({ '911': '2', '912': '1' });
    });

    it('should not count a request completed before completedSince that the active list misses', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const purchase = await buy(sale, 921, 2);
      await ledger.complete(sale.keys, [
        { requestId: purchase.requestId, userId: 921, orderNo: 'SK0000000921', quantity: 1 },
      ]);
      const score = Number(
        await redis.zscore(
          sale.keys.completed,
          completedMember(purchase.requestId, 921, 2, 'SK0000000921'),
        ),
      );
      let since = await redisNowMs();
      while (since <= score) since = await redisNowMs();

      // Not in MySQL's active orders any more: it was cancelled since.
      const result = await repair.rebuild(sale.keys, 10, since, []);

      expect(result).toEqual({ stock: 10, usedQuantity: 0, buyerCount: 0 });
      expect(await stockOf(sale)).toBe(10);
      expect(await redis.exists(sale.keys.buyers)).toBe(0);
    });

    it('should treat completedSince as inclusive', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const since = await redisNowMs();
      await redis.zadd(
        sale.keys.completed,
        since - 1,
        completedMember(randomUUID(), 931, 1, 'SK0000000931'),
        since,
        completedMember(randomUUID(), 932, 2, 'SK0000000932'),
      );

      expect(await repair.rebuild(sale.keys, 10, since, [])).toEqual({
        stock: 8,
        usedQuantity: 2,
        buyerCount: 1,
      });
      expect(await redis.hgetall(sale.keys.buyers)).toEqual({ '932': '2' });
    });

    it('should count a completed member written without its order number (by an older instance)', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const since = await redisNowMs();
      await redis.zadd(sale.keys.completed, since, `${randomUUID()}|933|3`);

      expect(await repair.rebuild(sale.keys, 10, since, [])).toEqual({
        stock: 7,
        usedQuantity: 3,
        buyerCount: 1,
      });
      expect(await redis.hgetall(sale.keys.buyers)).toEqual({ '933': '3' });
    });

    it('should never set the stock below 0 when more is used than the total', async () => {
      const sale = await openSale({ stock: 3, limit: 5 });
      expect((await buy(sale, 941, 1)).code).toBe(DeductCode.Accepted);
      const since = await redisNowMs();

      const result = await repair.rebuild(sale.keys, 3, since, [
        activeOrder(942, 2),
        activeOrder(943, 2),
      ]);

      expect(result).toEqual({ stock: 0, usedQuantity: 5, buyerCount: 3 });
      expect(await stockOf(sale)).toBe(0);
      expect((await buy(sale, 944)).code).toBe(DeductCode.SoldOut);
    });

    it('should write the stock again when only the meta is left', async () => {
      const sale = await openSale({ stock: 10 });
      await redis.del(sale.keys.stock);

      expect(
        await repair.rebuild(sale.keys, 10, await redisNowMs(), [activeOrder(951, 4)]),
      ).toEqual({ stock: 6, usedQuantity: 4, buyerCount: 1 });
      expect(await stockOf(sale)).toBe(6);
    });

    it('should key the buyers of 16-digit user ids in full from every source', async () => {
      const sale = await openSale({ stock: 10, limit: 5 });
      const since = await redisNowMs();
      const completedUser = Number.MAX_SAFE_INTEGER - 2;
      const completed = await buy(sale, completedUser, 3);
      await ledger.complete(sale.keys, [
        {
          requestId: completed.requestId,
          userId: completedUser,
          orderNo: 'SK0000000961',
          quantity: 1,
        },
      ]);
      await buy(sale, Number.MAX_SAFE_INTEGER, 1);

      const result = await repair.rebuild(sale.keys, 10, since, [
        activeOrder(Number.MAX_SAFE_INTEGER - 1, 2),
      ]);

      expect(result).toEqual({ stock: 4, usedQuantity: 6, buyerCount: 3 });
      expect(await redis.hgetall(sale.keys.buyers)).toEqual({
        '9007199254740989': '3',
        '9007199254740990': '2',
        '9007199254740991': '1',
      });
    });

    it('should write every buyer when there are more than 1000 of them', async () => {
      const sale = await openSale({ stock: 10_000, limit: 5 });
      const orders = Array.from({ length: 1_500 }, (_, i) => activeOrder(100_000 + i, (i % 3) + 1));
      const used = orders.reduce((sum, order) => sum + order.quantity, 0);

      const result = await repair.rebuild(sale.keys, 10_000, await redisNowMs(), orders);

      expect(result).toEqual({ stock: 10_000 - used, usedQuantity: used, buyerCount: 1_500 });
      expect(await stockOf(sale)).toBe(10_000 - used);
      expect(await redis.hgetall(sale.keys.buyers)).toEqual(
        Object.fromEntries(orders.map((order) => [String(order.userId), String(order.quantity)])),
      );
    });
  });

  describe('loans between buckets', () => {
    it('should lend stock once and write the loan down, and lend nothing when short', async () => {
      const lender = await openSale({ stock: 2 });
      const requestId = randomUUID();
      expect(await loans.loan(lender.keys, requestId, 2, 77, 3)).toEqual({
        code: LoanCode.Lent,
        remaining: 0,
      });
      const loan = JSON.parse((await redis.hget(lender.keys.loans, requestId))!) as {
        quantity: number;
        home: number;
        userId: string;
      };
      expect(loan).toMatchObject({ quantity: 2, home: 3, userId: '77' });
      expect(await loans.loan(lender.keys, randomUUID(), 1, 78, 3)).toEqual({
        code: LoanCode.Empty,
        remaining: 0,
      });
      expect(await loans.loan(newSale().keys, randomUUID(), 1, 78, 3)).toEqual({
        code: LoanCode.NotPreheated,
        remaining: 0,
      });
    });

    it('should give a loan back exactly once, or drop it without giving it back', async () => {
      const lender = await openSale({ stock: 5 });
      const [back, kept] = [randomUUID(), randomUUID()];
      await loans.loan(lender.keys, back, 2, 1, 0);
      await loans.loan(lender.keys, kept, 1, 2, 0);
      expect(await stockOf(lender)).toBe(2);
      expect(await loans.settleLoan(lender.keys, back, true)).toBe(2);
      expect(await loans.settleLoan(lender.keys, back, true)).toBe(0);
      expect(await loans.settleLoan(lender.keys, kept, false)).toBe(1);
      expect(await stockOf(lender)).toBe(4);
      expect(await redis.hlen(lender.keys.loans)).toBe(0);
    });

    it('should take stock once for a loan command run twice (a resend after a reconnect), and refuse one run after its settle', async () => {
      const lender = await openSale({ stock: 5 });
      const requestId = randomUUID();
      expect((await loans.loan(lender.keys, requestId, 2, 7, 1)).code).toBe(LoanCode.Lent);
      expect(await loans.loan(lender.keys, requestId, 2, 7, 1)).toEqual({
        code: LoanCode.Lent,
        remaining: 3,
      });
      expect(await stockOf(lender)).toBe(3);
      expect(await loans.settleLoan(lender.keys, requestId, true)).toBe(2);
      expect(await loans.loan(lender.keys, requestId, 2, 7, 1)).toEqual({
        code: LoanCode.Empty,
        remaining: 5,
      });
      expect(await stockOf(lender)).toBe(5);
      expect(await redis.hlen(lender.keys.loans)).toBe(0);
    });

    it('should tell the loan sweeper that a recorded purchase released at home has its stock back there, so its loan is not given back as well', async () => {
      const home = await openSale({ stock: 0 });
      const purchase = await buyBorrowed(home, 20);
      expect(await ledger.release(home.keys, purchase.requestId, false, 'UNAVAILABLE', 20)).toBe(
        ReleaseCode.Released,
      );
      expect(await stockOf(home)).toBe(1);
      // The sweeper's question for the loan still open in the lending bucket.
      expect(
        await ledger.release(home.keys, purchase.requestId, false, 'UNAVAILABLE', 20, true),
      ).toBe(ReleaseCode.Recorded);
      // A request voided without ever being recorded still has its loan given back.
      const never = randomUUID();
      expect(await ledger.release(home.keys, never, false, 'UNAVAILABLE', 21, true)).toBe(
        ReleaseCode.NotInFlight,
      );
      expect(await ledger.release(home.keys, never, false, 'UNAVAILABLE', 21, true)).toBe(
        ReleaseCode.NotInFlight,
      );
      expect(await stockOf(home)).toBe(1);
    });

    it('should tell the loan sweeper that a purchase recorded on its loan was recorded, long after its order completed, was cancelled and the buyer bought again', async () => {
      const lender = await openSale({ stock: 2 });
      const home = await openSale({ stock: 0 });
      const userId = 30;
      const requestId = randomUUID();
      expect((await loans.loan(lender.keys, requestId, 1, userId, 0)).code).toBe(LoanCode.Lent);
      const purchase = await buyBorrowed(home, userId, 1, requestId);
      expect(purchase.code).toBe(DeductCode.Accepted);
      // The loan's drop (settleLoan, fire and forget) is lost: the loan stays open.
      await ledger.claim(home.keys, [requestId], CONSUMER, MINUTE);
      await ledger.complete(home.keys, [{ requestId, userId, orderNo: 'SK-loaned', quantity: 1 }]);
      // The sweep comes more than ten minutes later: the completed log has been trimmed.
      await redis.del(home.keys.completed);
      // The order is cancelled (its stock comes back at home) and the buyer buys again.
      expect(await ledger.restock(home.keys, 'SK-loaned', userId, 1)).toBe(RestockCode.Restocked);
      const again = await buy(home, userId);
      expect(again.code).toBe(DeductCode.Accepted);
      expect(await resultOf(home, userId)).toMatchObject({ requestId: again.requestId });

      expect(await ledger.release(home.keys, requestId, false, 'UNAVAILABLE', userId, true)).toBe(
        ReleaseCode.Recorded,
      );
      expect(await redis.zscore(home.keys.voided, requestId)).toBeNull();
      expect(await stockOf(home)).toBe(0);
    });

    it('should record a borrowed purchase without touching the home stock, after the per-user checks', async () => {
      const home = await openSale({ stock: 0 });
      const message = (requestId: string) =>
        encodeOrderMessage({
          requestId,
          orderNo: `SK${Date.now()}${requestId.slice(0, 8).toUpperCase()}`,
          userId: 5,
          goodsId: home.goodsId,
          quantity: 1,
          acceptedAt: Date.now(),
        });
      expect((await buy(home, 5)).code).toBe(DeductCode.SoldOut);
      const first = randomUUID();
      expect(await ledger.deduct(home.keys, 5, 1, first, message(first), 3)).toEqual({
        code: DeductCode.Accepted,
        remaining: 0,
      });
      expect(await redis.hget(home.keys.buyers, '5')).toBe('1');
      expect(await redis.hexists(home.keys.inflight, first)).toBe(1);
      // Written down with its lending bucket, for the loan sweeper.
      expect(await redis.hgetall(home.keys.borrowed)).toEqual({ [first]: '3' });
      const second = randomUUID();
      expect((await ledger.deduct(home.keys, 5, 1, second, message(second), 3)).code).toBe(
        DeductCode.AlreadyPurchased,
      );
      expect(await redis.hexists(home.keys.borrowed, second)).toBe(0);
      expect(await stockOf(home)).toBe(0);
    });

    it('should void an unrecorded request (a late record is then refused) and leave a recorded one alone', async () => {
      const home = await openSale({ stock: 0 });
      const recorded = await buyBorrowed(home, 10);
      expect(
        await ledger.release(home.keys, recorded.requestId, false, 'UNAVAILABLE', 10, true),
      ).toBe(ReleaseCode.Recorded);
      expect(await redis.hexists(home.keys.inflight, recorded.requestId)).toBe(1);

      const never = randomUUID();
      expect(await ledger.release(home.keys, never, false, 'UNAVAILABLE', 11, true)).toBe(
        ReleaseCode.NotInFlight,
      );
      expect((await buyBorrowed(home, 11, 1, never)).code).toBe(DeductCode.Voided);
      expect(await redis.hexists(home.keys.borrowed, never)).toBe(0);
    });

    it("should count a bucket's open loans as used when rebuilding, and write nothing in a dry run", async () => {
      const bucket = await openSale({ stock: 10 });
      await loans.loan(bucket.keys, randomUUID(), 3, 1, 1);
      const since = await redisNowMs();
      const dry = await repair.rebuild(bucket.keys, 0, since, [], [], true);
      expect(dry).toEqual({ stock: 0, usedQuantity: 3, buyerCount: 0 });
      expect(await stockOf(bucket)).toBe(7);
      expect(await repair.rebuild(bucket.keys, 10, since, [])).toEqual({
        stock: 7,
        usedQuantity: 3,
        buyerCount: 0,
      });
    });
  });

  describe('a repair freeze', () => {
    const orderMessage = (sale: Sale, userId: number, requestId: string) =>
      encodeOrderMessage({
        requestId,
        orderNo: `SK${Date.now()}${requestId.slice(0, 8).toUpperCase()}`,
        userId,
        goodsId: sale.goodsId,
        quantity: 1,
        acceptedAt: Date.now(),
      });

    it('should refuse a purchase in a frozen bucket as FROZEN, in either mode, and change nothing', async () => {
      const sale = await openSale({ stock: 3 });
      expect(await repair.freeze(sale.keys, 'freeze', 'repair-1', MINUTE)).toBe(true);
      const before = await snapshot(sale);
      for (const borrowedFrom of [undefined, 1]) {
        const requestId = randomUUID();
        expect(
          await ledger.deduct(
            sale.keys,
            7,
            1,
            requestId,
            orderMessage(sale, 7, requestId),
            borrowedFrom,
          ),
        ).toEqual({ code: DeductCode.Frozen, remaining: 3 });
      }
      expect(await snapshot(sale)).toEqual(before);
    });

    it('should refuse a loan from a frozen bucket as FROZEN and change nothing', async () => {
      const lender = await openSale({ stock: 3 });
      await repair.freeze(lender.keys, 'freeze', 'repair-1', MINUTE);
      const before = await snapshot(lender);
      expect(await loans.loan(lender.keys, randomUUID(), 1, 7, 0)).toEqual({
        code: LoanCode.Frozen,
        remaining: 3,
      });
      expect(await snapshot(lender)).toEqual(before);
    });

    it('should sell and lend again once the freeze is thawed or has lapsed', async () => {
      const thawed = await openSale({ stock: 3 });
      await repair.freeze(thawed.keys, 'freeze', 'repair-1', MINUTE);
      expect(await repair.freeze(thawed.keys, 'thaw', 'repair-1')).toBe(true);
      expect((await buy(thawed, 7)).code).toBe(DeductCode.Accepted);

      const lapsed = await openSale({ stock: 3 });
      // A repairer that died: its mark is in the past by this server's clock.
      await redis.hset(lapsed.keys.meta, 'frozenUntil', (await redisNowMs()) - 1, 'frozenBy', 'x');
      expect((await buy(lapsed, 7)).code).toBe(DeductCode.Accepted);
      expect((await loans.loan(lapsed.keys, randomUUID(), 1, 8, 0)).code).toBe(LoanCode.Lent);
      expect(await stockOf(lapsed)).toBe(1);
    });

    it("should refuse another repair's freeze while one is in force, and take over a lapsed one", async () => {
      const sale = await openSale();
      expect(await repair.freeze(sale.keys, 'freeze', 'first', MINUTE)).toBe(true);
      expect(await repair.freeze(sale.keys, 'freeze', 'second', MINUTE)).toBe(false);
      expect(await repair.freeze(sale.keys, 'thaw', 'second')).toBe(false);
      expect(await repair.freeze(sale.keys, 'held', 'first')).toBe(true);
      expect(await repair.freeze(sale.keys, 'held', 'second')).toBe(false);

      await redis.hset(sale.keys.meta, 'frozenUntil', (await redisNowMs()) - 1);
      expect(await repair.freeze(sale.keys, 'held', 'first')).toBe(false);
      expect(await repair.freeze(sale.keys, 'freeze', 'second', MINUTE)).toBe(true);
      // The first repair finds its freeze broken and must not thaw the second's.
      expect(await repair.freeze(sale.keys, 'thaw', 'first')).toBe(false);
      expect(await repair.freeze(sale.keys, 'held', 'second')).toBe(true);
      expect(await repair.freeze(sale.keys, 'thaw', 'second')).toBe(true);
      expect(await redis.hmget(sale.keys.meta, 'frozenUntil', 'frozenBy')).toEqual([null, null]);
    });
  });

  describe('NOSCRIPT resilience', () => {
    it('should still deduct after the server lost its script cache', async () => {
      // The body as the loader sends it: its libraries pasted in.
      const lua = withIncludes(
        fileURLToPath(new URL('../../../lua/', import.meta.url)),
        'seckill-deduct.lua',
      );
      const sha = createHash('sha1').update(lua).digest('hex');
      const sale = await openSale({ stock: 10 });
      expect((await buy(sale, 601)).code).toBe(DeductCode.Accepted);
      expect(await redis.script('EXISTS', sha)).toEqual([1]);

      await redis.script('FLUSH');
      expect(await redis.script('EXISTS', sha)).toEqual([0]);

      expect(await buy(sale, 602)).toMatchObject({ code: DeductCode.Accepted, remaining: 8 });
      expect(await redis.script('EXISTS', sha)).toEqual([1]);
    });
  });

  describe('auto-pipelining', () => {
    it("should answer every command of a tick, the first throttle calls' among them", async () => {
      // A client of its own, as the app's: commands of one tick share a pipeline.
      const piped = new Redis(process.env.REDIS_URL!, { enableAutoPipelining: true });
      const pipedLua = new LuaScriptsService(piped);
      pipedLua.onModuleInit();
      const pipedThrottle = new ThrottleScripts(pipedLua);
      const tracker = `spec-${randomUUID()}`;
      const budget = (name: string) => ({
        keys: throttleKeys(name, tracker),
        windowMs: 60_000,
        limit: 10,
        blockMs: 60_000,
      });
      try {
        const [value, one, two] = await Promise.all([
          piped.get(`seckill:spec:${tracker}`),
          pipedThrottle.throttleHits([budget('a')]),
          pipedThrottle.throttleHits([budget('b'), budget('c')]),
        ]);
        expect(value).toBeNull();
        expect(one).toMatchObject({ refused: -1, totalHits: 1 });
        expect(two).toMatchObject({ refused: -1, totalHits: 1 });
      } finally {
        const keys = ['a', 'b', 'c'].flatMap((name) => Object.values(throttleKeys(name, tracker)));
        await piped.del(...keys);
        piped.disconnect();
      }
    }, 10_000);
  });
});
