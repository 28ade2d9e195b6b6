--[[
  seckill-snapshot: one consistent read of a sale's Redis side, for reconciliation.

  KEYS[1] stock     seckill:{gid}:stock
  KEYS[2] buyers    seckill:{gid}:buyers
  KEYS[3] inflight  seckill:{gid}:inflight

  Returns {stock, buyersQuantity, inFlightQuantity, inFlightCount}; stock is -1 when Redis does
  not hold the sale.
]]
local stock = tonumber(redis.call('GET', KEYS[1]) or '-1')
local buyers = 0
for _, quantity in ipairs(redis.call('HVALS', KEYS[2])) do
  buyers = buyers + tonumber(quantity)
end
local inflight = 0
local messages = redis.call('HVALS', KEYS[3])
for _, message in ipairs(messages) do
  inflight = inflight + tonumber(cjson.decode(message).quantity)
end
return {stock, buyers, inflight, #messages}
