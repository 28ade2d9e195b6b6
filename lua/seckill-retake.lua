--[[
  seckill-retake: a payment that landed after its order's cancel. Makes the order hold its unit in
  Redis again ("take"), or hold none ("give-back"), whatever was done before: run any number of
  times, it changes the stock once. Called under the goods' MySQL row lock, by the transaction
  that then moves the order to PAID or REFUND_REQUIRED (src/modules/orders/order-retake.service.ts):
  MySQL follows what Redis decided, and a rebuild from MySQL waits for that transaction.

  An order holds its unit in Redis unless its number is in `restocked` (its cancel gave the unit
  back), or it is in `retaken` (taken again since). `retaken` keeps what the rebuild needs to count
  a retaken unit whose MySQL commit has not come (lua/seckill-rebuild.lua).

  In a goods split over buckets the order is counted in its buyer's home bucket, where its cancel
  gave its unit back. When that bucket is short, the unit is borrowed from another bucket first
  (lua/seckill-loan.lua, under a loan id of this attempt) and "take" is called with that loan:
  the stock is not taken here again, the loan is written down in `borrowed` as a purchase's is
  (lua/seckill-deduct.lua), so that the loan sweeper drops the loan instead of giving it back.
  A loan the sweeper voided here first (this attempt took too long) is refused.

  KEYS[1] stock      seckill:{gid}:stock
  KEYS[2] buyers     seckill:{gid}:buyers     hash userId -> quantity held
  KEYS[3] restocked  seckill:{gid}:restocked  set of order numbers whose stock was given back
  KEYS[4] retaken    seckill:{gid}:retaken    hash orderNo -> {"requestId", "userId", "quantity"}
  KEYS[5] meta       seckill:{gid}:meta       frozenUntil (ms) while a repair counts the bucket
  KEYS[6] borrowed   seckill:{gid}:borrowed   hash loan id -> lending bucket (written with a loan)
  KEYS[7] voided     seckill:{gid}:voided     zset, read only: a loan id voided here by the sweeper

  ARGV[1] "take" | "give-back"
  ARGV[2] orderNo
  ARGV[3] userId
  ARGV[4] quantity
  ARGV[5] the order's requestId
  ARGV[6] "take" on a loan: the loan's id ("" or absent: the stock is taken here)
  ARGV[7] "take" on a loan: the lending bucket

  Returns, for "take":
    0 ALREADY        taken again before: nothing changed
    1 RETAKEN        the stock taken, the buyer counted again
    2 KEPT           the cancel's restock had not come: the order still held its unit; the
                     restock is now a no-op
    3 NOT_PREHEATED  Redis does not hold the sale: nothing changed (MySQL decides alone; a
                     rebuild reads it after)
    4 SOLD_OUT       less stock left than the order's quantity: nothing changed
    5 BUYER_HOLDS    the buyer holds another purchase of this goods (in flight or an order):
                     nothing changed
    6 FROZEN         a repair is counting this bucket: nothing changed (try again)
    7 LOAN_VOIDED    on a loan: the sweeper voided the loan here (gave it back): nothing changed
                     (try again with another loan)
  On a loan, every answer but RETAKEN leaves the loan unrecorded here: the caller gives it back.
  for "give-back":
    0 HELD_NONE      the order held no unit: nothing changed
    1 GIVEN_BACK     its unit is back in the stock, its buyer's count down
    3 NOT_PREHEATED
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 3
end
local orderNo = ARGV[2]
local userId = ARGV[3]
local quantity = tonumber(ARGV[4])
local loanId = ARGV[6] or ''
local onLoan = loanId ~= ''
local retaken = redis.call('HEXISTS', KEYS[4], orderNo) == 1
local restocked = redis.call('SISMEMBER', KEYS[3], orderNo) == 1

local function giveBack()
  redis.call('INCRBY', KEYS[1], quantity)
  if redis.call('HINCRBY', KEYS[2], userId, -quantity) <= 0 then
    redis.call('HDEL', KEYS[2], userId)
  end
end

if ARGV[1] == 'give-back' then
  if retaken then
    redis.call('HDEL', KEYS[4], orderNo)
    giveBack()
    return 1
  end
  if not restocked then
    redis.call('SADD', KEYS[3], orderNo)
    giveBack()
    return 1
  end
  return 0
end

if retaken then
  return 0
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local frozenUntil = redis.call('HGET', KEYS[5], 'frozenUntil')
if frozenUntil and now < tonumber(frozenUntil) then
  return 6
end
local record = cjson.encode({ requestId = ARGV[5], userId = userId, quantity = quantity })
if not restocked then
  redis.call('SADD', KEYS[3], orderNo)
  redis.call('HSET', KEYS[4], orderNo, record)
  return 2
end
if redis.call('HEXISTS', KEYS[2], userId) == 1 then
  return 5
end
if onLoan then
  if redis.call('ZSCORE', KEYS[7], loanId) then
    return 7
  end
  redis.call('HSET', KEYS[6], loanId, ARGV[7])
else
  if tonumber(redis.call('GET', KEYS[1])) < quantity then
    return 4
  end
  redis.call('DECRBY', KEYS[1], quantity)
end
redis.call('HINCRBY', KEYS[2], userId, quantity)
redis.call('HSET', KEYS[4], orderNo, record)
return 1
