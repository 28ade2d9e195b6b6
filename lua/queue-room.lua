--[[
  queue-room: what every waiting buyer's standing follows from, read once per instance and
  interval for all the queue streams it serves (modules/waiting-room/queue-streams.service.ts).

  KEYS[1] state     seckill:{gid}:queue:state   hash  shuffled, head (lua/queue-tick.lua)
  KEYS[2] admits    seckill:{gid}:queue:admits  zset  "head:count" per admission -> at (ms)
  KEYS[3] stock     seckill:{gid}:stock
  KEYS[4] inflight  seckill:{gid}:inflight      hash  accepted purchases not yet in MySQL

  Returns {head, shuffled, stock, inflight, admittedLast10s}: stock -1 when the sale is not in
  Redis; shuffled 1 once the pre-queue is placed.
]]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local recent = 0
for _, entry in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. (now - 10000), '+inf')) do
  recent = recent + tonumber(string.match(entry, ':(%d+)$'))
end
local stock = redis.call('GET', KEYS[3])
return {
  tonumber(redis.call('HGET', KEYS[1], 'head') or '0'),
  redis.call('HGET', KEYS[1], 'shuffled') == '1' and 1 or 0,
  stock and tonumber(stock) or -1,
  redis.call('HLEN', KEYS[4]),
  recent,
}
