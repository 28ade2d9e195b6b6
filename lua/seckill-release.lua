--[[
  seckill-release: give back the stock and buyer slot of an accepted purchase that will not become
  an order (the broker refused it, or MySQL rejected it). Idempotent: a request is released once.

  KEYS[1] stock     seckill:{gid}:stock
  KEYS[2] buyers    seckill:{gid}:buyers
  KEYS[3] inflight  seckill:{gid}:inflight
  KEYS[4] outbox    seckill:{gid}:outbox
  KEYS[5] claims    seckill:{gid}:claims    hash  requestId -> {holder: lease end (ms)} of the
                                                  consumers writing it (lua/seckill-claim.lua)
  KEYS[6] voided    seckill:{gid}:voided    zset  requestId -> released at (ms); consumers drop these
  KEYS[7] results   seckill:{gid}:results
  KEYS[8] borrowed  seckill:{gid}:borrowed  hash, read only (with ARGV[5] = "1"): the purchases
                                                  recorded here on a loan (lua/seckill-deduct.lua)
  KEYS[9] admitted  seckill:{gid}:queue:admitted  zset, a queue sale's admissions: the one the
                                                  released purchase used is given back (its
                                                  score negated again), to lapse when it would have

  ARGV[1] requestId
  ARGV[2] force: "" releases only a request no consumer claimed. Otherwise the claim holder of a
          consumer giving up its own copy of the request (lua/seckill-claim.lua; a consumer that
          claimed nothing passes its holder all the same): released unless another holder's
          lease is in force, that consumer is writing the request and settles it. The caller's
          own claim and lapsed ones are taken over; refused, only the caller's own is dropped.
  ARGV[3] reason written to the user's result (e.g. UNAVAILABLE, SOLD_OUT)
  ARGV[4] userId (optional): lets a request that is no longer in flight be recognised as done
  ARGV[5] "1": void only a request that was never recorded (the loan sweeper's question: did the
          purchase a loan was taken for get recorded?); a recorded one is left alone (4)
  ARGV[6] "1": only ask, with a holder as force, whether this release would be refused for
          another holder's lease (2) or not (5); nothing is changed. A consumer giving up its copy
          asks first, then records the void in MySQL, then releases (OrderIngestService): so a writer
          whose lease lapsed unseen cannot commit the order beside the stock given back

  Returns:
    1 RELEASED          stock and buyer slot given back, request voided; 'released:' .. requestId
                        is added to voided too (an order that lands after all takes them again:
                        lua/seckill-complete.lua)
    0 NOT_IN_FLIGHT     nothing to release; the request id is voided all the same, so that a
                        deduct still on its way (a command resent after a timeout) or a late
                        message for it is refused
    2 CLAIMED           a consumer owns it ("" force), or another consumer's lease is in force
                        (a holder as force): it is being written, do not release
    3 COMPLETED         it is an order already (the user's result says SUCCESS for it)
    4 RECORDED          ARGV[5] = "1" and the request was recorded here (on a loan, whatever
                        became of it since, or it is in flight): left alone
    5 RELEASABLE        ARGV[6] = "1" and no other holder's lease is in force: nothing changed

  Time (leases, voided) comes from the Redis server.
  Publishes "FAILED" on the user's result channel (KEYS[7] .. ':' .. userId) when it writes one.
]]
local requestId = ARGV[1]
local askOnly = ARGV[6] == '1'
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local claim = redis.call('HGET', KEYS[5], requestId)
if claim then
  if ARGV[2] == '' then
    return 2
  end
  local ok, holders = pcall(cjson.decode, claim)
  if ok and type(holders) == 'table' then
    holders[ARGV[2]] = nil
    for _, untilMs in pairs(holders) do
      if type(untilMs) == 'number' and untilMs > now then
        if not askOnly then
          redis.call('HSET', KEYS[5], requestId, cjson.encode(holders))
        end
        return 2
      end
    end
  end
end
if askOnly then
  return 5
end

local voidOnly = ARGV[5] == '1'
local message = redis.call('HGET', KEYS[3], requestId)
-- The home bucket's own record of a borrowed purchase outlives its in-flight entry, its result
-- and its completed log: a loan's fate does not depend on any of those.
if voidOnly and (message or redis.call('HEXISTS', KEYS[8], requestId) == 1) then
  return 4
end
if not message then
  if ARGV[4] and ARGV[4] ~= '' then
    local current = redis.call('HGET', KEYS[7], ARGV[4])
    if current then
      local result = cjson.decode(current)
      if result.requestId == requestId and result.status == 'SUCCESS' then
        return 3
      end
    end
  end
  redis.call('ZADD', KEYS[6], 'NX', now, requestId)
  return 0
end
local order = cjson.decode(message)
-- %d, not tostring: tostring prints ids of 15+ digits in exponent form (1.2345678901234e+14).
local userId = string.format('%d', order.userId)
local quantity = tonumber(order.quantity)

redis.call('HDEL', KEYS[3], requestId)
redis.call('ZREM', KEYS[4], requestId)
redis.call('HDEL', KEYS[5], requestId)
redis.call('ZADD', KEYS[6], now, requestId)
redis.call('ZADD', KEYS[6], now, 'released:' .. requestId)
redis.call('INCRBY', KEYS[1], quantity)
if redis.call('HINCRBY', KEYS[2], userId, -quantity) <= 0 then
  redis.call('HDEL', KEYS[2], userId)
end
local admission = tonumber(redis.call('ZSCORE', KEYS[9], userId) or '0')
if admission < 0 then
  redis.call('ZADD', KEYS[9], -admission, userId)
end

local current = redis.call('HGET', KEYS[7], userId)
if current and cjson.decode(current).requestId == requestId then
  redis.call('HSET', KEYS[7], userId,
    cjson.encode({status = 'FAILED', requestId = requestId, reason = ARGV[3]}))
  redis.call('PUBLISH', KEYS[7] .. ':' .. userId, 'FAILED')
end
return 1
