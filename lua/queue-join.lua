--[[
  queue-join: a buyer joins a queue sale's waiting room, or keeps the place held already.

  KEYS[1] state  seckill:{gid}:queue:state  hash  journal (the room is the MySQL journal's:
                                                  src/modules/queue-journal/), seed (drawn at
                                                  startAt: lua/queue-tick.lua), preSeq, seq
  KEYS[2] pre    seckill:{gid}:queue:pre    zset  userId -> join index 0, 1, …: the pre-queue
  KEYS[3] line   seckill:{gid}:queue:line   zset  userId -> 1, 2, …: the later joiners
  KEYS[4] addresses seckill:{gid}:queue:addresses hash address -> accounts it put into the room

  ARGV[1] userId
  ARGV[2] queueOpensAt (ms)
  ARGV[3] startAt (ms)
  ARGV[4] endAt (ms)
  ARGV[5] the user's result channel (resultChannel in src/infra/redis/seckill-keys.ts): a new
          place is announced there ("JOINED"), so that a queue stream open already re-reads
  ARGV[6] the client address the account cap counts ("" not counted: a trusted proxy's own)
  ARGV[7] the cap: the most accounts one address may put into the room

  Returns {code, line, position}:
    0 JOINED        a new place: in the pre-queue while its seed is not drawn (line 0, position
                    its join index 0, 1, …: the shuffle at startAt gives it a random place,
                    lua/lib/queue-order.lua), else behind everyone, in arrival order (line 1,
                    position 1, 2, …)
    1 KEPT          the buyer had joined already, at that line and position; nothing changed
    2 NOT_OPEN      before queueOpensAt
    3 ENDED         at or after endAt
    4 RESTORING     the room is not the journal's (Redis lost or outdated it: it is being
                    restored from MySQL); nothing changed
    5 TOO_MANY_ACCOUNTS  a new join from an address that put the cap's accounts in already
                    (one who joined already keeps the place); nothing changed

  A join index comes from a counter (preSeq), not the pre-queue's size, so that a place is never
  given twice even where a join was dropped (a write to MySQL that failed): the shuffle orders
  the indices below the counter, and the admission passes over one nobody holds.

  Time comes from the Redis server, as in every script that judges a sale's window.
]]
--!include lib/server-run-id.lua
--!include lib/room-journal.lua

local userId = ARGV[1]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if now < tonumber(ARGV[2]) then
  return {2, 0, 0}
end
if now >= tonumber(ARGV[4]) then
  return {3, 0, 0}
end
if not journalRoom(KEYS[1]) then
  return {4, 0, 0}
end
local index = redis.call('ZSCORE', KEYS[2], userId)
if index then
  return {1, 0, tonumber(index)}
end
local seq = redis.call('ZSCORE', KEYS[3], userId)
if seq then
  return {1, 1, tonumber(seq)}
end
local address = ARGV[6]
if address ~= '' and tonumber(redis.call('HGET', KEYS[4], address) or '0') >= tonumber(ARGV[7]) then
  return {5, 0, 0}
end
if address ~= '' then
  redis.call('HINCRBY', KEYS[4], address, 1)
end
-- The seed, not the clock, closes the pre-queue: a join that runs after the draw goes behind
-- the shuffled, so that nobody is shuffled in after the order is fixed. Nobody leaves the
-- pre-queue: the shuffle orders the indices below preSeq.
local line, position
if now < tonumber(ARGV[3]) and redis.call('HEXISTS', KEYS[1], 'seed') == 0 then
  line, position = 0, redis.call('HINCRBY', KEYS[1], 'preSeq', 1) - 1
  redis.call('ZADD', KEYS[2], position, userId)
else
  line, position = 1, redis.call('HINCRBY', KEYS[1], 'seq', 1)
  redis.call('ZADD', KEYS[3], position, userId)
end
redis.call('PUBLISH', ARGV[5], 'JOINED')
return {0, line, position}
