--[[
  throttle-hits: count one request against every rate-limit budget it spends, atomically and in
  one round trip, so that every app instance shares the budgets. Fixed windows.

  KEYS[2i-1] hits   seckill:throttle:{name:tracker}:hits   string, requests in the current window
  KEYS[2i]   block  seckill:throttle:{name:tracker}:block  string, present while the tracker is blocked
             for budget i = 1..n, in the order they are checked

  ARGV[3i-2] window (ms, positive) of budget i
  ARGV[3i-1] limit (requests per window, positive) of budget i
  ARGV[3i]   block duration (ms, positive): how long a tracker over budget i's limit is refused

  Returns {refused, msToBlockEnd, hits, msToWindowEnd}: refused is 0 when every budget let the
  request through, else the index i of the budget that refused it, and msToBlockEnd how long that
  budget stays blocked; hits and msToWindowEnd are the last budget checked's (the refusing one,
  or budget n).

  Budgets are checked in order and the first refusal ends the walk: the budgets after it are not
  spent (a request refused per user does not eat into its IP's or everyone's budget), and a
  blocked tracker's requests are not counted (retrying while blocked cannot extend the block).
  The request that goes over a limit starts that budget's block.
]]
local n = #KEYS / 2
local hits, windowLeft = 0, 0
for i = 1, n do
  local hitsKey, blockKey = KEYS[2 * i - 1], KEYS[2 * i]
  local window = tonumber(ARGV[3 * i - 2])
  local limit = tonumber(ARGV[3 * i - 1])
  local blockMs = tonumber(ARGV[3 * i])

  local blockLeft = redis.call('PTTL', blockKey)
  if blockLeft > 0 then
    hits = tonumber(redis.call('GET', hitsKey) or '0')
    return {i, blockLeft, hits, math.max(redis.call('PTTL', hitsKey), 0)}
  end

  hits = redis.call('INCR', hitsKey)
  windowLeft = redis.call('PTTL', hitsKey)
  -- First hit of a window, or a counter that lost its expiry: (re)start the window.
  if hits == 1 or windowLeft < 0 then
    redis.call('PEXPIRE', hitsKey, window)
    windowLeft = window
  end
  if hits > limit then
    redis.call('SET', blockKey, '1', 'PX', blockMs)
    return {i, blockMs, hits, windowLeft}
  end
end
return {0, 0, hits, windowLeft}
