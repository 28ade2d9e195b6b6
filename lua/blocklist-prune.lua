--[[
  blocklist-prune: drop blocklist entries an instance found expired, each only if it is still the
  entry that instance read: one written again meanwhile (the same user or address blocked anew)
  is kept.

  KEYS[1] blocklist  seckill:blocklist  hash, `type:value` → the entry's JSON

  ARGV[2i-1] field of entry i, ARGV[2i] the JSON read for it

  Returns how many entries were dropped.
]]
local dropped = 0
for i = 1, #ARGV, 2 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    dropped = dropped + redis.call('HDEL', KEYS[1], ARGV[i])
  end
end
return dropped
