--[[
  lock-release: drops a job lock only while it still holds the value its holder took: a lock that
  expired and was taken by someone else is left alone (as Redlock's own unlock does).

  KEYS[1] the lock key  seckill:job-lock:<job>  string, "<run_id>:<token>"

  ARGV[1] the value lock-take.lua returned

  Returns 1 when it dropped the lock, 0 when the lock is gone or someone else's.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
