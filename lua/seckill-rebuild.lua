--[[
  seckill-rebuild: set a sale's Redis stock and buyers from MySQL's active orders plus the
  purchases still on their way there. Safe while the sale runs: a purchase is counted once
  whether it is in MySQL's snapshot, still in flight, or landed after that snapshot was read
  (the `completed` zset from ARGV[2] on; ARGV[2] is this server's TIME taken before the
  snapshot, so every order that landed later is in it). An order MySQL had as active, or one
  that landed after ARGV[2], that was cancelled (or expired) since and whose stock is back in
  Redis already (its number in `restocked`) is not counted: the rebuilt stock holds its units, and its late restock, if
  any, finds it restocked. One whose restock has not come yet is counted, and the restock adds
  its units when it comes.

  KEYS[1] stock      seckill:{gid}:stock
  KEYS[2] buyers     seckill:{gid}:buyers
  KEYS[3] inflight   seckill:{gid}:inflight
  KEYS[4] completed  seckill:{gid}:completed
  KEYS[5] meta       seckill:{gid}:meta
  KEYS[6] restocked  seckill:{gid}:restocked
  KEYS[7] loans      seckill:{gid}:loans      stock this bucket lent and not settled yet: taken
                                              (a goods with several buckets; empty otherwise)
  KEYS[8] retaken    seckill:{gid}:retaken    hash orderNo -> {requestId, userId, quantity}: late
                                              payments that took their unit again
                                              (lua/seckill-retake.lua). Each holds its unit,
                                              restocked or not, and whatever MySQL's snapshot says:
                                              its MySQL commit (PAID) may come after the snapshot

  ARGV[1] total stock
  ARGV[2] completed since (ms, Redis server time read before the MySQL snapshot)
  ARGV[3] n, the number of active orders
  ARGV[4] "1": a dry run, only counts (returns {0, usedQuantity, buyerCount}, writes nothing)
  ARGV[5 .. 4+4n] quadruples of MySQL's active orders: requestId, userId, quantity, orderNo
  ARGV[5+4n ..] order numbers MySQL has as cancelled in the same snapshot: marked as restocked,
                because the rebuilt stock already holds their units (a late restock of one of
                them must not add them again)

  Returns {stock, usedQuantity, buyerCount}, or {-1, 0, 0} when the sale is not preheated
  (no meta): preheat it first.
]]
if redis.call('EXISTS', KEYS[5]) == 0 then
  return {-1, 0, 0}
end

local counted = {}
local buyers = {}
local used = 0
local function count(requestId, userId, quantity)
  if counted[requestId] then
    return
  end
  counted[requestId] = true
  buyers[userId] = (buyers[userId] or 0) + quantity
  used = used + quantity
end

local activeEnd = 4 + 4 * tonumber(ARGV[3])
for i = 5, activeEnd, 4 do
  if redis.call('SISMEMBER', KEYS[6], ARGV[i + 3]) == 0 or redis.call('HEXISTS', KEYS[8], ARGV[i + 3]) == 1 then
    count(ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]))
  end
end
local inflight = redis.call('HGETALL', KEYS[3])
for i = 1, #inflight, 2 do
  local order = cjson.decode(inflight[i + 1])
  count(inflight[i], string.format('%d', order.userId), tonumber(order.quantity))
end
for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], ARGV[2], '+inf')) do
  local requestId, userId, quantity, orderNo = string.match(member, '^([^|]+)|([^|]+)|([^|]+)|?([^|]*)$')
  -- Landed since, and maybe cancelled since too: one whose stock is back already is not counted,
  -- as in MySQL's snapshot above. (A member without its order number predates that field.)
  if requestId and (orderNo == '' or redis.call('SISMEMBER', KEYS[6], orderNo) == 0) then
    count(requestId, userId, tonumber(quantity))
  end
end
local retaken = redis.call('HGETALL', KEYS[8])
for i = 1, #retaken, 2 do
  local order = cjson.decode(retaken[i + 1])
  count(order.requestId, order.userId, tonumber(order.quantity))
end

local lent = redis.call('HGETALL', KEYS[7])
for i = 1, #lent, 2 do
  local loan = cjson.decode(lent[i + 1])
  -- Counted as used here, not as a buyer: the buyer is the home bucket's.
  if not counted[lent[i]] then
    counted[lent[i]] = true
    used = used + tonumber(loan.quantity)
  end
end

if ARGV[4] == '1' then
  local buyerCount = 0
  for _ in pairs(buyers) do
    buyerCount = buyerCount + 1
  end
  return {0, used, buyerCount}
end

local stock = tonumber(ARGV[1]) - used
if stock < 0 then
  stock = 0
end
redis.call('DEL', KEYS[2])
local batch = {}
local buyerCount = 0
for userId, quantity in pairs(buyers) do
  buyerCount = buyerCount + 1
  batch[#batch + 1] = userId
  batch[#batch + 1] = quantity
  if #batch >= 1000 then
    redis.call('HSET', KEYS[2], unpack(batch))
    batch = {}
  end
end
if #batch > 0 then
  redis.call('HSET', KEYS[2], unpack(batch))
end
for i = activeEnd + 1, #ARGV, 1000 do
  redis.call('SADD', KEYS[6], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
redis.call('SET', KEYS[1], stock)
return {stock, used, buyerCount}
