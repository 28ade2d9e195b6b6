--[[
  seckill-release: give back the stock and buyer slot of an accepted purchase that will not become
  an order (the broker refused it, or MySQL rejected it). Idempotent: a request is released once.

  KEYS[1] stock     seckill:{gid}:stock
  KEYS[2] buyers    seckill:{gid}:buyers
  KEYS[3] inflight  seckill:{gid}:inflight
  KEYS[4] outbox    seckill:{gid}:outbox
  KEYS[5] claims    seckill:{gid}:claims    hash  requestId -> 1 once a consumer started writing it
  KEYS[6] voided    seckill:{gid}:voided    zset  requestId -> released at (ms); consumers drop these
  KEYS[7] results   seckill:{gid}:results
  KEYS[8] completed seckill:{gid}:completed (read only with ARGV[5] = "1")

  ARGV[1] requestId
  ARGV[2] force: "1" releases even if a consumer claimed it (the consumer itself gives up), "0" not
  ARGV[3] reason written to the user's result (e.g. UNAVAILABLE, SOLD_OUT)
  ARGV[4] userId (optional): lets a request that is no longer in flight be recognised as done
  ARGV[5] "1": void only a request that was never recorded (the loan sweeper's question: did the
          purchase a loan was taken for get recorded?); a recorded one is left alone (4)
  ARGV[6] quantity (with ARGV[5] = "1"): finds the request among the completed orders

  Returns:
    1 RELEASED          stock and buyer slot given back, request voided
    0 NOT_IN_FLIGHT     nothing to release; the request id is voided all the same, so that a
                        deduct still on its way (a command resent after a timeout) or a late
                        message for it is refused
    2 CLAIMED           a consumer owns it (force = "0"): it will become an order, do not release
    3 COMPLETED         it is an order already (the user's result says SUCCESS for it, or with
                        ARGV[5] = "1" it is among the completed)
    4 RECORDED          ARGV[5] = "1" and the request is in flight: left alone
    5 RETURNED_AT_HOME  ARGV[5] = "1" and the request was recorded, then released here (its
                        stock came back to this bucket): a loan taken for it must be dropped,
                        not given back as well

  Publishes "FAILED" on the user's result channel (KEYS[7] .. ':' .. userId) when it writes one.
]]
local requestId = ARGV[1]

if ARGV[2] ~= '1' and redis.call('HEXISTS', KEYS[5], requestId) == 1 then
  return 2
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local voidOnly = ARGV[5] == '1'
local message = redis.call('HGET', KEYS[3], requestId)
if message and voidOnly then
  return 4
end
if not message then
  if voidOnly and redis.call('ZSCORE', KEYS[6], 'released:' .. requestId) then
    return 5
  end
  if voidOnly and redis.call('ZSCORE', KEYS[8], requestId .. '|' .. ARGV[4] .. '|' .. ARGV[6]) then
    return 3
  end
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
-- Told apart from a void of a request never recorded: this one's stock came back here, so a loan
-- still open for it (its drop lost) must not be given back too (see ARGV[5]).
redis.call('ZADD', KEYS[6], now, 'released:' .. requestId)
redis.call('INCRBY', KEYS[1], quantity)
if redis.call('HINCRBY', KEYS[2], userId, -quantity) <= 0 then
  redis.call('HDEL', KEYS[2], userId)
end

local current = redis.call('HGET', KEYS[7], userId)
if current and cjson.decode(current).requestId == requestId then
  redis.call('HSET', KEYS[7], userId,
    cjson.encode({status = 'FAILED', requestId = requestId, reason = ARGV[3]}))
  redis.call('PUBLISH', KEYS[7] .. ':' .. userId, 'FAILED')
end
return 1
