--[[
  queue-pre-read: a page of a queue sale's pre-queue, in join-index order, for the digest the
  draw combines with the committed secret (src/modules/waiting-room/pre-queue-follower.ts). The
  admission job reads the pre-queue as it grows, page by page, so that at the start only the
  last joins remain to be read.

  KEYS[1] state  seckill:{gid}:queue:state  hash  journal, opened (the restore that wrote the
                                                  room), preSeq, seed
  KEYS[2] pre    seckill:{gid}:queue:pre    zset  userId -> join index 0, 1, …

  ARGV[1] the first join index wanted
  ARGV[2] the most joins returned
  ARGV[3] startAt (ms): a join at or after it goes behind the pre-queue (lua/queue-join.lua),
          so that once Redis's clock passed it, preSeq is final

  Returns {journal, opened, preSeq, seeded, closed, members}: 1 while the room is the journal's
  (lua/lib/room-journal.lua; 0: nothing else is read), the restore that wrote it ("" none), the
  join counter (the pre-queue's indices are below it), 1 once Redis holds a seed, 1 once the
  pre-queue takes no more joins (a seed, or Redis's clock at or past startAt), and the joins
  from ARGV[1] on: userId, index, userId, index, … as ZRANGEBYSCORE WITHSCORES gives them.
]]
--!include lib/server-run-id.lua
--!include lib/room-journal.lua

if not journalRoom(KEYS[1]) then
  return {0, '', 0, 0, 0, {}}
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'opened', 'preSeq', 'seed')
local seeded = state[3] and 1 or 0
local closed = (seeded == 1 or now >= tonumber(ARGV[3])) and 1 or 0
local members = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0,
  ARGV[2])
return {1, state[1] or '', tonumber(state[2] or '0'), seeded, closed, members}
