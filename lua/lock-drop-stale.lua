--[[
  lock-drop-stale: drops a job lock that this Redis server did not set: one loaded from a snapshot
  at a restart, or replicated before a failover. Its holder was working on the data the restart
  or failover lost (an empty restart drops every lock the same way), and nobody would release
  it: left alone, it would hold every path that needs it for the rest of its time to live.

  KEYS[1] the lock key  seckill:job-lock:<job>  string, "<run_id>:<token>" (lua/lock-take.lua)

  Returns 1 when it dropped the lock, 0 when there is none, this server set it, or its value is
  not stamped (set by a version of this service before the stamp: left to expire).
]]
--!include lib/server-run-id.lua

local value = redis.call('GET', KEYS[1])
if not value then
  return 0
end
local setBy = string.match(value, '^(%x+):')
if not setBy then
  return 0
end
local runId = serverRunId()
if setBy == runId then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
