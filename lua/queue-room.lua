--[[
  queue-room: what every waiting buyer's standing follows from, read once per instance and
  interval for all the queue streams it serves (modules/waiting-room/queue-streams.service.ts),
  and by the dashboard's snapshot.

  KEYS[1] state     seckill:{gid}:queue:state     hash  journal, seed, head (lua/queue-tick.lua)
  KEYS[2] admits    seckill:{gid}:queue:admits    zset  "head:count" per admission -> at (ms)
  KEYS[3] stock     seckill:{gid}:stock
  KEYS[4] inflight  seckill:{gid}:inflight        hash  accepted purchases not yet in MySQL
  KEYS[5] pre       seckill:{gid}:queue:pre       zset  the pre-queue
  KEYS[6] line      seckill:{gid}:queue:line      zset  the later joiners
  KEYS[7] admitted  seckill:{gid}:queue:admitted  zset  userId -> admitted until (ms, the room's
                                                        clock), negated once used
  KEYS[8] expired   seckill:{gid}:queue:expired   set
  KEYS[9] clock     seckill:{gid}:queue:clock     hash  the room's clock (lua/lib/room-clock.lua)

  ARGV[1] endAt (ms)

  Returns {head, shuffled, stock, inflight, admittedLast10s, waiting, deciding, expired, ended,
  stopped, restoring, used, joined}: stock -1 when the sale is not in Redis; shuffled 1 once the seed is drawn (every
  place is fixed); waiting, the buyers not admitted yet; deciding, those admitted who have
  neither bought nor lapsed; ended 1 at or after endAt (Redis's clock); stopped 1 while the
  room's clock is stopped (the sale cannot sell); restoring 1 while the room is not the
  journal's (Redis lost or outdated it: it is being restored from MySQL); used, the admissions
  a purchase used (a draw sale's rights claimed); joined, everyone who joined (a draw's entries).
]]
--!include lib/room-clock.lua
--!include lib/server-run-id.lua
--!include lib/room-journal.lua

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local roomTime, stopped = roomNow(KEYS[9], now)
local recent = 0
for _, entry in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. (now - 10000), '+inf')) do
  recent = recent + tonumber(string.match(entry, ':(%d+)$'))
end
local stock = redis.call('GET', KEYS[3])
local head = tonumber(redis.call('HGET', KEYS[1], 'head') or '0')
return {
  head,
  redis.call('HEXISTS', KEYS[1], 'seed'),
  stock and tonumber(stock) or -1,
  redis.call('HLEN', KEYS[4]),
  recent,
  math.max(redis.call('ZCARD', KEYS[5]) + redis.call('ZCARD', KEYS[6]) - head, 0),
  redis.call('ZCOUNT', KEYS[7], roomTime, '+inf'),
  redis.call('SCARD', KEYS[8]),
  now >= tonumber(ARGV[1]) and 1 or 0,
  stopped and 1 or 0,
  journalRoom(KEYS[1]) and 0 or 1,
  redis.call('ZCOUNT', KEYS[7], '-inf', '(0'),
  redis.call('ZCARD', KEYS[5]) + redis.call('ZCARD', KEYS[6]),
}
