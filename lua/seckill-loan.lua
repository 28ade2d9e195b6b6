--[[
  seckill-loan: take stock from one bucket of a goods for a purchase that will be recorded in the
  buyer's home bucket (whose stock ran out). The loan is written down in this bucket until the
  purchase is recorded (then seckill-loan-settle drops it) or it is given back (seckill-loan-settle
  again, or the loan sweeper when the record step never came back). A purchase recorded on a loan
  is written down in its home bucket too (lua/seckill-deduct.lua, `borrowed`): that record, not
  this one, tells the sweeper whether the loan was used.

  KEYS[1] stock  seckill:{gid.b}:stock
  KEYS[2] loans  seckill:{gid.b}:loans  hash requestId -> {quantity, at (ms), userId, home}
  KEYS[3] meta   seckill:{gid.b}:meta   hash, read only: frozenUntil (ms, this server's clock)
                                        while a repair rebuilds the goods (lua/seckill-freeze.lua)
  KEYS[4] voided seckill:{gid.b}:voided zset, read only here: 'loan:' .. requestId once its loan
                                        was settled (lua/seckill-loan-settle.lua)

  ARGV[1] requestId
  ARGV[2] quantity
  ARGV[3] userId
  ARGV[4] the buyer's home bucket

  Returns {code, remaining}:
    1 LENT            stock taken and the loan written down
    0 EMPTY           less stock here than asked for; nothing changed
   -1 NOT_PREHEATED   Redis does not hold this bucket
    2 FROZEN          the bucket is frozen by a repair; nothing changed

  Idempotent per request id, since a command resent after a reconnect runs again: a loan already
  open for it answers LENT and takes nothing more; one already settled answers EMPTY.
]]
local stock = redis.call('GET', KEYS[1])
if not stock then
  return {-1, 0}
end
stock = tonumber(stock)
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return {1, stock}
end
if redis.call('ZSCORE', KEYS[4], 'loan:' .. ARGV[1]) then
  return {0, stock}
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local frozenUntil = redis.call('HGET', KEYS[3], 'frozenUntil')
if frozenUntil and now < tonumber(frozenUntil) then
  return {2, stock}
end
local quantity = tonumber(ARGV[2])
if stock < quantity then
  return {0, stock}
end
local remaining = redis.call('DECRBY', KEYS[1], quantity)
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode({
  quantity = quantity, at = now, userId = ARGV[3], home = tonumber(ARGV[4])
}))
return {1, remaining}
