--[[
  seckill-preheat: load a sale into Redis. The window and limit are (re)written every time; the
  stock only when Redis has none, so preheating a live sale never resets what was sold.

  KEYS[1] stock  seckill:{gid}:stock
  KEYS[2] meta   seckill:{gid}:meta

  ARGV[1] total stock
  ARGV[2] stock to load (MySQL's remaining stock)
  ARGV[3] startAt (ms)
  ARGV[4] endAt (ms)
  ARGV[5] per-user limit

  Returns {loaded, stock}: loaded = 1 when the stock was written now, 0 when it was kept.
]]
redis.call('HSET', KEYS[2], 'total', ARGV[1], 'startAt', ARGV[3], 'endAt', ARGV[4], 'limit', ARGV[5])
local current = redis.call('GET', KEYS[1])
if current then
  return {0, tonumber(current)}
end
redis.call('SET', KEYS[1], ARGV[2])
return {1, tonumber(ARGV[2])}
