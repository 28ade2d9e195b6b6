--[[
  purchase-token-consume: use up a one-time purchase token, atomically, so that two requests
  carrying the same token can never both pass.

  KEYS[1] token  seckill:{gid}:ptoken:{sha256 of the token}  string: the owner's user id, or
                 "used" once consumed (kept until the token would have expired, so that a replay
                 is told "already used" rather than "unknown")

  ARGV[1] userId of the caller

  Returns:
    1 CONSUMED    the caller's fresh token for this goods: now marked used
    0 UNKNOWN     no such token for this goods (never issued, expired, or issued for other goods)
    2 OTHER_USER  issued to another user: left untouched, so a thief cannot burn it
    3 USED        already consumed
]]
local owner = redis.call('GET', KEYS[1])
if not owner then
  return 0
end
if owner == 'used' then
  return 3
end
if owner ~= ARGV[1] then
  return 2
end
redis.call('SET', KEYS[1], 'used', 'KEEPTTL')
return 1
