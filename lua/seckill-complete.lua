--[[
  seckill-complete: after the orders are committed in MySQL, drop them from the in-flight
  bookkeeping and publish each user's SUCCESS result. Idempotent.

  KEYS[1] inflight  seckill:{gid}:inflight
  KEYS[2] outbox    seckill:{gid}:outbox
  KEYS[3] claims    seckill:{gid}:claims
  KEYS[4] results   seckill:{gid}:results
  KEYS[5] completed seckill:{gid}:completed zset "requestId|userId|quantity" -> completed at (ms),
                                            the last ten minutes; lets a repair running while
                                            orders land count each purchase exactly once

  ARGV triples, repeated: requestId, userId, orderNo

  Returns the number of requests that were still in flight.

  Publishes "SUCCESS" on each user's result channel (KEYS[4] .. ':' .. userId) it writes to.
]]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[5], 0, now - 600000)

local completed = 0
for i = 1, #ARGV, 3 do
  local requestId, userId, orderNo = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local message = redis.call('HGET', KEYS[1], requestId)
  if message then
    local order = cjson.decode(message)
    redis.call('ZADD', KEYS[5], now,
      requestId .. '|' .. string.format('%d', order.userId) .. '|' .. string.format('%d', order.quantity))
  end
  completed = completed + redis.call('HDEL', KEYS[1], requestId)
  redis.call('ZREM', KEYS[2], requestId)
  redis.call('HDEL', KEYS[3], requestId)
  local current = redis.call('HGET', KEYS[4], userId)
  -- A newer purchase by the same user owns the result; an older one must not overwrite it.
  if not current or cjson.decode(current).requestId == requestId then
    redis.call('HSET', KEYS[4], userId,
      cjson.encode({status = 'SUCCESS', requestId = requestId, orderNo = orderNo}))
    redis.call('PUBLISH', KEYS[4] .. ':' .. userId, 'SUCCESS')
  end
end
return completed
