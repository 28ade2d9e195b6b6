--[[
  idempotency-settle: end an attempt's reservation of an Idempotency-Key, either by storing its
  answer for replays or by freeing the key so that a retry tries again. Only the attempt that
  holds the reservation may settle it.

  KEYS[1] key  seckill:idem:{user:uid}:{Idempotency-Key}  (see idempotency-reserve.lua)

  ARGV[1] reservation id of the attempt
  ARGV[2] answer JSON to store, or "" to free the key
  ARGV[3] TTL of the stored answer (ms, positive; ignored when freeing)

  Returns 1 when settled, 0 when the reservation is no longer this attempt's (it expired).
]]
local stored = redis.call('GET', KEYS[1])
if not stored then
  return 0
end
local ok, current = pcall(cjson.decode, stored)
if not ok or current.state ~= 'PENDING' or current.owner ~= ARGV[1] then
  return 0
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 1
