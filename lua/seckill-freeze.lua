--[[
  seckill-freeze: a repair's freeze of one bucket of a goods split over several buckets. While
  a bucket is frozen, seckill-deduct (both modes) and seckill-loan refuse in it (FROZEN) and
  change nothing, so no purchase moves stock into or out of it while the repair counts it.
  The freeze lapses on its own (ARGV[3]) so that a repairer that dies does not close the sale
  for ever; a repair that outlasts it finds out with "held" and runs again.

  KEYS[1] meta  seckill:{gid.b}:meta  hash  frozenUntil (ms, this server's clock), frozenBy (token)

  ARGV[1] "freeze" | "held" | "thaw"
  ARGV[2] the repair's token (unique per repair)
  ARGV[3] lapse (ms), with "freeze"

  Returns:
    freeze  1 frozen by this token until now + lapse (a lapsed freeze of another is taken over);
            0 another token's freeze is in force: nothing changed
    held    1 this token's freeze is in force (it has been since it was set: it is never moved
            back, and another token cannot take it over before it lapses); 0 otherwise
    thaw    1 this token's freeze is cleared; 0 it was not this token's (nothing changed)
]]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local current = redis.call('HMGET', KEYS[1], 'frozenUntil', 'frozenBy')
local inForce = current[1] and now < tonumber(current[1])
local mine = current[2] == ARGV[2]

if ARGV[1] == 'freeze' then
  if inForce and not mine then
    return 0
  end
  redis.call('HSET', KEYS[1], 'frozenUntil', now + tonumber(ARGV[3]), 'frozenBy', ARGV[2])
  return 1
end
if ARGV[1] == 'held' then
  if inForce and mine then
    return 1
  end
  return 0
end
if mine then
  redis.call('HDEL', KEYS[1], 'frozenUntil', 'frozenBy')
  return 1
end
return 0
