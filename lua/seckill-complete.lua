--[[
  seckill-complete: after the orders are committed in MySQL, drop them from the in-flight
  bookkeeping and publish each user's SUCCESS result. Idempotent.

  An order whose purchase was released here meanwhile (a consumer took its writer for gone once
  the writer's claim lapsed, lua/seckill-release.lua) exists all the same: its stock and buyer
  slot are taken again, once, so that exactly one of the order and the stock given back stands.
  A backstop: an exhausted copy records its void in MySQL before it releases, which refuses such
  a late write (OrderIngestService); only a release no void in MySQL preceded (a copy MySQL rejected)
  can come before an order.
  The stock may go below zero then (what the release gave back was sold again): purchases
  accepted on those units are refused by MySQL and released, which brings it back.

  KEYS[1] inflight  seckill:{gid}:inflight
  KEYS[2] outbox    seckill:{gid}:outbox
  KEYS[3] claims    seckill:{gid}:claims
  KEYS[4] results   seckill:{gid}:results
  KEYS[5] completed seckill:{gid}:completed zset "requestId|userId|quantity|orderNo" -> completed
                                            at (ms), the last ten minutes; lets a repair running
                                            while orders land count each purchase exactly once
                                            (and not one whose stock came back since: orderNo)
  KEYS[6] voided    seckill:{gid}:voided    'released:' .. requestId marks a release
  KEYS[7] stock     seckill:{gid}:stock
  KEYS[8] buyers    seckill:{gid}:buyers
  KEYS[9] admitted  seckill:{gid}:queue:admitted  zset, a queue sale's admissions: the one a
                                            release gave back is used again by the order that
                                            landed all the same (its score negated)

  ARGV quadruples, repeated: requestId, userId, orderNo, quantity

  Returns {n, taken}: n the number of requests that were still in flight; taken the request ids
  whose release was undone (their stock and buyer slot taken again).

  Publishes "SUCCESS" on each user's result channel (KEYS[4] .. ':' .. userId) it writes to.
]]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[5], 0, now - 600000)

local completed = 0
local retaken = {}
for i = 1, #ARGV, 4 do
  local requestId, userId, orderNo = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local quantity = tonumber(ARGV[i + 3])
  local message = redis.call('HGET', KEYS[1], requestId)
  if message then
    local order = cjson.decode(message)
    redis.call('ZADD', KEYS[5], now, requestId .. '|' .. string.format('%d', order.userId) .. '|'
      .. string.format('%d', order.quantity) .. '|' .. orderNo)
  elseif redis.call('ZREM', KEYS[6], 'released:' .. requestId) == 1 then
    redis.call('DECRBY', KEYS[7], quantity)
    redis.call('HINCRBY', KEYS[8], userId, quantity)
    local admission = tonumber(redis.call('ZSCORE', KEYS[9], userId) or '0')
    if admission > 0 then
      redis.call('ZADD', KEYS[9], -admission, userId)
    end
    redis.call('ZADD', KEYS[5], now, requestId .. '|' .. userId .. '|' .. ARGV[i + 3] .. '|' .. orderNo)
    retaken[#retaken + 1] = requestId
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
return {completed, retaken}
