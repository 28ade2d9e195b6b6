import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LuaScriptsService } from '../../infra/redis/lua-scripts.service.js';
import { queueKeys, queueRestoreKeys, saleKeys } from '../../infra/redis/seckill-keys.js';
import { encodeOrderMessage } from '../messaging/order-message.js';
import { DeductCode, LedgerScripts, ReleaseCode } from '../sale-store/ledger.scripts.js';
import { LoadScripts } from '../sale-store/load.scripts.js';
import { ADMIT_BATCH, JoinCode, QueueScripts, type TickParams } from './queue.scripts.js';

const HOUR = 60 * 60 * 1000;

describe("the waiting room's scripts (real Redis)", () => {
  let redis: Redis;
  let lua: LuaScriptsService;
  let queue: QueueScripts;
  let load: LoadScripts;
  let ledger: LedgerScripts;
  // Goods ids far from anything the e2e tests create, unique per run.
  const goodsId = 910_000_000 + Math.floor(Math.random() * 90_000);

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
    lua = new LuaScriptsService(redis);
    lua.onModuleInit();
    queue = new QueueScripts(lua);
    load = new LoadScripts(lua);
    ledger = new LedgerScripts(lua);
  });

  /** A standing, the room being the journal's (as the restore leaves it). */
  const standing = async (goods: number, userId: number, endAt: number) => {
    const read = await queue.status(goods, userId, endAt);
    if (read === null) throw new Error('the room is not the journal’s');
    return read;
  };
  /** The room as a restore (or the first one, of an empty journal) leaves it: the journal's. */
  const journalRoom = async () =>
    redis.hset(
      queueKeys(goodsId).state,
      'journal',
      /run_id:(\w+)/.exec(await redis.info('server'))![1],
    );

  /** Redis's clock (ms), which every script judges by. */
  const redisNow = async () => {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  /** Until Redis's clock has passed `ms`: the scripts' time, not this process's, decides. */
  const untilRedisPasses = async (ms: number) => {
    while ((await redisNow()) <= ms) await new Promise((resolve) => setImmediate(resolve));
  };

  /** A queue sale that started a moment ago, its buyers joined before the start. */
  const startedSale = async (buyers: number[], { stock = 10, endInMs = HOUR } = {}) => {
    const far = Date.now() + HOUR;
    await load.preheat(saleKeys(goodsId), {
      totalStock: stock,
      stock,
      startAt: new Date(Date.now() - 1_000),
      endAt: new Date(Date.now() + endInMs),
      perUserLimit: 1,
      admission: 'queue',
    });
    await journalRoom();
    for (const userId of buyers) {
      await queue.join(goodsId, userId, { opensAt: 0, startAt: far, endAt: far + HOUR });
    }
    const startAt = Date.now() - 1_000;
    const endAt = Date.now() + endInMs;
    const params = (change: Partial<TickParams> = {}): TickParams => ({
      drawAt: startAt,
      buyFrom: startAt,
      endAt,
      admitPerSecond: 100_000,
      admissionTtlMs: HOUR,
      stockFactor: 1,
      seed: randomBytes(16).toString('hex'),
      preSize: buyers.length,
      paused: false,
      gapMs: HOUR,
      ...change,
    });
    return { endAt, params };
  };

  const buy = (userId: number, requestId = randomUUID()) =>
    ledger.deduct(
      saleKeys(goodsId),
      userId,
      1,
      requestId,
      encodeOrderMessage({
        requestId,
        orderNo: `SK${requestId.replace(/-/g, '').slice(0, 20)}`,
        userId,
        goodsId,
        quantity: 1,
        acceptedAt: Date.now(),
      }),
    );

  afterEach(async () => {
    await redis.del(
      ...Object.values(queueKeys(goodsId)),
      ...Object.values(saleKeys(goodsId)).filter((key) => typeof key === 'string'),
    );
  });

  afterAll(async () => {
    await redis.quit();
  });

  it("should mark a restored room the journal's only when its restore was written whole on this server, by no other restore since", async () => {
    const far = Date.now() + HOUR;
    const restore = (...args: (string | number)[]) =>
      lua.run('queueRestore', ...queueRestoreKeys(goodsId), ...args) as Promise<number>;
    // begin: no seed, no preSize, head 0, preSeq 2, seq 0, no clock; then the token.
    const begin = (token: string) => restore('begin', '', '', 0, 2, 0, '', token);

    // Redis restarts empty between two steps: the steps after it reach the new server alone.
    await begin('a');
    await restore('pre', 0, 71);
    await redis.del(...Object.values(queueKeys(goodsId)));
    await restore('pre', 1, 72);
    expect(await restore('open', 'a')).toBe(0);
    // Not the journal's: a standing says "being restored", never NOT_JOINED for buyer 71.
    expect(await queue.status(goodsId, 71, far)).toBeNull();

    // Two restores of one room (a lock lost with a restart): the one begun first never marks it.
    await begin('b');
    await begin('c');
    await restore('pre', 0, 71, 1, 72);
    expect(await restore('open', 'b')).toBe(0);
    expect(await queue.status(goodsId, 71, far)).toBeNull();
    expect(await restore('open', 'c')).toBe(1);
    expect((await standing(goodsId, 71, far)).state).toBe('WAITING');
    expect((await standing(goodsId, 72, far)).state).toBe('WAITING');
  });

  it('should admit a pre-queue larger than a batch in the places its standings showed, each buyer once', async () => {
    const buyers = Array.from({ length: ADMIT_BATCH + 500 }, (_, i) => 5_000 + i);
    const far = Date.now() + HOUR;
    const window = { opensAt: 0, startAt: far, endAt: far + HOUR };
    await load.preheat(saleKeys(goodsId), {
      totalStock: buyers.length,
      stock: buyers.length,
      startAt: new Date(far),
      endAt: new Date(far + HOUR),
      perUserLimit: 1,
      admission: 'queue',
    });
    await journalRoom();
    const joined = await Promise.all(buyers.map((userId) => queue.join(goodsId, userId, window)));
    expect(joined.every(({ code }) => code === JoinCode.Joined)).toBe(true);
    expect((await standing(goodsId, buyers[0], far + HOUR)).ahead).toBeNull();

    // The start, as the ticking instance sees it; paused, the tick draws the seed and admits none.
    const startAt = Date.now() - 1;
    const params = (paused: boolean): TickParams => ({
      drawAt: startAt,
      buyFrom: startAt,
      endAt: startAt + HOUR,
      admitPerSecond: 100_000,
      admissionTtlMs: HOUR,
      stockFactor: 1,
      seed: randomBytes(16).toString('hex'),
      preSize: buyers.length,
      paused,
      gapMs: HOUR,
    });
    // A seed drawn for another pre-queue (one join more or less) is not taken: nothing is done.
    for (const preSize of [buyers.length - 1, buyers.length + 1]) {
      expect(await queue.tick(goodsId, { ...params(false), preSize })).toMatchObject({
        admitted: 0,
        drawn: false,
        undrawn: true,
        preSize: buyers.length,
      });
    }
    expect(await redis.hget(queueKeys(goodsId).state, 'seed')).toBeNull();
    expect(await queue.tick(goodsId, params(true))).toMatchObject({
      admitted: 0,
      lapsed: 0,
      drawn: true,
      undrawn: false,
      stopped: true,
      preSize: buyers.length,
    });
    const places = new Map<number, number>();
    for (const userId of buyers) {
      const read = await standing(goodsId, userId, startAt + HOUR);
      expect(read.state).toBe('WAITING');
      places.set(userId, read.ahead!);
    }
    expect([...places.values()].sort((a, b) => a - b)).toEqual(buyers.map((_, i) => i));
    // Not the join order (a chance of 1 in 2,500! otherwise).
    expect(buyers.map((userId) => places.get(userId))).not.toEqual(buyers.map((_, i) => i));

    const admittedBy = async () =>
      new Set((await redis.zrange(queueKeys(goodsId).admitted, 0, -1)).map(Number));
    const firstTick = await queue.tick(goodsId, params(false));
    expect(firstTick).toMatchObject({ admitted: ADMIT_BATCH, drawn: false });
    // Each admission with its place, as the standings showed it (the export's places).
    expect(firstTick.users).toEqual(
      buyers
        .filter((userId) => places.get(userId)! < ADMIT_BATCH)
        .map((userId) => ({ place: places.get(userId)!, userId }))
        .sort((a, b) => a.place - b.place),
    );
    const first = await admittedBy();
    expect(first).toEqual(new Set(buyers.filter((userId) => places.get(userId)! < ADMIT_BATCH)));
    expect((await queue.tick(goodsId, params(false))).admitted).toBe(500);
    expect((await admittedBy()).size).toBe(buyers.length);
    expect((await queue.tick(goodsId, params(false))).admitted).toBe(0);

    // A buyer who joins now goes behind the whole pre-queue, and is admitted next.
    expect(await queue.join(goodsId, 99, { ...window, startAt })).toEqual({
      code: JoinCode.Joined,
      line: 1,
      position: 1,
    });
    expect((await queue.room(goodsId, startAt + HOUR)).waiting).toBe(1);
    expect((await standing(goodsId, 99, startAt + HOUR)).ahead).toBe(0);
  });

  it("should keep an admission's time to buy while the sale is paused, and spend it only once it runs again", async () => {
    const { endAt, params } = await startedSale([1, 2]);
    expect((await queue.tick(goodsId, params({ admissionTtlMs: 400 }))).admitted).toBe(2);
    const { admittedUntil } = await standing(goodsId, 1, endAt);

    // Paused: the clock stops, and Redis's clock runs past the admission's end.
    expect((await queue.tick(goodsId, params({ paused: true }))).stopped).toBe(true);
    await untilRedisPasses(admittedUntil! + 200);
    expect(await queue.tick(goodsId, params({ paused: true }))).toMatchObject({ lapsed: 0 });
    const paused = await standing(goodsId, 1, endAt);
    expect(paused).toMatchObject({ state: 'ADMITTED', stopped: true });
    expect(paused.admittedUntil! - (await redisNow())).toBeGreaterThan(200);
    // The deduct reads the same clock: the admission is in force for buyer 1.
    expect((await buy(1)).code).toBe(DeductCode.Accepted);

    // Running again: buyer 2's time left goes on from where it stopped, then lapses.
    expect((await queue.tick(goodsId, params())).stopped).toBe(false);
    const running = await standing(goodsId, 2, endAt);
    expect(running).toMatchObject({ state: 'ADMITTED', stopped: false });
    await untilRedisPasses(running.admittedUntil! + 1);
    expect((await queue.tick(goodsId, params())).lapsed).toBe(1);
    expect((await standing(goodsId, 2, endAt)).state).toBe('EXPIRED');
    expect((await buy(2)).code).toBe(DeductCode.NotAdmitted);
  });

  it('should stop the clock while the sale is not in Redis and across a gap between two steps', async () => {
    const { endAt, params } = await startedSale([1, 2]);
    await queue.tick(goodsId, params({ admissionTtlMs: 400, gapMs: 300 }));
    const { admittedUntil } = await standing(goodsId, 1, endAt);

    // No step for longer than the gap bound (every instance cut from Redis), and nobody told a
    // lapse meanwhile: the room reads stopped since its last step, and the next step counts the
    // gap as a stop.
    await untilRedisPasses(admittedUntil! + 200);
    expect(await standing(goodsId, 1, endAt)).toMatchObject({
      state: 'ADMITTED',
      stopped: true,
    });
    expect((await buy(1)).code).toBe(DeductCode.Accepted);
    expect(await queue.tick(goodsId, params({ gapMs: 300 }))).toMatchObject({
      lapsed: 0,
      stopped: false,
    });
    expect((await standing(goodsId, 2, endAt)).state).toBe('ADMITTED');

    // The stock gone from Redis (a restart's rebuild): stopped until it is back.
    const stock = await redis.get(saleKeys(goodsId).stock);
    await redis.del(saleKeys(goodsId).stock);
    expect((await queue.tick(goodsId, params({ gapMs: 300 }))).stopped).toBe(true);
    const before = (await standing(goodsId, 2, endAt)).admittedUntil! - (await redisNow());
    await untilRedisPasses((await redisNow()) + before + 100);
    expect((await queue.tick(goodsId, params({ gapMs: 300 }))).lapsed).toBe(0);
    await redis.set(saleKeys(goodsId).stock, stock!);
    expect((await queue.tick(goodsId, params({ gapMs: 300 }))).stopped).toBe(false);
    expect((await standing(goodsId, 2, endAt)).state).toBe('ADMITTED');
  });

  it.each(['a standing', 'a refused purchase'])(
    'should keep a lapse that %s told when the steps stall right after',
    async (told) => {
      const { endAt, params } = await startedSale([1]);
      await queue.tick(goodsId, params({ admissionTtlMs: 200, gapMs: 600 }));
      const { admittedUntil } = await standing(goodsId, 1, endAt);
      await untilRedisPasses(admittedUntil! + 50);
      // Past its time, within the gap bound of the last step: told lapsed (EXPIRED is final).
      if (told === 'a standing') expect((await standing(goodsId, 1, endAt)).state).toBe('EXPIRED');
      else expect((await buy(1)).code).toBe(DeductCode.NotAdmitted);
      // No step since (the ticking instance paused), past the gap bound: the clock stopped no
      // earlier than the lapse told, and the next step lapses the admission for good.
      await untilRedisPasses(admittedUntil! + 600);
      expect((await standing(goodsId, 1, endAt)).state).toBe('EXPIRED');
      expect((await buy(1)).code).toBe(DeductCode.NotAdmitted);
      expect((await queue.tick(goodsId, params({ gapMs: 600 }))).lapsed).toBe(1);
    },
  );

  it('should end no admission after endAt, and make every standing final at the end', async () => {
    const { endAt, params } = await startedSale([1, 2, 3], { stock: 1, endInMs: 600 });
    // An hour to buy, given 600 ms before the end: it lasts until the end.
    expect((await queue.tick(goodsId, params())).admitted).toBe(1);
    const standings = await Promise.all([1, 2, 3].map((u) => standing(goodsId, u, endAt)));
    const first = [1, 2, 3][standings.findIndex((standing) => standing.state === 'ADMITTED')];
    // Redis's clock and this process's may differ by a millisecond or two.
    const until = standings.find((standing) => standing.state === 'ADMITTED')!.admittedUntil!;
    expect(until).toBeLessThanOrEqual(endAt + 5);
    await untilRedisPasses(endAt);
    for (const userId of [1, 2, 3]) {
      const read = await standing(goodsId, userId, endAt);
      expect(read.ended).toBe(true);
      expect(read.state).toBe(userId === first ? 'EXPIRED' : 'SOLD_OUT');
      if (userId !== first) {
        // Its place only when asked (a queue stream follows it): the seed's walk spared otherwise.
        expect(read.ahead).toBeNull();
        const followed = await queue.status(goodsId, userId, endAt, { place: true });
        expect(followed?.ahead).toEqual(expect.any(Number));
      }
    }
    expect((await standing(goodsId, 4, endAt)).state).toBe('NOT_JOINED');
    expect((await queue.room(goodsId, endAt)).ended).toBe(true);
  });

  it('should use the admission again when the order of a released purchase lands all the same', async () => {
    const { endAt, params } = await startedSale([1]);
    await queue.tick(goodsId, params());
    const requestId = randomUUID();
    expect((await buy(1, requestId)).code).toBe(DeductCode.Accepted);
    // Released (taken for lost), which gives the admission back; then its order lands.
    expect(await ledger.release(saleKeys(goodsId), requestId, false, 'UNAVAILABLE', 1)).toBe(
      ReleaseCode.Released,
    );
    expect((await standing(goodsId, 1, endAt)).state).toBe('ADMITTED');
    const orderNo = `SK${requestId.replace(/-/g, '').slice(0, 20)}`;
    const { retaken } = await ledger.complete(saleKeys(goodsId), [
      { requestId, userId: 1, orderNo, quantity: 1 },
    ]);
    expect(retaken).toEqual([requestId]);
    expect(Number(await redis.zscore(saleKeys(goodsId).admitted, '1'))).toBeLessThan(0);
    // Its cancel gives the stock back, not the admission: no second purchase.
    await redis.hdel(saleKeys(goodsId).buyers, '1');
    expect((await buy(1)).code).toBe(DeductCode.NotAdmitted);
  });
  it("should give a draw's rights at once, the stock times the factor, each counted from the start, and refuse anyone else NOT_SELECTED", async () => {
    const entrants = Array.from({ length: 10 }, (_, i) => 7_001 + i);
    const far = Date.now() + HOUR;
    await load.preheat(saleKeys(goodsId), {
      totalStock: 3,
      stock: 3,
      startAt: new Date(Date.now() - 1_000),
      endAt: new Date(Date.now() + HOUR),
      perUserLimit: 1,
      admission: 'draw',
    });
    await journalRoom();
    // Entries: the window closes at the draw, nobody behind the drawn.
    for (const userId of entrants) {
      expect(
        await queue.join(goodsId, userId, { opensAt: 0, startAt: far, endAt: far }),
      ).toMatchObject({ code: JoinCode.Joined, line: 0 });
    }
    const buyFrom = Date.now() + 30_000;
    const endAt = Date.now() + HOUR;
    const drawn = await queue.tick(goodsId, {
      drawAt: Date.now() - 1,
      buyFrom,
      endAt,
      admitPerSecond: 1_000_000_000,
      admissionTtlMs: 60_000,
      stockFactor: 2,
      seed: randomBytes(16).toString('hex'),
      preSize: entrants.length,
      paused: false,
      gapMs: HOUR,
    });
    // Three units, two rights each, all at once; each right's time from the start.
    expect(drawn).toMatchObject({ drawn: true, admitted: 6, head: 6 });
    expect(drawn.untilMs - drawn.roomMs).toBeGreaterThan(buyFrom - Date.now() + 60_000 - 1_000);
    expect(drawn.untilMs - drawn.roomMs).toBeLessThanOrEqual(buyFrom - Date.now() + 60_000 + 1_000);
    const holders = drawn.users.map(({ userId }) => userId);
    const outsider = entrants.find((userId) => !holders.includes(userId))!;
    const right = await standing(goodsId, holders[0], endAt);
    expect(right.state).toBe('ADMITTED');
    expect(Math.abs(right.admittedUntil! - (buyFrom + 60_000))).toBeLessThan(1_000);

    // Only a holder buys; a unit bought takes its share of rights: no right is passed on.
    expect((await buy(outsider)).code).toBe(DeductCode.NotSelected);
    expect((await buy(9_999)).code).toBe(DeductCode.NotSelected);
    expect((await buy(holders[0])).code).toBe(DeductCode.Accepted);
    const after = await queue.tick(goodsId, {
      drawAt: Date.now() - 1,
      buyFrom,
      endAt,
      admitPerSecond: 1_000_000_000,
      admissionTtlMs: 60_000,
      stockFactor: 2,
      seed: '',
      preSize: entrants.length,
      paused: false,
      gapMs: HOUR,
    });
    expect(after).toMatchObject({ admitted: 0, head: 6 });
  });
});
