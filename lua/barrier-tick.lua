--[[
  barrier-tick: the order consumers' registry and the open barriers (see
  messaging/redis-barrier.store.ts). A consumer calls it every tick with its session id (its
  heartbeat); the instance rebuilding a sale calls it without one to read who consumes, or with
  a barrier id to open a barrier. Times are this server's: hosts' clocks may disagree.

  KEYS[1] consumers  seckill:{barrier}:consumers  zset  session id -> heartbeat expiry (ms)
  KEYS[2] open       seckill:{barrier}:open       zset  barrier id -> expiry (ms)
  KEYS[3] barrier    seckill:{barrier}:<id>       hash  `delivered`, `drained:<session>` (only
                     read or written when ARGV[3] names a barrier to open)

  ARGV[1] a consumer's session id to record as alive, or '' for none
  ARGV[2] how long a heartbeat (or a barrier) lives, ms
  ARGV[3] a barrier id to open, or '' for none

  Returns {consumers alive, barriers open}, both after dropping what expired.
]]
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local ttl = tonumber(ARGV[2])
if ARGV[1] ~= '' then
  redis.call('ZADD', KEYS[1], nowMs + ttl, ARGV[1])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', nowMs)
if ARGV[3] ~= '' then
  redis.call('ZADD', KEYS[2], nowMs + ttl, ARGV[3])
  redis.call('HSET', KEYS[3], 'openedAt', nowMs)
  redis.call('PEXPIRE', KEYS[3], ttl)
end
return {redis.call('ZRANGE', KEYS[1], 0, -1), redis.call('ZRANGE', KEYS[2], 0, -1)}
