--[[
  room-clock (a library: pasted by the loader where a script has the line
  `--!include lib/room-clock.lua`): a queue sale's admission clock, which stops while the sale
  cannot sell, so that an admitted buyer's time to buy is spent only while buying is possible.

  KEY   seckill:{gid}:queue:clock  hash (written by lua/queue-tick.lua, and `seen` by a reader)
          lag      ms the room's clock runs behind Redis's, summed over every stop that ended
          since    Redis's ms when the current stop began (absent while the clock runs)
          tickedAt Redis's ms of the last admission step after startAt
          gap      the gap bound (ms): a room not stepped for longer than this is stopped since
                   its last step (nobody reached it: Redis unreachable or restarting), or since
                   `seen` if later; the next step adds the gap from there to lag, so that the
                   clock goes on from where it stopped
          seen     Redis's ms of the latest lapse a reader told from the clock running past the
                   last step (a standing EXPIRED, a purchase refused): roomSeen writes it

  Admissions are kept in the room's time (lua/queue-tick.lua writes `room now + time to buy`):
  an admission is in force while its time is at or past the room's now, and the time left of a
  stopped room does not shrink. Where the room was never stopped, its time is Redis's. Between
  two steps the clock runs on with Redis's (a stall is known only once the gap bound has passed),
  and a stall stops it back at the last step, giving the stall's first moments back to the
  admitted; but never behind a lapse somebody was told, so that an EXPIRED stays EXPIRED.

  roomNow(key, now) -> the room's now (ms), and true while it is stopped
  roomSeen(key, now) -> a lapse was told from the running clock at `now` (Redis's ms): a stall
                        from here stops the clock no earlier
]]
local function roomNow(key, now)
  local clock = redis.call('HMGET', key, 'lag', 'since', 'tickedAt', 'gap', 'seen')
  local lag = tonumber(clock[1] or '0')
  if clock[2] then
    return tonumber(clock[2]) - lag, true
  end
  if clock[3] and clock[4] and now - tonumber(clock[3]) > tonumber(clock[4]) then
    return math.max(tonumber(clock[3]), tonumber(clock[5] or '0')) - lag, true
  end
  return now - lag, false
end

local function roomSeen(key, now)
  if tonumber(redis.call('HGET', key, 'seen') or '0') < now then
    redis.call('HSET', key, 'seen', now)
  end
end
