--[[
  room-clock (a library: pasted by the loader where a script has the line
  `--!include lib/room-clock.lua`): a queue sale's admission clock, which stops while the sale
  cannot sell, so that an admitted buyer's time to buy is spent only while buying is possible.

  KEY   seckill:{gid}:queue:clock  hash (written by lua/queue-tick.lua alone)
          lag      ms the room's clock runs behind Redis's, summed over every stop that ended
          since    Redis's ms when the current stop began (absent while the clock runs)
          tickedAt Redis's ms of the last admission step after startAt
          gap      the gap bound (ms): a room not stepped for longer than this is stopped since
                   its last step (nobody reached it: Redis unreachable or restarting); the next
                   step adds the gap to lag, so that the clock goes on from where it stopped

  Admissions are kept in the room's time (lua/queue-tick.lua writes `room now + time to buy`):
  an admission is in force while its time is at or past the room's now, and the time left of a
  stopped room does not shrink. Where the room was never stopped, its time is Redis's.

  roomNow(key, now) -> the room's now (ms), and true while it is stopped
]]
local function roomNow(key, now)
  local clock = redis.call('HMGET', key, 'lag', 'since', 'tickedAt', 'gap')
  local lag = tonumber(clock[1] or '0')
  if clock[2] then
    return tonumber(clock[2]) - lag, true
  end
  if clock[3] and clock[4] and now - tonumber(clock[3]) > tonumber(clock[4]) then
    return tonumber(clock[3]) - lag, true
  end
  return now - lag, false
end
