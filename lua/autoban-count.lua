--[[
  autoban-count: count one throttled request of a client within a fixed window, so that every
  instance adds to the same count.

  KEYS[1] counter  seckill:autoban:{tracker}  string, throttled requests in the current window

  ARGV[1] window (ms, positive)

  Returns the count in the current window, this request included.
]]
local count = redis.call('INCR', KEYS[1])
if count == 1 or redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
end
return count
