--[[
  seckill-preheat: load a sale into Redis. The window, limit and admission are (re)written every time; the
  stock only when Redis has none, so preheating a live sale never resets what was sold.

  A refresh (ARGV[6] = 1) is a preheat whose caller found the sale loaded, and so brought none of
  its buyers or restocked orders. If the sale has left Redis since (a restart, a wipe before a
  rebuild), a stock written now would sell it again to its buyers and let every cancelled order
  be restocked once more: a refresh writes nothing to a sale Redis does not hold, and the sale
  stays NOT_PREHEATED until a rebuild loads it with its history.

  KEYS[1] stock  seckill:{gid}:stock
  KEYS[2] meta   seckill:{gid}:meta

  ARGV[1] total stock
  ARGV[2] stock to load (MySQL's remaining stock)
  ARGV[3] startAt (ms)
  ARGV[4] endAt (ms)
  ARGV[5] per-user limit
  ARGV[6] 1 for a refresh, 0 for a load
  ARGV[7] admission: "open", "queue" or "draw" (only admitted buyers, a draw's holders of a
          purchase right, may buy: lua/seckill-deduct.lua)

  Returns {loaded, stock}:
     1  the stock was written now
     0  the stock was kept (Redis held it)
    -1  a refresh found no stock, and wrote nothing (stock 0)
]]
local current = redis.call('GET', KEYS[1])
if not current and ARGV[6] == '1' then
  return {-1, 0}
end
redis.call('HSET', KEYS[2], 'total', ARGV[1], 'startAt', ARGV[3], 'endAt', ARGV[4], 'limit', ARGV[5],
  'admission', ARGV[7])
if current then
  return {0, tonumber(current)}
end
redis.call('SET', KEYS[1], ARGV[2])
return {1, tonumber(ARGV[2])}
