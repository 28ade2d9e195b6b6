--[[
  queue-status: where one buyer stands in a queue sale's waiting room.

  KEYS[1] state     seckill:{gid}:queue:state     hash  seed, head (lua/queue-tick.lua)
  KEYS[2] pre       seckill:{gid}:queue:pre       zset  userId -> join index: the pre-queue
  KEYS[3] line      seckill:{gid}:queue:line      zset  the later joiners, in arrival order
  KEYS[4] admitted  seckill:{gid}:queue:admitted  zset  userId -> admitted until (ms), negated once used
  KEYS[5] expired   seckill:{gid}:queue:expired   set
  KEYS[6] admits    seckill:{gid}:queue:admits    zset  "head:count" per admission -> at (ms)
  KEYS[7] stock     seckill:{gid}:stock
  KEYS[8] inflight  seckill:{gid}:inflight        hash  accepted purchases not yet in MySQL
  KEYS[9] buyers    seckill:{gid}:buyers          hash  userId -> quantity held

  ARGV[1] userId

  Returns {state, ahead, admittedUntil, admittedLast10s, head}:
    state  0 NOT_JOINED, 1 WAITING, 2 ADMITTED, 3 EXPIRED, 4 SOLD_OUT, 5 PURCHASED
    ahead  buyers waiting ahead of this one (WAITING), -1 before the seed is drawn (a pre-queue
           buyer's place is lua/lib/queue-order.lua's placeOf its join index, the later
           joiners' the pre-queue's size plus their rank)
    admittedUntil  (ms) for ADMITTED, else 0
    admittedLast10s  admissions in the last ten seconds, the pace the ETA is judged by
    head   places admitted so far (a WAITING buyer's place in the line is head + ahead, fixed
           once the seed is drawn: lua/queue-room.lua's head then tells how far it moved)

  SOLD_OUT: no stock left and no accepted purchase still on its way to MySQL (one that fails
  would give its stock back). It lasts only while that holds: stock given back (a cancel, an
  expiry) makes the waiting buyers WAITING again, and admission resumes.
]]
--!include lib/queue-order.lua

local userId = ARGV[1]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

if tonumber(redis.call('HGET', KEYS[9], userId) or '0') > 0 then
  return {5, 0, 0, 0, 0}
end
local admission = redis.call('ZSCORE', KEYS[4], userId)
if admission and tonumber(admission) < 0 then
  return {5, 0, 0, 0, 0}
end
if admission and tonumber(admission) < now or redis.call('SISMEMBER', KEYS[5], userId) == 1 then
  return {3, 0, 0, 0, 0}
end
local index = redis.call('ZSCORE', KEYS[2], userId)
local rank = not index and redis.call('ZRANK', KEYS[3], userId)
if not admission and not index and not rank then
  return {0, 0, 0, 0, 0}
end
local stock = redis.call('GET', KEYS[7])
if stock and tonumber(stock) <= 0 and redis.call('HLEN', KEYS[8]) == 0 then
  return {4, 0, 0, 0, 0}
end
if admission then
  return {2, 0, tonumber(admission), 0, 0}
end
local recent = 0
for _, entry in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. (now - 10000), '+inf')) do
  recent = recent + tonumber(string.match(entry, ':(%d+)$'))
end
local seed = redis.call('HGET', KEYS[1], 'seed')
if not seed then
  return {1, -1, 0, recent, 0}
end
local preSize = redis.call('ZCARD', KEYS[2])
local place = index and queueOrder(seed, preSize).placeOf(tonumber(index)) or preSize + rank
local head = tonumber(redis.call('HGET', KEYS[1], 'head') or '0')
return {1, math.max(place - head, 0), 0, recent, head}
