--[[
  queue-restore: a queue sale's waiting room written back into Redis from its MySQL journal
  (src/modules/queue-journal/queue-restore.service.ts), in steps: Redis lost the room, or holds
  an older copy of it (a snapshot, a replica that lagged). Between "drop" and "open" the room is
  not the journal's: joins, standings and admission steps refuse it (RESTORING).

  KEYS[1] state     seckill:{gid}:queue:state     hash  journal, seed, preSize, preSeq, seq, head
  KEYS[2] pre       seckill:{gid}:queue:pre       zset  userId -> join index
  KEYS[3] line      seckill:{gid}:queue:line      zset  userId -> arrival number
  KEYS[4] admitted  seckill:{gid}:queue:admitted  zset  userId -> admitted until (room's clock),
                                                        negated once used
  KEYS[5] expired   seckill:{gid}:queue:expired   set
  KEYS[6] admits    seckill:{gid}:queue:admits    zset  the last ten seconds of admissions
  KEYS[7] clock     seckill:{gid}:queue:clock     hash  the room's clock (lua/lib/room-clock.lua)
  KEYS[8] addresses seckill:{gid}:queue:addresses hash  address -> accounts it put into the room

  ARGV[1] the step:
    journal   returns 1 while the room is the journal's (lua/lib/room-journal.lua), else 0
    drop      the room is not the journal's from now on. Returns how long ago (ms, Redis's
              clock) it stopped taking joins: 0 when it did now (the mark was there, or a lost
              room is first found so), else since the drop kept in `droppedAt`; a join placed
              before then may still be on its way to MySQL, the caller waits for it. ARGV[2]
              "marked": only a room that has the mark (a wipe's: no key written for others)
    begin     everything of the room goes; ARGV[2] seed ("" none), ARGV[3] preSize ("" none),
              ARGV[4] head, ARGV[5] preSeq, ARGV[6] seq, ARGV[7] the room's clock when the
              journal last had it ("" none): the clock stands stopped there, so that nobody's
              time to buy runs on for the time the room was lost; it runs again at the first
              admission step that finds the sale selling. ARGV[8] the restore's token: kept
              with this server's run id (`restoring`), for "open" to check
    pre       ARGV[2..] pairs: join index, userId
    line      ARGV[2..] pairs: arrival number, userId
    addresses ARGV[2..] pairs: address, accounts (the account cap's counts, from the joins)
    admitted  ARGV[2] the room's clock as in "begin" ("" none), ARGV[3..] triples: userId,
              until, used ("1": the buyer has an order, the admission is spent); an unused one
              whose time had run out is a lapse
    open      the room is the journal's again: marked with this server's run id, if this
              restore (ARGV[2] its token) began on this server and no other began since. The
              steps are separate calls: a Redis that restarts between two (a command in flight
              is sent again to the new server) holds only the steps after it, and a restore
              begun anew on the same room holds another's members; either is never marked the
              journal's. Returns 0 then, and the room is restored again
  Returns 1 (drop: see above; open: 0 when refused).
]]
--!include lib/server-run-id.lua
--!include lib/room-journal.lua

local step = ARGV[1]
if step == 'journal' then
  return journalRoom(KEYS[1]) and 1 or 0
end
if step == 'drop' then
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local dropped = redis.call('HGET', KEYS[1], 'droppedAt')
  local marked = redis.call('HDEL', KEYS[1], 'journal') == 1
  if ARGV[2] == 'marked' and not marked then
    return 0
  end
  -- A room that placed no join since it was made the journal's has none on its way to MySQL.
  local joins = tonumber(redis.call('HGET', KEYS[1], 'preSeq') or '0')
    + tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
  if marked and joins == tonumber(redis.call('HGET', KEYS[1], 'openedJoins') or '-1') then
    return 86400000
  end
  if marked or not dropped then
    redis.call('HSET', KEYS[1], 'droppedAt', now)
    return 0
  end
  return now - tonumber(dropped)
end
if step == 'begin' then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8])
  redis.call('HSET', KEYS[1], 'head', ARGV[4], 'preSeq', ARGV[5], 'seq', ARGV[6],
    'restoring', serverRunId() .. ':' .. ARGV[8])
  if ARGV[2] ~= '' then
    redis.call('HSET', KEYS[1], 'seed', ARGV[2])
  end
  if ARGV[3] ~= '' then
    redis.call('HSET', KEYS[1], 'preSize', ARGV[3])
  end
  if ARGV[7] ~= '' then
    local clock = redis.call('TIME')
    local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
    redis.call('HSET', KEYS[7], 'lag', now - tonumber(ARGV[7]), 'since', now)
  end
  return 1
end
if step == 'pre' or step == 'line' then
  local key = step == 'pre' and KEYS[2] or KEYS[3]
  for i = 2, #ARGV, 2 do
    redis.call('ZADD', key, ARGV[i], ARGV[i + 1])
  end
  return 1
end
if step == 'addresses' then
  for i = 2, #ARGV, 2 do
    redis.call('HSET', KEYS[8], ARGV[i], ARGV[i + 1])
  end
  return 1
end
if step == 'admitted' then
  local roomMs = ARGV[2] ~= '' and tonumber(ARGV[2]) or nil
  for i = 3, #ARGV, 3 do
    local untilMs = tonumber(ARGV[i + 1])
    if ARGV[i + 2] == '1' then
      redis.call('ZADD', KEYS[4], -untilMs, ARGV[i])
    elseif roomMs and untilMs < roomMs then
      redis.call('SADD', KEYS[5], ARGV[i])
    else
      redis.call('ZADD', KEYS[4], untilMs, ARGV[i])
    end
  end
  return 1
end
if step == 'open' then
  local _, runId = journalRoom(KEYS[1])
  if redis.call('HGET', KEYS[1], 'restoring') ~= runId .. ':' .. ARGV[2] then
    return 0
  end
  redis.call('HDEL', KEYS[1], 'restoring')
  -- `opened`: which restore made the room (lua/queue-pre-read.lua tells a reader following the
  -- pre-queue that it was written anew).
  redis.call('HSET', KEYS[1], 'journal', runId, 'opened', ARGV[2], 'openedJoins',
    tonumber(redis.call('HGET', KEYS[1], 'preSeq') or '0')
      + tonumber(redis.call('HGET', KEYS[1], 'seq') or '0'))
  redis.call('HDEL', KEYS[1], 'droppedAt')
  return 1
end
return redis.error_reply('queue-restore: unknown step ' .. tostring(step))
