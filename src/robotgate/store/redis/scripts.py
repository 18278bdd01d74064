"""The Lua scripts of the Redis store.

Each runs atomically on the server that owns its keys.  Every key a script
touches is passed in ``KEYS`` and carries one hash tag (the origin or the
politeness group), so on Redis Cluster a script never crosses slots.  On one
server the scripts that end a robots.txt fetch also publish ``saved <origin>``
or ``released <origin>`` on ``P:done``; on a cluster the store publishes that
itself, on a channel of another slot (see :mod:`.notify`), so the scripts get
an empty channel, and the key ``P:wait:{O}`` a waiter sets (its look, ``PEEK``) tells
whether anyone waits: the end of a fetch nobody waits for is not published.  Errors
about foreign data come back as ``BADDATA <key> <why>`` so the client can name the key.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = [
    "EPOCH",
    "FLUSH_HOSTS",
    "LOAD_HOSTS",
    "LOAD_OR_LOCK",
    "LOCK",
    "LOCK_LOAD",
    "OPEN",
    "OPEN_EPOCH",
    "PAUSE",
    "PEEK",
    "RENEW",
    "RESERVE",
    "SAVE_ROBOTS",
    "SAVE_UNLOCK",
    "UNLOCK",
    "Script",
]


@dataclass(frozen=True)
class Script:
    """A script's source and SHA-1 (``EVALSHA`` first, ``EVAL`` where it is not cached)."""

    source: str
    sha: str

    @classmethod
    def of(cls, source: str) -> Script:
        return cls(source, hashlib.sha1(source.encode()).hexdigest())


# KEYS[1] meta; ARGV[1] the value to create.  Returns the stored value.
OPEN = Script.of("""
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1])
  return ARGV[1]
end
return v
""")

# KEYS[1] meta, KEYS[2] epoch; ARGV[1] the meta value to create, ARGV[2] a new token.
# OPEN, then, where the meta value is this code's, EPOCH: a store's opening on one
# server in one round trip.  Returns {the stored meta value, the epoch or false}.
OPEN_EPOCH = Script.of("""
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1])
  v = ARGV[1]
end
if v ~= ARGV[1] then return {v, false} end
redis.call('SET', KEYS[2], ARGV[2], 'NX')
return {v, redis.call('GET', KEYS[2])}
""")

# KEYS[1] epoch; ARGV[1] a new token.  The data's epoch, made now if there is none.
EPOCH = Script.of("""
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
""")

# KEYS[1] lock; ARGV token, ttl_ms.  1 if the caller holds the lock now.
# Taking a lock we already hold succeeds, so a retry after a lost reply is safe.
LOCK = Script.of("""
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
""")

# KEYS[1] lock; ARGV token, ttl_ms.  1 if the caller's lock was still held, and is
# extended; 0 if it expired (another worker may have taken it, fetched and let go
# meanwhile: the holder must look again before it fetches).
RENEW = Script.of("""
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
""")

# KEYS[1] lock, KEYS[2] robots; ARGV as LOCK.  {1 or 0 as LOCK, the entry (flat
# field/value list)}: the fetch lock and the look under it in one round trip.
LOCK_LOAD = Script.of("""
local t = redis.call('TYPE', KEYS[2])['ok']
if t ~= 'none' and t ~= 'hash' then
  return redis.error_reply('BADDATA ' .. KEYS[2] .. ' holds a ' .. t)
end
local got = 0
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  got = 1
elseif redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  got = 1
end
return {got, redis.call('HGETALL', KEYS[2])}
""")

# KEYS[1] lock, KEYS[2] robots; ARGV as LOCK.  {the entry (flat field/value
# list), 1 if the caller holds the lock now}: with no entry stored a fetch is due,
# so the first look takes the fetch lock too.  As LOCK, a lock the caller's token
# already holds is its own: a batch resent after a lost reply gets its token.
LOAD_OR_LOCK = Script.of("""
local t = redis.call('TYPE', KEYS[2])['ok']
if t ~= 'none' and t ~= 'hash' then
  return redis.error_reply('BADDATA ' .. KEYS[2] .. ' holds a ' .. t)
end
if t == 'hash' then return {redis.call('HGETALL', KEYS[2]), 0} end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {{}, 1} end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {{}, 1}
end
return {{}, 0}
""")

# The end of a fetch: 1 if the wait flag KEYS[n] (cluster only) was set, which it
# clears; with no flag key (one server, which publishes in the script) always 1.
_WANTED = """
local function wanted(n)
  if not KEYS[n] then return 1 end
  return redis.call('DEL', KEYS[n])
end
"""

# KEYS[1] lock, KEYS[2] wait flag (cluster); ARGV token, channel ('' for none),
# message.  Deletes only our own lock: 0 if it was not ours, else 1 + wanted.
UNLOCK = Script.of(_WANTED + """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] ~= '' then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
  return 1 + wanted(2)
end
return 0
""")

# KEYS[1] robots; ARGV header, has_body ('1'/'0'), body, ttl_ms: the entry replaced.
_WRITE_ROBOTS = """
local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'none' and t ~= 'hash' then
  return redis.error_reply('BADDATA ' .. KEYS[1] .. ' holds a ' .. t)
end
redis.call('DEL', KEYS[1])
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'h', ARGV[1], 'b', ARGV[3])
else
  redis.call('HSET', KEYS[1], 'h', ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
"""

# KEYS[1] robots, KEYS[2] wait flag (cluster); ARGV as _WRITE_ROBOTS, then channel
# ('' for none), message.  Returns wanted.
SAVE_ROBOTS = Script.of(_WANTED + _WRITE_ROBOTS + """
if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], ARGV[6]) end
return wanted(2)
""")

# KEYS[1] robots, KEYS[2] lock, KEYS[3] wait flag (cluster); ARGV as SAVE_ROBOTS, then
# the lock's token.  The end of a fetch in one round trip: the entry is saved and our
# own lock deleted (one "saved" message wakes the waiters: the entry is there, the
# lock gone).  Returns wanted; or -1, writing nothing, when another token holds the
# lock: ours expired under us and another worker fetches now, whose entry is saved
# (a resend after a lost reply finds our lock gone, and saves the same entry again).
SAVE_UNLOCK = Script.of(_WANTED + """
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[7] then return -1 end
""" + _WRITE_ROBOTS + """
if holder then redis.call('DEL', KEYS[2]) end
if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], ARGV[6]) end
return wanted(3)
""")

# KEYS[1] robots, KEYS[2] lock, KEYS[3] wait flag (cluster): the entry (flat
# field/value list) and the lock's remaining life in ms (-2: no lock), in one round
# trip.  While a fetch is under way (the lock held), or nothing is stored, the flag
# is set, for a little longer than the lock, so that the next save or release is
# published.
PEEK = Script.of("""
local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'none' and t ~= 'hash' then
  return redis.error_reply('BADDATA ' .. KEYS[1] .. ' holds a ' .. t)
end
local left = redis.call('PTTL', KEYS[2])
if KEYS[3] and (left ~= -2 or t == 'none') then
  redis.call('SET', KEYS[3], 1, 'PX', math.max(left, 0) + 10000)
end
return {redis.call('HGETALL', KEYS[1]), left}
""")

# Shared by the pacing scripts: the server clock in microseconds, the stored
# theoretical arrival time (0 when absent), and the check that a host key is a
# hash or absent.  set_tat gives every tat an expiry 1 s past it, so a future
# tat without an expiry, or beyond it, was not written by robotgate (a tat of
# 1e16 would stop the group for centuries).
_CLOCK = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local function stored_tat(key)
  local raw = redis.call('GET', key)
  if not raw then return 0 end
  local n = tonumber(raw)
  if not n or n ~= n or n < 0 or n > 1e17 then
    return redis.error_reply('BADDATA ' .. key .. ' is not a pacing time')
  end
  if n > now then
    local left = redis.call('PTTL', key)
    if left < 0 or n - now > left * 1000 then
      return redis.error_reply('BADDATA ' .. key .. ' is a pacing time beyond its expiry')
    end
  end
  return n
end
local function set_tat(key, tat)
  redis.call('SET', key, string.format('%.0f', tat),
             'PX', string.format('%d', math.floor((tat - now) / 1000) + 1000))
end
local function foreign_host(key)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= 'hash' then
    return redis.error_reply('BADDATA ' .. key .. ' holds a ' .. t)
  end
end
"""

# GCRA with no burst: KEYS[1] tat, KEYS[2] host; ARGV[1] interval_us,
# ARGV[2] the longest interval (us), ARGV[3] the lapse factor, ARGV[4] the
# horizon (us), ARGV[5] the caller's slack (us: its request may leave that long
# after its slot's start; ARGV[1] includes it).  Grants the slot at max(now, tat)
# and moves tat one interval past it, so any two grants for one group are at
# least one interval apart on the server clock.  A slot starting more than the
# horizon from now is not granted (tat stays): the caller asks again when it is
# within.  The interval is at least the group's stored back-off (bx, s) plus the
# slack (a request late within its slack is still bx from the next), whichever
# worker earned it, unless no worker renewed it (bt, us) for ARGV[3] times its
# length: the worker that narrows it may have gone.  A back-off past ARGV[2],
# or renewed more than a minute ahead of this clock, is not robotgate's: a
# hint, it is ignored (the group keeps its interval) rather than obeyed.
#
# On one server also KEYS[3] epoch, KEYS[4] lost, KEYS[5] meta; ARGV[6] the epoch
# the caller knows, ARGV[7] a new token, ARGV[8] the meta value, ARGV[9] how long
# (ms) to keep "lost".  An epoch missing or not the caller's means Redis lost its
# data (restarted empty, flushed) since the caller saw it: a slot granted before
# may start as late as the horizon after that moment ("lost", kept once), and a
# crawl's lease taken before ends within it, so a group with no tat gets no slot
# before lost + horizon + its interval.
# Returns {wait_us, start_us, epoch or false, lost_us or false, 1}, or, when the
# slot is beyond the horizon, {us until it is within, start_us, epoch, lost, 0}.
RESERVE = Script.of(_CLOCK + """
local tat = stored_tat(KEYS[1])
if type(tat) == 'table' then return tat end
local foreign = foreign_host(KEYS[2])
if foreign then return foreign end
local interval = tonumber(ARGV[1])
local b = redis.call('HMGET', KEYS[2], 'bx', 'bt')
local bx, bt = tonumber(b[1] or ''), tonumber(b[2] or '')
if bx and bt and bx > 0 and bx * 1000000 <= tonumber(ARGV[2]) and bt - now < 60000000
    and now - bt < bx * tonumber(ARGV[3]) * 1000000 then
  interval = math.max(interval, bx * 1000000 + tonumber(ARGV[5]))
end
local epoch, lost = false, false
if KEYS[3] then
  epoch = redis.call('GET', KEYS[3])
  if epoch ~= ARGV[6] then
    if not epoch then
      epoch = ARGV[7]
      redis.call('SET', KEYS[3], epoch)
      redis.call('SET', KEYS[5], ARGV[8], 'NX')
    end
    redis.call('SET', KEYS[4], string.format('%.0f', now), 'NX', 'PX', ARGV[9])
  end
  lost = tonumber(redis.call('GET', KEYS[4]) or '') or false
end
local horizon = tonumber(ARGV[4])
local start = math.max(now, tat)
if lost and tat == 0 then start = math.max(start, lost + horizon + interval) end
local lost_text = lost and string.format('%.0f', lost)
if start - now > horizon then
  return {start - now - horizon, start, epoch, lost_text, 0}
end
set_tat(KEYS[1], start + interval)
return {start - now, start, epoch, lost_text, 1}
""")

# KEYS[1] tat, KEYS[2] host; ARGV delay_us, until (client Unix time, as
# text), host_ttl_ms, client_now, back-off, its peak ('' to leave them).  No
# slot is granted before now + delay on the server clock, the host's
# next_allowed becomes max(old, until), and its back-off the one given
# (renewed now: bt).
PAUSE = Script.of(_CLOCK + """
local foreign = foreign_host(KEYS[2])
if foreign then return foreign end
local tat = stored_tat(KEYS[1])
if type(tat) == 'table' then return tat end
local target = now + tonumber(ARGV[1])
if target > now and target > tat then set_tat(KEYS[1], target) end
local na = ARGV[2]
local old = redis.call('HGET', KEYS[2], 'na')
if old then
  local o = tonumber(old)
  if not o then return redis.error_reply('BADDATA ' .. KEYS[2] .. ' has a bad na') end
  if o >= tonumber(na) then na = old end
end
redis.call('HSET', KEYS[2], 'na', na)
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[2], 'bx', ARGV[5], 'bp', ARGV[6], 'bt', string.format('%.0f', now))
end
local keep = tonumber(ARGV[3]) + math.max(0, (tonumber(na) - tonumber(ARGV[4])) * 1000)
redis.call('PEXPIRE', KEYS[2], string.format('%d', math.floor(keep)))
return 1
""")

# KEYS host keys (one slot on a cluster).  Each one's hash (flat field/value list),
# or false where it holds something else (its reader names the key).
LOAD_HOSTS = Script.of("""
local out = {}
for i, key in ipairs(KEYS) do
  local t = redis.call('TYPE', key)['ok']
  if t == 'hash' or t == 'none' then out[i] = redis.call('HGETALL', key) else out[i] = false end
end
return out
""")

# KEYS host keys (one slot on a cluster); ARGV host_ttl_ms, client_now, then
# per key: visits, last_visit ('' for none), next_allowed, visits_since_check,
# back-off and its peak ('' for both: left as stored; written, they are
# renewed now: bt, server clock).  next_allowed only moves forward.  Keys
# holding foreign data are skipped (the others are written) and returned as
# {key, why, key, why, ...}.
FLUSH_HOSTS = Script.of("""
local clock = redis.call('TIME')
local now = string.format('%.0f', tonumber(clock[1]) * 1000000 + tonumber(clock[2]))
local ttl = tonumber(ARGV[1])
local client_now = tonumber(ARGV[2])
local bad = {}
for i, key in ipairs(KEYS) do
  local t = redis.call('TYPE', key)['ok']
  local old = nil
  if t == 'hash' then old = redis.call('HGET', key, 'na') end
  if t ~= 'none' and t ~= 'hash' then
    bad[#bad + 1] = key
    bad[#bad + 1] = 'holds a ' .. t
  elseif old and not tonumber(old) then
    bad[#bad + 1] = key
    bad[#bad + 1] = 'has a bad na'
  else
    local at = 2 + (i - 1) * 6
    local na = ARGV[at + 3]
    if old and tonumber(old) > tonumber(na) then na = old end
    redis.call('HSET', key, 'v', ARGV[at + 1], 'na', na, 'vc', ARGV[at + 4])
    if ARGV[at + 2] == '' then
      redis.call('HDEL', key, 'lv')
    else
      redis.call('HSET', key, 'lv', ARGV[at + 2])
    end
    if ARGV[at + 5] ~= '' then
      redis.call('HSET', key, 'bx', ARGV[at + 5], 'bp', ARGV[at + 6], 'bt', now)
    end
    local keep = ttl + math.max(0, (tonumber(na) - client_now) * 1000)
    redis.call('PEXPIRE', key, string.format('%d', math.floor(keep)))
  end
end
return bad
""")
