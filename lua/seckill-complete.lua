--[[
  seckill-complete: after the orders are committed in MySQL, drop them from the in-flight
  bookkeeping and publish each user's SUCCESS result. Idempotent.

  KEYS[1] inflight  seckill:{gid}:inflight
  KEYS[2] outbox    seckill:{gid}:outbox
  KEYS[3] claims    seckill:{gid}:claims
  KEYS[4] results   seckill:{gid}:results

  ARGV triples, repeated: requestId, userId, orderNo

  Returns the number of requests that were still in flight.
]]
local completed = 0
for i = 1, #ARGV, 3 do
  local requestId, userId, orderNo = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  completed = completed + redis.call('HDEL', KEYS[1], requestId)
  redis.call('ZREM', KEYS[2], requestId)
  redis.call('HDEL', KEYS[3], requestId)
  local current = redis.call('HGET', KEYS[4], userId)
  -- A newer purchase by the same user owns the result; an older one must not overwrite it.
  if not current or cjson.decode(current).requestId == requestId then
    redis.call('HSET', KEYS[4], userId,
      cjson.encode({status = 'SUCCESS', requestId = requestId, orderNo = orderNo}))
  end
end
return completed
