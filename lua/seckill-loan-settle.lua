--[[
  seckill-loan-settle: close a loan (lua/seckill-loan.lua), once: drop it because the purchase
  was recorded in the home bucket, or give its stock back to this bucket.

  KEYS[1] stock  seckill:{gid.b}:stock
  KEYS[2] loans  seckill:{gid.b}:loans
  KEYS[3] voided seckill:{gid.b}:voided  'loan:' .. requestId is added (settled at, ms), so that
                                         a loan command resent after this is refused; trimmed
                                         with the bucket's other voided ids

  ARGV[1] requestId
  ARGV[2] "1" gives the stock back, "0" only drops the loan (the purchase holds the stock)

  Returns the loan's quantity when it was open (and is closed now), 0 when it was closed already.
]]
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then
  return 0
end
redis.call('HDEL', KEYS[2], ARGV[1])
local clock = redis.call('TIME')
redis.call('ZADD', KEYS[3], tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000),
  'loan:' .. ARGV[1])
local quantity = tonumber(cjson.decode(raw).quantity)
if ARGV[2] == '1' then
  redis.call('INCRBY', KEYS[1], quantity)
end
return quantity
