--[[
  dashboard-sale: what the operator dashboard shows of one sale's Redis side, in one call (one
  per sale per second per instance with a dashboard open; never on the purchase path).

  KEYS[1] stock         seckill:{gid}:stock
  KEYS[2] meta          seckill:{gid}:meta
  KEYS[3] inflight      seckill:{gid}:inflight
  KEYS[4] verdict       seckill:{gid}:verdict
  KEYS[5] verdictClaim  seckill:{gid}:verdict:claim
  KEYS[6..] rate        seckill:{gid}:rate:<second>, oldest first

  ARGV[1] claimMs   the verdict may be refreshed once per this many ms, by one caller: when no
                    claim is held, this caller takes it (SET NX PX) and is told to refresh

  Returns {stock, inFlightQuantity, inFlightCount, verdict, claimed, rate1, rate2, …}:
  stock is -1 when Redis does not hold the sale (no stock or no meta); verdict is the stored JSON or '' when none;
  claimed is 1 when this caller must refresh the verdict; each rate is a flat
  {outcome, count, outcome, count, …} list (empty for a second without answers).
  The in-flight quantity is the number of in-flight purchases when each buys one unit (the sale's
  per-user limit is 1), without reading them; otherwise each message's quantity is summed.
]]
local stock = tonumber(redis.call('GET', KEYS[1]) or '-1')
if redis.call('EXISTS', KEYS[2]) == 0 then
  stock = -1
end
local count = redis.call('HLEN', KEYS[3])
local quantity = count
if count > 0 and redis.call('HGET', KEYS[2], 'limit') ~= '1' then
  quantity = 0
  for _, message in ipairs(redis.call('HVALS', KEYS[3])) do
    quantity = quantity + tonumber(cjson.decode(message).quantity)
  end
end
local verdict = redis.call('GET', KEYS[4]) or ''
local claimed = 0
if redis.call('SET', KEYS[5], '1', 'NX', 'PX', ARGV[1]) then
  claimed = 1
end
local result = {stock, quantity, count, verdict, claimed}
for i = 6, #KEYS do
  result[#result + 1] = redis.call('HGETALL', KEYS[i])
end
return result
