--[[
  stream-slot: take one of a user's (or a client address's) slots for an open event stream (a
  result stream, a queue stream: each kind its own keys), across every instance. A slot lapses on its own at the stream's longest life (plus a
  margin), so the slots of an instance that died without giving them back free themselves.

  KEYS[1] slots  seckill:streams:{user:uid} or seckill:streams:{ip:address} (result streams),
                 seckill:streams:queue:{user:uid} or …:queue:{ip:address} (queue streams)
                 zset  stream id -> when its slot lapses (ms, Redis clock)

  ARGV[1] stream id (unique per stream)
  ARGV[2] how many streams the user (the address) may hold open at once
  ARGV[3] the slot's life (ms): at least the stream's longest

  Returns 1 when the slot is taken, 0 when the user (the address) holds the limit already.
  The caller gives the slot back with ZREM when the stream ends.
]]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
