--[[
  queue-tick: one step of a queue sale's waiting room, run by the working instance holding the
  admission job's lock each QUEUE_TICK_MS (any number may run it at once all the same: each call
  is atomic and picks up where the last left off). From startAt: draws the shuffle's seed once,
  moves the room's clock (lua/lib/room-clock.lua), then drops lapsed admissions and admits the
  next buyers in order.

  KEYS[1] state     seckill:{gid}:queue:state     hash  journal, seed, preSize (the indices it
                                                        orders), head (places admitted so far)
  KEYS[2] pre       seckill:{gid}:queue:pre       zset  userId -> join index 0 .. n-1 (queue-join)
  KEYS[3] line      seckill:{gid}:queue:line      zset  userId -> 1, 2, …: the later joiners
  KEYS[4] admitted  seckill:{gid}:queue:admitted  zset  userId -> admitted until (ms, the room's
                                                        clock); negated once used by a purchase
                                                        (lua/seckill-deduct.lua)
  KEYS[5] expired   seckill:{gid}:queue:expired   set   userIds whose admission lapsed unused
  KEYS[6] admits    seckill:{gid}:queue:admits    zset  "head:count" per admission -> at (ms)
  KEYS[7] stock     seckill:{gid}:stock           string, the remaining stock
  KEYS[8] clock     seckill:{gid}:queue:clock     hash  the room's clock (lua/lib/room-clock.lua)

  ARGV[1] the draw (ms): a queue sale's startAt, a draw sale's entriesCloseAt
  ARGV[2] endAt (ms)
  ARGV[3] admitPerSecond: the most admissions in any 1,000 ms, across every caller
  ARGV[4] admission TTL (ms)
  ARGV[5] stock factor: admitted buyers not yet decided stay within stock × factor
  ARGV[6] the seed (the caller draws it in MySQL first, from the committed secret and the
          pre-queue's digest, src/modules/waiting-room/room-draw.service.ts, so that it outlives
          Redis; only the first one drawn is ever kept here too); "" when the caller has none
          yet: nothing is drawn, and nobody admitted
  ARGV[7] "1": the operator paused admission (the room's clock stops: no lapses either)
  ARGV[8] the most this call admits (each admission of a pre-queue buyer costs the shuffle's
          inverse, about 10 µs: a batch holds Redis that long at most; the caller calls again)
  ARGV[9] the gap bound (ms): two steps further apart than this mean that nobody could reach the
          room in between (Redis unreachable, or restarting): the gap is a stop of the clock,
          from the last lapse a reader told in it, if any (lua/lib/room-clock.lua)
  ARGV[10] the pre-queue's size the seed was drawn for: taken only if it is this room's (preSeq)
  ARGV[11] buyFrom (ms): an admission's time to buy counts from here at the earliest (the sale's
          start: a draw sale's rights are given at entriesCloseAt, which may come before it)

  The clock stops while the sale cannot sell: paused by the operator, or its stock not in Redis
  (a restart's rebuild), or between two steps further apart than the gap bound; it runs again
  at the first step that finds the sale selling. A stopped clock lapses nobody, and the time to
  buy of an admission given now ends no later than endAt.

  The order: places 0 .. n-1 are the n pre-queue join indices (n: the join counter at the draw,
  kept as preSize), shuffled by the seed (the buyer at place p is lua/lib/queue-order.lua's
  indexAt(p), nothing is written at the draw; a place whose index nobody holds is passed over),
  then the later joiners in arrival order. The seed is taken by the first call at or after
  startAt that brings it (drawn in MySQL from the committed secret and the digest of this very
  pre-queue): nobody can know the order before it exists, nobody can draw it again. A room that
  is not the journal's (no `journal` field: Redis lost or outdated it, it is being restored
  from MySQL) is left alone.

  Returns {admitted, lapsed, drawn, stopped, head, roomTime, until, preSize, users, undrawn}:
  buyers admitted now, admissions that lapsed now, 1 when this call took the seed, 1 while the
  room's clock is stopped (-1: the room is being restored), the places admitted so far, the
  room's clock, the admissions' end in it, the pre-queue's size (before the draw: the join
  counter, final once past startAt), the admissions made now as `place:userId` joined by commas
  (what the caller writes to MySQL), and 1 when past startAt with no seed yet (nothing done: the
  caller draws it, for the pre-queue size returned, and calls again).
]]
--!include lib/queue-order.lua
--!include lib/room-clock.lua
--!include lib/server-run-id.lua
--!include lib/room-journal.lua

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if now < tonumber(ARGV[1]) then
  return {0, 0, 0, 0, 0, 0, 0, 0, ''}
end
if not journalRoom(KEYS[1]) then
  return {0, 0, 0, -1, 0, 0, 0, 0, ''}
end
local head = tonumber(redis.call('HGET', KEYS[1], 'head') or '0')
-- The draw: the seed MySQL keeps, for the pre-queue it was drawn from. Taken only for the same
-- pre-queue size (nobody joins it at or after startAt, so it is final by now); until a seed is
-- here, nobody is admitted: every later joiner's place follows the pre-queue's.
local drawn = 0
if redis.call('HEXISTS', KEYS[1], 'seed') == 0 then
  local preSeq = tonumber(redis.call('HGET', KEYS[1], 'preSeq') or '0')
  if ARGV[6] == '' or tonumber(ARGV[10]) ~= preSeq then
    return {0, 0, 0, 0, head, 0, 0, preSeq, '', 1}
  end
  redis.call('HSET', KEYS[1], 'seed', ARGV[6], 'preSize', preSeq)
  drawn = 1
end
local preSize = tonumber(redis.call('HGET', KEYS[1], 'preSize') or '0')

-- The room's clock: stopped while nobody can buy, so that no admission is spent then.
local kept = redis.call('HMGET', KEYS[8], 'lag', 'since', 'tickedAt', 'gap', 'seen')
local lag = tonumber(kept[1] or '0')
local since = kept[2] and tonumber(kept[2])
local tickedAt = kept[3] and tonumber(kept[3])
-- A gap past the bound the room was read with: stopped from the last step, or from the last
-- lapse a reader told after it (lua/lib/room-clock.lua), whichever came later.
if not since and tickedAt and now - tickedAt > tonumber(kept[4] or ARGV[9]) then
  lag = lag + (now - math.max(tickedAt, tonumber(kept[5] or '0')))
end
local selling = ARGV[7] ~= '1' and redis.call('EXISTS', KEYS[7]) == 1
if not selling and not since then
  since = now
elseif selling and since then
  lag = lag + (now - since)
  since = nil
end
redis.call('HSET', KEYS[8], 'lag', lag, 'tickedAt', now, 'gap', ARGV[9])
redis.call('HDEL', KEYS[8], 'seen')
if since then
  redis.call('HSET', KEYS[8], 'since', since)
else
  redis.call('HDEL', KEYS[8], 'since')
end
local roomTime = roomNow(KEYS[8], now)

redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', '(' .. (now - 10000))
if since then
  return {0, 0, drawn, 1, head, roomTime, 0, preSize, ''}
end

-- Lapsed admissions (a used one is negative, never lapses): out, and the next buyers in.
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[4], 0, '(' .. roomTime)
for _, userId in ipairs(lapsed) do
  redis.call('SADD', KEYS[5], userId)
end
if #lapsed > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], 0, '(' .. roomTime)
end

if now >= tonumber(ARGV[2]) then
  return {0, #lapsed, drawn, 0, head, roomTime, 0, preSize, ''}
end
local recent = 0
for _, entry in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. (now - 1000), '+inf')) do
  recent = recent + tonumber(string.match(entry, ':(%d+)$'))
end
local deciding = redis.call('ZCOUNT', KEYS[4], roomTime, '+inf')
local stock = tonumber(redis.call('GET', KEYS[7]) or '0')
local n = math.min(
  tonumber(ARGV[3]) - recent,
  stock * tonumber(ARGV[5]) - deciding,
  preSize + redis.call('ZCARD', KEYS[3]) - head,
  tonumber(ARGV[8])
)
if n <= 0 then
  return {0, #lapsed, drawn, 0, head, roomTime, 0, preSize, ''}
end
-- No admission outlives the sale: one given close to its end lasts until it. One given before
-- the start (a draw's right) lasts its time from the start.
local buyFrom = math.max(now, tonumber(ARGV[11] or '0'))
local untilMs = roomTime + (buyFrom - now) + math.min(tonumber(ARGV[4]), tonumber(ARGV[2]) - buyFrom)
local last = head + n - 1
local users = {}
-- A buyer is admitted once: one admitted or lapsed already (a place admitted again after a
-- restore from a journal a step behind) keeps what it had. One call per admission while nobody
-- has lapsed yet (the start's thousands): the lapsed set is asked only once it holds anyone.
local anyLapsed = redis.call('SCARD', KEYS[5]) > 0
local function admit(place, userId)
  if anyLapsed and redis.call('SISMEMBER', KEYS[5], userId) == 1 then
    return
  end
  if redis.call('ZADD', KEYS[4], 'NX', untilMs, userId) == 1 then
    users[#users + 1] = place .. ':' .. userId
  end
end
if head < preSize then
  local order = queueOrder(redis.call('HGET', KEYS[1], 'seed'), preSize)
  for place = head, math.min(last, preSize - 1) do
    local index = order.indexAt(place)
    local userId = redis.call('ZRANGEBYSCORE', KEYS[2], index, index, 'LIMIT', 0, 1)[1]
    if userId then
      admit(place, userId)
    end
  end
end
if last >= preSize then
  local from = math.max(head, preSize) - preSize
  for i, userId in ipairs(redis.call('ZRANGE', KEYS[3], from, last - preSize)) do
    admit(preSize + from + i - 1, userId)
  end
end
redis.call('HSET', KEYS[1], 'head', head + n)
redis.call('ZADD', KEYS[6], now, head .. ':' .. n)
-- One string of ids, not a reply element each: a batch's 2,000 elements took about 1 ms more to
-- encode and parse (bench:queue's first tick of three batches, 85 against 82.5 ms).
return {n, #lapsed, drawn, 0, head + n, roomTime, untilMs, preSize, table.concat(users, ',')}
