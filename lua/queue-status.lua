--[[
  queue-status: where one buyer stands in a queue sale's waiting room.

  KEYS[1]  state     seckill:{gid}:queue:state     hash  journal, seed, preSize, head
                                                         (lua/queue-tick.lua)
  KEYS[2]  pre       seckill:{gid}:queue:pre       zset  userId -> join index: the pre-queue
  KEYS[3]  line      seckill:{gid}:queue:line      zset  the later joiners, in arrival order
  KEYS[4]  admitted  seckill:{gid}:queue:admitted  zset  userId -> admitted until (ms, the room's
                                                         clock), negated once used
  KEYS[5]  expired   seckill:{gid}:queue:expired   set
  KEYS[6]  admits    seckill:{gid}:queue:admits    zset  "head:count" per admission -> at (ms)
  KEYS[7]  stock     seckill:{gid}:stock
  KEYS[8]  inflight  seckill:{gid}:inflight        hash  accepted purchases not yet in MySQL
  KEYS[9]  buyers    seckill:{gid}:buyers          hash  userId -> quantity held
  KEYS[10] results   seckill:{gid}:results         hash  userId -> latest result JSON
  KEYS[11] clock     seckill:{gid}:queue:clock     hash  the room's clock (lua/lib/room-clock.lua)

  ARGV[1] userId
  ARGV[2] endAt (ms)
  ARGV[3] "1": work out the place of a buyer SOLD_OUT while in line too (a queue stream follows
          it, to hear at once when a unit comes back and the head reaches it); otherwise its
          ahead is -1 (stopped and deciding 0, unread), and the seed's walk (some 16 SHA1s) is
          spared at the last unit, when every waiting buyer asks at once

  Returns {state, ahead, admittedUntil, admittedLast10s, head, ended, stopped, pending, stock,
  deciding}:
    state  0 NOT_JOINED, 1 WAITING, 2 ADMITTED, 3 EXPIRED, 4 SOLD_OUT, 5 PURCHASED; -1: the room
           is not the journal's (Redis lost or outdated it: it is being restored from MySQL),
           nothing else is returned
    ahead  buyers waiting ahead of this one (WAITING, and SOLD_OUT while in line when asked),
           -1 before the seed is drawn (a pre-queue buyer's place is lua/lib/queue-order.lua's
           placeOf its join index, the later joiners' the pre-queue's size plus their rank)
    admittedUntil  (ms, Redis's clock) for ADMITTED: now plus the time left in the room's clock,
           which does not shrink while the clock is stopped; else 0
    admittedLast10s  admissions in the last ten seconds
    head   places admitted so far (a waiting buyer's place in the line is head + ahead, fixed once
           the seed is drawn: lua/queue-room.lua's head then tells how far it moved)
    ended  1 at or after endAt (by Redis's clock): every state is final then (an unused admission
           EXPIRED, a buyer still in line SOLD_OUT)
    stopped  1 while the room's clock is stopped (the sale cannot sell: paused, rebuilt, cut off)
    pending  1 for PURCHASED while the purchase is on its way to MySQL (one refused there gives
           the admission back)
    stock  the stock left (-1: not in Redis); deciding: admitted buyers who have neither bought
           nor lapsed (how many more the stock lets in follows from the two)

  SOLD_OUT: no stock left and no accepted purchase still on its way to MySQL (one that fails
  would give its stock back), or the sale ended. Before the end it lasts only while that holds:
  stock given back (a cancel, an expiry) makes the buyers in line WAITING again, in their places,
  and admission resumes.
]]
--!include lib/queue-order.lua
--!include lib/room-clock.lua
--!include lib/server-run-id.lua
--!include lib/room-journal.lua

local userId = ARGV[1]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local ended = now >= tonumber(ARGV[2]) and 1 or 0
if not journalRoom(KEYS[1]) then
  return {-1}
end

local held = tonumber(redis.call('HGET', KEYS[9], userId) or '0') > 0
local admission = redis.call('ZSCORE', KEYS[4], userId)
admission = admission and tonumber(admission)
if held or (admission and admission < 0) then
  local pending = 0
  local current = held and redis.call('HGET', KEYS[10], userId)
  if current and cjson.decode(current).status == 'QUEUED' then
    pending = 1
  end
  return {5, 0, 0, 0, 0, ended, 0, pending, 0, 0}
end
-- The room's clock, read where an admission or the answer needs it.
local roomTime, stopped
if admission then
  roomTime, stopped = roomNow(KEYS[11], now)
end
if admission and (admission < roomTime or ended == 1)
  or redis.call('SISMEMBER', KEYS[5], userId) == 1 then
  -- Told lapsed by the clock running past the last step: a stall from here stops it no earlier.
  if admission and admission < roomTime and not stopped then
    roomSeen(KEYS[11], now)
  end
  return {3, 0, 0, 0, 0, ended, 0, 0, 0, 0}
end
local index = redis.call('ZSCORE', KEYS[2], userId)
local rank = not index and redis.call('ZRANK', KEYS[3], userId)
if not admission and not index and not rank then
  return {0, 0, 0, 0, 0, ended, 0, 0, 0, 0}
end
local stock = redis.call('GET', KEYS[7])
stock = stock and tonumber(stock) or -1
local soldOut = ended == 1 or (stock ~= -1 and stock <= 0 and redis.call('HLEN', KEYS[8]) == 0)
if soldOut and not admission and ARGV[3] ~= '1' then
  return {4, -1, 0, 0, 0, ended, 0, 0, stock, 0}
end
if not admission then
  roomTime, stopped = roomNow(KEYS[11], now)
end
local state = soldOut and 4 or 1
local deciding = redis.call('ZCOUNT', KEYS[4], roomTime, '+inf')
local isStopped = stopped and 1 or 0
if admission then
  if soldOut then
    return {4, -1, 0, 0, 0, ended, isStopped, 0, stock, deciding}
  end
  return {2, 0, now + (admission - roomTime), 0, 0, 0, isStopped, 0, stock, deciding}
end
local recent = 0
for _, entry in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. (now - 10000), '+inf')) do
  recent = recent + tonumber(string.match(entry, ':(%d+)$'))
end
local seed = redis.call('HGET', KEYS[1], 'seed')
if not seed then
  return {state, -1, 0, recent, 0, ended, isStopped, 0, stock, deciding}
end
local preSize = tonumber(redis.call('HGET', KEYS[1], 'preSize') or '0')
local place = index and queueOrder(seed, preSize).placeOf(tonumber(index)) or preSize + rank
local head = tonumber(redis.call('HGET', KEYS[1], 'head') or '0')
return {state, math.max(place - head, 0), 0, recent, head, ended, isStopped, 0, stock, deciding}
