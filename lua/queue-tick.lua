--[[
  queue-tick: one step of a queue sale's waiting room, run by every working instance each
  QUEUE_TICK_MS (any number may run it at once: each call is atomic and picks up where the last
  left off). From startAt: draws the shuffle's seed once, puts the pre-queue in its shuffled
  order a chunk per call, then drops lapsed admissions and admits the next buyers in order.

  KEYS[1] state     seckill:{gid}:queue:state     hash  seed, shuffled ("1" once the pre-queue is
                                                        placed), head (places admitted so far)
  KEYS[2] pre       seckill:{gid}:queue:pre       zset  userId -> joined at (ms)
  KEYS[3] line      seckill:{gid}:queue:line      zset  userId -> place: the shuffled pre-queue in
                                                        [0, 1), later joiners 1, 2, … (queue-join)
  KEYS[4] admitted  seckill:{gid}:queue:admitted  zset  userId -> admitted until (ms); negated once
                                                        used by a purchase (lua/seckill-deduct.lua)
  KEYS[5] expired   seckill:{gid}:queue:expired   set   userIds whose admission lapsed unused
  KEYS[6] admits    seckill:{gid}:queue:admits    zset  "head:count" per admission -> at (ms)
  KEYS[7] stock     seckill:{gid}:stock           string, the remaining stock

  ARGV[1] startAt (ms)
  ARGV[2] endAt (ms)
  ARGV[3] admitPerSecond: the most admissions in any 1,000 ms, across every caller
  ARGV[4] admission TTL (ms)
  ARGV[5] stock factor: admitted buyers not yet decided stay within stock × factor
  ARGV[6] a seed candidate (random hex from the caller; only the first one drawn is ever kept)
  ARGV[7] the most pre-queue buyers placed per call
  ARGV[8] "1": the operator paused admission (the shuffle and the lapses go on)

  The shuffle: each pre-queue buyer's place is the first 52 bits of SHA1(seed .. ":" .. userId)
  as a fraction, a uniformly random order that nobody can know before the seed is drawn (at
  startAt, by the first call after it) and nobody can draw again (HSETNX).

  Returns {admitted, lapsed, shuffling}: buyers admitted now, admissions that lapsed now, and 1
  while the pre-queue is still being placed (nothing is admitted until it is).
]]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if now < tonumber(ARGV[1]) then
  return {0, 0, 0}
end

if redis.call('HGET', KEYS[1], 'shuffled') ~= '1' then
  redis.call('HSETNX', KEYS[1], 'seed', ARGV[6])
  local seed = redis.call('HGET', KEYS[1], 'seed')
  local batch = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[7]) - 1)
  for _, userId in ipairs(batch) do
    local place = tonumber(string.sub(redis.sha1hex(seed .. ':' .. userId), 1, 13), 16) / 4503599627370496
    redis.call('ZADD', KEYS[3], place, userId)
    redis.call('ZREM', KEYS[2], userId)
  end
  if redis.call('ZCARD', KEYS[2]) > 0 then
    return {0, 0, 1}
  end
  redis.call('HSET', KEYS[1], 'shuffled', '1')
end

-- Lapsed admissions (a used one is negative, never lapses): out, and the next buyers in.
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[4], 0, '(' .. now)
for _, userId in ipairs(lapsed) do
  redis.call('SADD', KEYS[5], userId)
end
if #lapsed > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], 0, '(' .. now)
end

redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', '(' .. (now - 10000))
if ARGV[8] == '1' or now >= tonumber(ARGV[2]) then
  return {0, #lapsed, 0}
end
local recent = 0
for _, entry in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. (now - 1000), '+inf')) do
  recent = recent + tonumber(string.match(entry, ':(%d+)$'))
end
local head = tonumber(redis.call('HGET', KEYS[1], 'head') or '0')
local deciding = redis.call('ZCOUNT', KEYS[4], now, '+inf')
local stock = tonumber(redis.call('GET', KEYS[7]) or '0')
local n = math.min(
  tonumber(ARGV[3]) - recent,
  stock * tonumber(ARGV[5]) - deciding,
  redis.call('ZCARD', KEYS[3]) - head
)
if n <= 0 then
  return {0, #lapsed, 0}
end
local untilMs = now + tonumber(ARGV[4])
for _, userId in ipairs(redis.call('ZRANGE', KEYS[3], head, head + n - 1)) do
  redis.call('ZADD', KEYS[4], untilMs, userId)
end
redis.call('HSET', KEYS[1], 'head', head + n)
redis.call('ZADD', KEYS[6], now, head .. ':' .. n)
return {n, #lapsed, 0}
