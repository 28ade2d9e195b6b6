--[[
  seckill-claim: a consumer takes ownership of requests before writing them to MySQL, so that a
  late release (an unconfirmed publish) can no longer give their stock back, and a forced one (a
  consumer giving up its own copy of a request) cannot give back a request another consumer is
  writing (lua/seckill-release.lua). A request already released is refused: its message must be
  dropped, not written. Run again by the same holder, it renews the holder's lease: a holder that
  stops renewing (it died) is taken for gone once its lease lapses.

  KEYS[1] inflight  seckill:{gid}:inflight
  KEYS[2] claims    seckill:{gid}:claims    hash  requestId -> JSON {holder: lease end (ms, this
                                                  server's clock)}, one entry per consumer writing
                                                  a copy of it (the sweeper may republish one)
  KEYS[3] voided    seckill:{gid}:voided

  ARGV[1] holder: unique per consumer's attempt at a batch
  ARGV[2] lease (ms)
  ARGV[3..n+2] requestIds

  Returns an array of n flags, in ARGV order:
    1 CLAIMED   write it (also when Redis no longer knows it: MySQL's unique request_id dedups)
    0 VOIDED    it was released; drop the message
]]
local holder = ARGV[1]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local leaseEnd = now + tonumber(ARGV[2])

local flags = {}
for i = 3, #ARGV do
  local requestId = ARGV[i]
  if redis.call('ZSCORE', KEYS[3], requestId) then
    flags[#flags + 1] = 0
  else
    if redis.call('HEXISTS', KEYS[1], requestId) == 1 then
      local ok, held = pcall(cjson.decode, redis.call('HGET', KEYS[2], requestId) or '{}')
      local holders = {}
      -- Lapsed holders are dropped; a value that is no holder map is no lease in force.
      if ok and type(held) == 'table' then
        for other, untilMs in pairs(held) do
          if type(untilMs) == 'number' and untilMs > now then
            holders[other] = untilMs
          end
        end
      end
      holders[holder] = leaseEnd
      redis.call('HSET', KEYS[2], requestId, cjson.encode(holders))
    end
    flags[#flags + 1] = 1
  end
end
return flags
