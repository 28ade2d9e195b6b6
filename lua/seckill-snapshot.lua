--[[
  seckill-snapshot: one consistent read of a sale's Redis side, for reconciliation.

  KEYS[1] stock     seckill:{gid}:stock
  KEYS[2] buyers    seckill:{gid}:buyers
  KEYS[3] inflight  seckill:{gid}:inflight
  KEYS[4] loans     seckill:{gid}:loans     (a goods with several buckets; empty otherwise)
  KEYS[5] meta      seckill:{gid}:meta

  Returns {stock, buyersQuantity, inFlightQuantity, inFlightCount, loans, held}; held is 0 (and
  stock 0) when Redis does not hold the sale (no stock or no meta: what a purchase calls
  NOT_PREHEATED), 1 otherwise (the stock itself may be below zero for a while:
  lua/seckill-complete.lua); loans is a flat {requestId, quantity, home bucket, …} list of the
  stock this bucket lent and that is not settled yet.
]]
local raw = redis.call('GET', KEYS[1])
if redis.call('EXISTS', KEYS[5]) == 0 then
  raw = false
end
local stock = tonumber(raw or '0')
local buyers = 0
for _, quantity in ipairs(redis.call('HVALS', KEYS[2])) do
  buyers = buyers + tonumber(quantity)
end
local inflight = 0
local messages = redis.call('HVALS', KEYS[3])
for _, message in ipairs(messages) do
  inflight = inflight + tonumber(cjson.decode(message).quantity)
end
local loans = {}
local lent = redis.call('HGETALL', KEYS[4])
for i = 1, #lent, 2 do
  local loan = cjson.decode(lent[i + 1])
  loans[#loans + 1] = lent[i]
  loans[#loans + 1] = loan.quantity
  loans[#loans + 1] = loan.home
end
return {stock, buyers, inflight, #messages, loans, raw and 1 or 0}
