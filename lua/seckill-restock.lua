--[[
  seckill-restock: give a cancelled order's stock back to Redis and free its buyer slot, once per
  order number, so that a redelivered timeout or a repeated cancel returns nothing twice.

  KEYS[1] stock      seckill:{gid}:stock
  KEYS[2] buyers     seckill:{gid}:buyers
  KEYS[3] restocked  seckill:{gid}:restocked  set of order numbers already given back

  ARGV[1] orderNo
  ARGV[2] userId
  ARGV[3] quantity

  Returns:
    1 RESTOCKED
    0 ALREADY_RESTOCKED
    2 NOT_PREHEATED    Redis does not hold the sale: nothing to give back to (a rebuild from
                       MySQL will count the cancellation); the order is not marked
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 2
end
if redis.call('SADD', KEYS[3], ARGV[1]) == 0 then
  return 0
end
local quantity = tonumber(ARGV[3])
redis.call('INCRBY', KEYS[1], quantity)
if redis.call('HINCRBY', KEYS[2], ARGV[2], -quantity) <= 0 then
  redis.call('HDEL', KEYS[2], ARGV[2])
end
return 1
