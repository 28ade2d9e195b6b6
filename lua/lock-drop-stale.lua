--[[
  lock-drop-stale: drops a lock that this Redis server did not see taken: one loaded from a
  snapshot at a restart, set before the server started. Its holder was working on the data the
  restart lost (an empty restart drops every lock the same way), and nobody would release it:
  left alone, it would hold every path that needs it for the rest of its time to live.

  KEYS[1] the lock key
  ARGV[1] the time to live (ms) every holder sets the lock with

  Returns 1 when it dropped the lock, 0 when there is none or it may have been taken since the
  start. A lock set at or after the start expires no earlier than start + ttl; `uptime_in_seconds`
  is whole seconds, so the start is taken a second early, and a lock set within about two
  seconds before the restart is left to expire.
]]
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  return 0
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local uptime = tonumber(string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)'))
local startedBy = now - (uptime + 1) * 1000
if now + ttl < startedBy + tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
