"""The Lua scripts of a named crawl kept in Redis (see :mod:`.crawl`).

Every key of one crawl starts with the crawl's base ``P:crawl:{crawl/NAME}`` (passed
as ``KEYS[1]``): one hash tag, so on Redis Cluster the whole crawl lives in one
slot and each script (a page's outcome with its links, a batch of pages) is atomic
there as on one server.  The scripts name the per-server keys (``B:q:S``, ``B:f:S``)
from the base; they share its tag.

Keys under the base: ``meta`` (hash: ``v`` the crawl layout's version), ``n``
(counts: q, f, d, s, x), ``st`` (URL key -> state digit), ``e`` (URL key ->
``depth|discovered|mark|len(page)|page url``: the mark ``i`` for input, ``t``, ``f``
or ``n`` for a pointer of a page public, private or to be looked up), ``a`` (URL key ->
attempts), ``servers`` (set),
``q:S`` (list: server S's queued keys, some perhaps finished since: skipped),
``f:S`` (hash: S's keys in flight -> worker), ``lw`` (hash: leased server ->
worker), ``le`` (zset: leased server -> lease end, ms on the Redis clock),
``ready`` (zset: unleased server with queued keys -> since when), ``lend`` (hash:
server -> when its last lease ended, ms).
A missing ``meta``, or one ``created`` at another moment than the caller opened
(the crawl lost, then made again by a worker that opened it afresh), means Redis
lost the crawl: the scripts answer ``LOST``.
"""

from __future__ import annotations

from .scripts import Script

__all__ = ["CRAWL_COUNTS", "CRAWL_DROP", "CRAWL_OPEN", "CRAWL_RELEASE", "CRAWL_SYNC",
           "CRAWL_WRITE", "LAYOUT"]

#: The crawl layout this code writes (``meta`` field ``v``); another one is refused.
#: 2: each entry keeps who pointed at it (layout 1 did not).
LAYOUT = 2

# Every script below but CRAWL_OPEN, CRAWL_COUNTS and CRAWL_DROP takes, as its last
# argument, the crawl's ``created`` as the caller opened it.
_HEAD = """
local b = KEYS[1]
if redis.call('HGET', b .. ':meta', 'created') ~= ARGV[#ARGV] then return {'LOST'} end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local st, ent, att, n = b .. ':st', b .. ':e', b .. ':a', b .. ':n'
local lw, le, ready, lend = b .. ':lw', b .. ':le', b .. ':ready', b .. ':lend'
local function counts()
  local c = redis.call('HMGET', n, 'q', 'f', 'd', 's', 'x')
  for i = 1, 5 do c[i] = tonumber(c[i] or 0) end
  return c
end
"""

# KEYS[1] base, KEYS[2] the set of crawl names (one server only: on a cluster it
# lives in another slot, and is added to apart); ARGV layout, created, the crawl's
# name.  The crawl made if new, and named in KEYS[2] if it is in this layout; its
# layout, counts and ``created`` (the crawl's identity: one made again after a loss
# has another).
CRAWL_OPEN = Script.of("""
local b = KEYS[1]
redis.call('HSETNX', b .. ':meta', 'v', ARGV[1])
redis.call('HSETNX', b .. ':meta', 'created', ARGV[2])
local m = redis.call('HMGET', b .. ':meta', 'v', 'created')
if KEYS[2] and m[1] == ARGV[1] then redis.call('SADD', KEYS[2], ARGV[3]) end
local c = redis.call('HMGET', b .. ':n', 'q', 'f', 'd', 's', 'x')
for i = 1, 5 do c[i] = tonumber(c[i] or 0) end
return {m[1], c, m[2]}
""")

# KEYS[1] base.  The counts, all 0 where there is no crawl (nothing is made).
CRAWL_COUNTS = Script.of("""
local c = redis.call('HMGET', KEYS[1] .. ':n', 'q', 'f', 'd', 's', 'x')
for i = 1, 5 do c[i] = tonumber(c[i] or 0) end
return c
""")

# KEYS[1] base; ARGV worker, ttl_ms, want, per_server, fresh, nbusy, busy...,
# nidle, idle..., created
# Lapsed leases are taken back (their in-flight keys to the front of their queue);
# the worker's busy servers are renewed; its idle ones give up to per_server keys,
# or are let go; then up to ``fresh`` ready servers are leased, then the busy ones
# give keys, until ``want`` keys are handed out.
# Returns {reaped, counts, flat (held server, ms since its lease before ended: -1
# held already, -2 never leased)..., lost servers, flat (server, key, entry,
# attempts)...}.
CRAWL_SYNC = Script.of(_HEAD + """
local worker, ttl = ARGV[1], tonumber(ARGV[2])
local want, per, fresh = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local reaped = 0
for _, s in ipairs(redis.call('ZRANGEBYSCORE', le, '-inf', now, 'LIMIT', 0, 256)) do
  local f, q = b .. ':f:' .. s, b .. ':q:' .. s
  local moved = 0
  for _, k in ipairs(redis.call('HKEYS', f)) do
    if redis.call('HGET', st, k) == '1' then
      redis.call('HSET', st, k, 0)
      redis.call('LPUSH', q, k)
      moved = moved + 1
    end
  end
  redis.call('DEL', f)
  redis.call('HINCRBY', n, 'f', 0 - moved)
  redis.call('HINCRBY', n, 'q', moved)
  reaped = reaped + moved
  local ended = redis.call('ZSCORE', le, s)
  redis.call('ZREM', le, s)
  redis.call('HDEL', lw, s)
  redis.call('HSET', lend, s, ended)
  if redis.call('LLEN', q) > 0 then redis.call('ZADD', ready, ended, s) end
end
local out, held, lost = {}, {}, {}
local function pop(s, most)
  local q, f = b .. ':q:' .. s, b .. ':f:' .. s
  local got = 0
  while got < most do
    local ks = redis.call('LPOP', q, most - got)
    if not ks then break end
    for _, k in ipairs(ks) do
      if redis.call('HGET', st, k) == '0' then
        redis.call('HSET', st, k, 1)
        redis.call('HSET', f, k, worker)
        out[#out + 1] = s
        out[#out + 1] = k
        out[#out + 1] = redis.call('HGET', ent, k) or ''
        out[#out + 1] = redis.call('HGET', att, k) or '0'
        got = got + 1
      end
    end
  end
  redis.call('HINCRBY', n, 'q', 0 - got)
  redis.call('HINCRBY', n, 'f', got)
  want = want - got
  return got
end
local function let_go(s)
  redis.call('HDEL', lw, s)
  redis.call('ZREM', le, s)
  redis.call('HSET', lend, s, now)
  if redis.call('LLEN', b .. ':q:' .. s) > 0 then redis.call('ZADD', ready, now, s) end
end
local i = 6
local busy = {}
for j = 1, tonumber(ARGV[i]) do
  local s = ARGV[i + j]
  if redis.call('HGET', lw, s) == worker then
    redis.call('ZADD', le, now + ttl, s)
    busy[#busy + 1] = s
    held[#held + 1] = s
    held[#held + 1] = -1
  else
    lost[#lost + 1] = s
  end
end
i = i + tonumber(ARGV[i]) + 1
for j = 1, tonumber(ARGV[i]) do
  local s = ARGV[i + j]
  if redis.call('HGET', lw, s) == worker then
    if want > 0 and pop(s, math.min(want, per)) > 0 then
      redis.call('ZADD', le, now + ttl, s)
      held[#held + 1] = s
      held[#held + 1] = -1
    else
      let_go(s)
    end
  end
end
if want > 0 and fresh > 0 then
  for _, s in ipairs(redis.call('ZRANGEBYSCORE', ready, '-inf', now, 'LIMIT', 0, fresh)) do
    redis.call('ZREM', ready, s)
    redis.call('HSET', lw, s, worker)
    redis.call('ZADD', le, now + ttl, s)
    local ended = redis.call('HGET', lend, s)
    if want > 0 and pop(s, math.min(want, per)) > 0 then
      held[#held + 1] = s
      held[#held + 1] = ended and math.max(0, now - tonumber(ended)) or -2
    else
      let_go(s)
    end
  end
end
for _, s in ipairs(busy) do
  if want <= 0 then break end
  pop(s, math.min(want, per))
end
return {reaped, counts(), held, lost, out}
""")

# KEYS[1] base; ARGV npages, then per page: key ('' for input), server, outcome,
# attempts, nlinks, then per link: key, server, entry; then created.
# Each page's new links are queued and its outcome written, all in this one call.
# Returns {counts, new links per page...}.
CRAWL_WRITE = Script.of(_HEAD + """
local names = {[2] = 'd', [3] = 's', [4] = 'x'}
local i = 2
local news = {}
for _ = 1, tonumber(ARGV[1]) do
  local k, s, o, a, nl = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], tonumber(ARGV[i + 4])
  i = i + 5
  local new = 0
  for _ = 1, nl do
    local lk, ls = ARGV[i], ARGV[i + 1]
    if redis.call('HSETNX', st, lk, 0) == 1 then
      redis.call('HSET', ent, lk, ARGV[i + 2])
      redis.call('RPUSH', b .. ':q:' .. ls, lk)
      redis.call('SADD', b .. ':servers', ls)
      if redis.call('HEXISTS', lw, ls) == 0 then redis.call('ZADD', ready, 'NX', now, ls) end
      new = new + 1
    end
    i = i + 3
  end
  redis.call('HINCRBY', n, 'q', new)
  news[#news + 1] = new
  if k ~= '' then
    local old = redis.call('HGET', st, k)
    if old == '0' or old == '1' then
      redis.call('HSET', st, k, o)
      redis.call('HINCRBY', n, old == '1' and 'f' or 'q', -1)
      redis.call('HINCRBY', n, names[tonumber(o)], 1)
    end
    redis.call('HDEL', b .. ':f:' .. s, k)
    if a ~= '0' then redis.call('HSET', att, k, a) end
  end
end
return {counts(), news}
""")

# KEYS[1] base; ARGV worker, nkeys, then per key: key, server; then nservers,
# servers, created.  Keys this worker was handed go back to the front of their queues, and
# the servers are let go.  Returns the counts.
CRAWL_RELEASE = Script.of(_HEAD + """
local worker = ARGV[1]
local m = tonumber(ARGV[2])
local back = 0
for j = m, 1, -1 do
  local k, s = ARGV[1 + 2 * j], ARGV[2 + 2 * j]
  local f = b .. ':f:' .. s
  if redis.call('HGET', st, k) == '1' and redis.call('HGET', f, k) == worker then
    redis.call('HSET', st, k, 0)
    redis.call('HDEL', f, k)
    redis.call('LPUSH', b .. ':q:' .. s, k)
    back = back + 1
  end
end
redis.call('HINCRBY', n, 'f', 0 - back)
redis.call('HINCRBY', n, 'q', back)
local i = 3 + 2 * m
for j = 1, tonumber(ARGV[i]) do
  local s = ARGV[i + j]
  if redis.call('HGET', lw, s) == worker then
    redis.call('HDEL', lw, s)
    redis.call('ZREM', le, s)
    redis.call('HSET', lend, s, now)
    if redis.call('LLEN', b .. ':q:' .. s) > 0 then redis.call('ZADD', ready, now, s) end
  end
end
return {counts()}
""")

# KEYS[1] base.  Deletes the crawl's keys; 1 if there was a crawl.
CRAWL_DROP = Script.of("""
local b = KEYS[1]
local had = redis.call('EXISTS', b .. ':meta')
for _, s in ipairs(redis.call('SMEMBERS', b .. ':servers')) do
  redis.call('UNLINK', b .. ':q:' .. s, b .. ':f:' .. s)
end
redis.call('UNLINK', b .. ':meta', b .. ':n', b .. ':st', b .. ':e', b .. ':a', b .. ':servers',
           b .. ':lw', b .. ':le', b .. ':ready', b .. ':lend')
return had
""")
