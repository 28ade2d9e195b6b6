--[[
  seckill-deduct: atomically check a sale and take stock for one purchase.

  KEYS[1] stock     seckill:{gid}:stock     string, remaining quantity
  KEYS[2] meta      seckill:{gid}:meta      hash  total, startAt, endAt (ms), limit, admission
                                            ("queue", "draw": only admitted buyers, a draw's
                                            holders of a right, may buy); frozenUntil
                                            (ms, this server's clock) while a repair rebuilds
                                            the goods' buckets (lua/seckill-freeze.lua)
  KEYS[3] buyers    seckill:{gid}:buyers    hash  userId -> quantity held
  KEYS[4] inflight  seckill:{gid}:inflight  hash  requestId -> order message (accepted, not yet in MySQL)
  KEYS[5] outbox    seckill:{gid}:outbox    zset  requestId -> accepted at (ms), not yet confirmed by the broker
  KEYS[6] results   seckill:{gid}:results   hash  userId -> latest result JSON
  KEYS[7] voided    seckill:{gid}:voided    zset  requestIds released (or given up) already
  KEYS[8] borrowed  seckill:{gid}:borrowed  hash  requestId -> lending bucket, each purchase
                                            recorded here on a loan; kept with the sale (the loan
                                            sweeper reads it, lua/seckill-release.lua ARGV[5])
  KEYS[9] admitted  seckill:{gid}:queue:admitted  zset  userId -> admitted until (ms), a queue
                                            sale's (modules/waiting-room/); an accepted purchase
                                            negates its buyer's score (used; lua/seckill-release.lua
                                            gives it back); in the room's clock:
  KEYS[10] clock    seckill:{gid}:queue:clock     hash  a queue sale's admission clock, which stops
                                            while the sale cannot sell (lua/lib/room-clock.lua)

  ARGV[1] userId
  ARGV[2] quantity (positive integer)
  ARGV[3] requestId (server-made, unique)
  ARGV[4] order message JSON (stored in the outbox for the sweeper)
  ARGV[5] mode (optional): "borrowed" when the stock was already taken from another bucket of the
          goods (a loan, lua/seckill-loan.lua): every check and the bookkeeping as usual, but this
          bucket's stock is neither checked nor touched, and the purchase is written down in
          KEYS[8] with the lending bucket
  ARGV[6] the lending bucket (with "borrowed")

  Returns {code, remaining}:
    0 ACCEPTED            stock taken, buyer, outbox and result recorded
    1 NOT_PREHEATED       no stock or meta in Redis
    2 SALE_NOT_STARTED
    3 SALE_ENDED
    4 SOLD_OUT            less stock left than asked for (in a goods with several buckets: this
                          bucket's; asked after the per-user checks, so it changes nothing)
    5 ALREADY_PURCHASED   the user already holds an active purchase of this goods
    6 OVER_LIMIT          quantity above the per-user limit
    7 REPLAYED            this requestId was already accepted (a resent command): nothing changed
    8 VOIDED              this requestId was given up before this command ran: nothing changed
    9 FROZEN              the bucket is frozen by a repair (lua/seckill-freeze.lua), in either
                          mode: nothing changed (a refused borrowed record gives its loan back)
   10 NOT_ADMITTED        a queue sale, and this buyer holds no admission in force (never
                          admitted, lapsed, or used by an accepted purchase): nothing changed
   11 NOT_SELECTED        the same in a draw sale: this buyer holds no purchase right in force
                          (its room's admission: never drawn one, lapsed, or used)

  Time comes from the Redis server, so every app instance judges the window by one clock.

  Publishes "QUEUED" on the user's result channel (KEYS[6] .. ':' .. userId, the results hash's
  name and the user id: the sale's hash tag keeps it in the sale's slot) when it accepts: an
  instance streaming that user's result re-reads it. A channel nobody listens to costs a lookup.
]]
--!include lib/room-clock.lua

local userId = ARGV[1]
local quantity = tonumber(ARGV[2])
local requestId = ARGV[3]
local borrowed = ARGV[5] == 'borrowed'

if redis.call('HEXISTS', KEYS[4], requestId) == 1 then
  return {7, tonumber(redis.call('GET', KEYS[1]) or '0')}
end
if redis.call('ZSCORE', KEYS[7], requestId) then
  return {8, tonumber(redis.call('GET', KEYS[1]) or '0')}
end

local stock = redis.call('GET', KEYS[1])
local meta = redis.call('HMGET', KEYS[2], 'startAt', 'endAt', 'limit', 'frozenUntil', 'admission')
if not stock or not meta[1] or not meta[2] or not meta[3] then
  return {1, 0}
end
stock = tonumber(stock)

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
-- First of the judgements: a repair is counting this bucket, nothing may be recorded in it.
if meta[4] and now < tonumber(meta[4]) then
  return {9, stock}
end
if now < tonumber(meta[1]) then
  return {2, stock}
end
if now >= tonumber(meta[2]) then
  return {3, stock}
end
if quantity > tonumber(meta[3]) then
  return {6, stock}
end
if tonumber(redis.call('HGET', KEYS[3], userId) or '0') > 0 then
  return {5, stock}
end
if not borrowed and stock < quantity then
  return {4, stock}
end
-- After the stock: a buyer the waiting room has not reached yet is told SOLD_OUT once it is.
if meta[5] == 'queue' or meta[5] == 'draw' then
  local admittedUntil = tonumber(redis.call('ZSCORE', KEYS[9], userId) or '0')
  local roomTime, stopped = roomNow(KEYS[10], now)
  if admittedUntil < roomTime then
    -- Refused as lapsed by the clock running past the last step: it stays lapsed.
    if admittedUntil > 0 and not stopped then
      roomSeen(KEYS[10], now)
    end
    return {meta[5] == 'draw' and 11 or 10, stock}
  end
  redis.call('ZADD', KEYS[9], -admittedUntil, userId)
end
local remaining = stock
if not borrowed then
  remaining = redis.call('DECRBY', KEYS[1], quantity)
end
redis.call('HSET', KEYS[3], userId, quantity)
redis.call('HSET', KEYS[4], requestId, ARGV[4])
if borrowed then
  redis.call('HSET', KEYS[8], requestId, ARGV[6])
end
redis.call('ZADD', KEYS[5], now, requestId)
redis.call('HSET', KEYS[6], userId, cjson.encode({status = 'QUEUED', requestId = requestId}))
redis.call('PUBLISH', KEYS[6] .. ':' .. userId, 'QUEUED')
return {0, remaining}
