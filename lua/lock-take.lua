--[[
  lock-take: takes a job lock, its value stamped with the Redis server that set it, so that a
  lock this server did not set (one a snapshot or a replica brought in, its holder working on the
  data the restart or failover lost) can be told apart exactly (lua/lock-drop-stale.lua).

  KEYS[1] the lock key  seckill:job-lock:<job>  string, "<run_id>:<token>"

  ARGV[1] the holder's random token
  ARGV[2] the time to live (ms)

  Returns the value set, or false when the lock is held.
]]
--!include lib/server-run-id.lua

local runId = serverRunId()
local value = runId .. ':' .. ARGV[1]
if redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[2]) then
  return value
end
return false
