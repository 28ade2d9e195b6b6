import type { RedisClient } from '../../src/infra/redis/redis-client.js';
import { allBucketKeys } from '../../src/infra/redis/seckill-keys.js';
import { homeBucket } from '../../src/common/stock-buckets.js';

/** Reads of a goods whose stock is split over buckets (stockShards), for the tests' assertions. */

/** Each bucket's stock, bucket 0 first (null for a bucket Redis does not hold). */
export async function bucketStocks(redis: RedisClient, goodsId: number, shards: number) {
  return Promise.all(
    allBucketKeys(goodsId, shards).map(async (keys) => {
      const value = await redis.get(keys.stock);
      return value === null ? null : Number(value);
    }),
  );
}

/** Purchases Redis holds that are not settled yet, over every bucket: in flight, outbox, loans. */
export async function unsettled(
  redis: RedisClient,
  goodsId: number,
  shards: number,
): Promise<number> {
  let total = 0;
  for (const keys of allBucketKeys(goodsId, shards)) {
    total += await redis.hlen(keys.inflight);
    total += await redis.zcard(keys.outbox);
    total += await redis.hlen(keys.loans);
  }
  return total;
}

/** The buyers hash of every bucket, merged. */
export async function allBuyers(redis: RedisClient, goodsId: number, shards: number) {
  const buyers: Record<string, string> = {};
  for (const keys of allBucketKeys(goodsId, shards)) {
    Object.assign(buyers, await redis.hgetall(keys.buyers));
  }
  return buyers;
}

/** `count` user ids from `from` on whose home bucket (of `shards`) satisfies `wanted`. */
export function usersHomed(
  from: number,
  count: number,
  shards: number,
  wanted: (home: number) => boolean,
) {
  const users: number[] = [];
  for (let userId = from; users.length < count; userId++) {
    if (wanted(homeBucket(userId, shards))) users.push(userId);
  }
  return users;
}
