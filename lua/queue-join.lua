--[[
  queue-join: a buyer joins a queue sale's waiting room, or keeps the place held already.

  KEYS[1] state  seckill:{gid}:queue:state  hash  seed (drawn at startAt: lua/queue-tick.lua), seq
  KEYS[2] pre    seckill:{gid}:queue:pre    zset  userId -> join index 0, 1, …: the pre-queue
  KEYS[3] line   seckill:{gid}:queue:line   zset  userId -> 1, 2, …: the later joiners

  ARGV[1] userId
  ARGV[2] queueOpensAt (ms)
  ARGV[3] startAt (ms)
  ARGV[4] endAt (ms)
  ARGV[5] the user's result channel (resultChannel in src/infra/redis/seckill-keys.ts): a new
          place is announced there ("JOINED"), so that a queue stream open already re-reads

  Returns:
    0 JOINED        a new place: in the pre-queue while its seed is not drawn (the shuffle at
                    startAt gives it a random place: lua/lib/queue-order.lua), else behind
                    everyone, in arrival order
    1 KEPT          the buyer had joined already; nothing changed
    2 NOT_OPEN      before queueOpensAt
    3 ENDED         at or after endAt

  Time comes from the Redis server, as in every script that judges a sale's window.
]]
local userId = ARGV[1]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if now < tonumber(ARGV[2]) then
  return 2
end
if now >= tonumber(ARGV[4]) then
  return 3
end
if redis.call('ZSCORE', KEYS[2], userId) or redis.call('ZSCORE', KEYS[3], userId) then
  return 1
end
-- The seed, not the clock, closes the pre-queue: a join that runs after the draw goes behind
-- the shuffled, so that nobody is shuffled in after the order is fixed. Nobody leaves the
-- pre-queue, so that its join indices stay 0 .. n-1, the domain of the shuffle.
if now < tonumber(ARGV[3]) and redis.call('HEXISTS', KEYS[1], 'seed') == 0 then
  redis.call('ZADD', KEYS[2], redis.call('ZCARD', KEYS[2]), userId)
else
  redis.call('ZADD', KEYS[3], redis.call('HINCRBY', KEYS[1], 'seq', 1), userId)
end
redis.call('PUBLISH', ARGV[5], 'JOINED')
return 0
