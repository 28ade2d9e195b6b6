--[[
  room-journal (a library: pasted by the loader where a script has the line
  `--!include lib/room-journal.lua`): whether a queue sale's waiting room in this Redis is the
  one its MySQL journal holds (src/modules/queue-journal/).

  The restore (lua/queue-restore.lua) marks the room with the run id of the server it wrote it
  into (the state hash's `journal` field). A room without the mark (Redis restarted empty), or
  with another server's run id (restarted from a snapshot, a replica promoted), is not the
  journal's: it may be older than the truth, and nothing may be read from it or done on it until
  it is restored. A wipe before a rebuild drops the mark too.

  journalRoom(stateKey) -> true while the room is the journal's, and this server's run id.
  Needs lib/server-run-id.lua included before it.
]]
local function journalRoom(stateKey)
  local runId = serverRunId()
  return redis.call('HGET', stateKey, 'journal') == runId, runId
end
