--[[
  throttle-hit: count one request against a fixed-window rate limit, atomically, so that every
  app instance shares one budget.

  KEYS[1] hits   seckill:throttle:{name:tracker}:hits   string, requests in the current window
  KEYS[2] block  seckill:throttle:{name:tracker}:block  string, present while the tracker is blocked

  ARGV[1] window (ms, positive)
  ARGV[2] limit (requests per window, positive)
  ARGV[3] block duration (ms, positive): how long a tracker over the limit is refused

  Returns {totalHits, msToWindowEnd, blocked (0|1), msToBlockEnd}.
  A blocked tracker's requests are not counted (a client retrying while blocked cannot extend its
  own block); the request that goes over the limit starts the block.
]]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local blockMs = tonumber(ARGV[3])

local blockLeft = redis.call('PTTL', KEYS[2])
if blockLeft > 0 then
  local hits = tonumber(redis.call('GET', KEYS[1]) or '0')
  return {hits, math.max(redis.call('PTTL', KEYS[1]), 0), 1, blockLeft}
end

local hits = redis.call('INCR', KEYS[1])
local windowLeft = redis.call('PTTL', KEYS[1])
-- First hit of a window, or a counter that lost its expiry: (re)start the window.
if hits == 1 or windowLeft < 0 then
  redis.call('PEXPIRE', KEYS[1], window)
  windowLeft = window
end
if hits > limit then
  redis.call('SET', KEYS[2], '1', 'PX', blockMs)
  return {hits, windowLeft, 1, blockMs}
end
return {hits, windowLeft, 0, 0}
