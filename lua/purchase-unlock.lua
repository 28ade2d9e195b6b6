--[[
  purchase-unlock: end a purchase in one round trip: drop the buyer's purchase lock (only when it
  still holds this attempt's value, as Redlock's own unlock does: a lock that expired and was
  taken by a later click is left alone), and, when the order message was confirmed by the broker,
  take the request out of the sale's outbox (the sweeper has nothing left to republish).

  KEYS[1] lock    seckill:{goodsId}:lock:user:{userId}  string, the Redlock lock value
  KEYS[2] outbox  seckill:{goodsId}:outbox              zset, requestId -> deduct time

  ARGV[1] the lock value this attempt took
  ARGV[2] the confirmed requestId, or '' when nothing is to leave the outbox

  Returns {unlocked (0|1), removedFromOutbox (0|1)}.
]]
local unlocked = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  unlocked = 1
end
local removed = 0
if ARGV[2] ~= '' then
  removed = redis.call('ZREM', KEYS[2], ARGV[2])
end
return {unlocked, removed}
