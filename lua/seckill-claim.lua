--[[
  seckill-claim: a consumer takes ownership of requests before writing them to MySQL, so that a
  late release (an unconfirmed publish) can no longer give their stock back. A request already
  released is refused: its message must be dropped, not written.

  KEYS[1] inflight  seckill:{gid}:inflight
  KEYS[2] claims    seckill:{gid}:claims
  KEYS[3] voided    seckill:{gid}:voided

  ARGV[1..n] requestIds

  Returns an array of n flags, in ARGV order:
    1 CLAIMED   write it (also when Redis no longer knows it: MySQL's unique request_id dedups)
    0 VOIDED    it was released; drop the message
]]
local flags = {}
for i, requestId in ipairs(ARGV) do
  if redis.call('ZSCORE', KEYS[3], requestId) then
    flags[i] = 0
  else
    if redis.call('HEXISTS', KEYS[1], requestId) == 1 then
      redis.call('HSET', KEYS[2], requestId, 1)
    end
    flags[i] = 1
  end
end
return flags
