--[[
  redis-time: the clock of the server that holds a key, in ms since the epoch: the clock the
  other scripts stamp that key's sale with. On one Redis it is TIME; on a cluster the key routes
  the call to the master of its slot, whose clock may differ from another master's.

  KEYS[1] any key of the sale (only routes the call; not read)

  Returns the server's time in ms.
]]
local now = redis.call('TIME')
return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
