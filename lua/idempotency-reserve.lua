--[[
  idempotency-reserve: claim an Idempotency-Key for one purchase attempt, or read what it holds.
  Atomic, so that concurrent retries carrying the same key cannot both attempt the purchase.

  KEYS[1] key  seckill:idem:{user:uid}:{Idempotency-Key}  string, JSON:
                 {state: "PENDING", goodsId, quantity, owner}        while an attempt runs
                 {state: "DONE", goodsId, quantity, status, ...}     the stored answer

  ARGV[1] goodsId
  ARGV[2] reservation id (unique per attempt)
  ARGV[3] reservation TTL (ms): outlives one attempt; frees the key if the process died mid-way
  ARGV[4] quantity asked for (with the goods, what a retry must repeat to be the same request)

  Returns {1} when reserved for this attempt, or {0, stored JSON} when the key is taken.
]]
local stored = redis.call('GET', KEYS[1])
if stored then
  return {0, stored}
end
redis.call('SET', KEYS[1],
  cjson.encode({
    state = 'PENDING', goodsId = tonumber(ARGV[1]), quantity = tonumber(ARGV[4]), owner = ARGV[2]
  }),
  'PX', ARGV[3])
return {1}
