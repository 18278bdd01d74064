"""A store in Redis, shared by a fleet of crawler workers.

One ``RedisStore`` per worker process, all pointing at the same Redis and
prefix, gives the fleet one robots.txt cache, one fetch per origin at a time
and one pacing schedule per origin:

>>> store = RedisStore("redis://cache.internal:6379/0", prefix="crawl")  # doctest: +SKIP
>>> gate = RobotGate("MyBot/1.0", store=store)  # doctest: +SKIP

Keys (``P`` is the prefix, ``O`` the origin as the gate spells it):

``P:meta``
    String ``robotgate/<format>``; checked when the store opens, created if missing.
``P:robots:O``
    Hash: ``h`` = compact JSON header (every field but origin and body),
    ``b`` = the raw body bytes (absent when the body is ``None``).  Expires
    ``keep_stale`` seconds after the entry stops being fresh (or after it was
    saved, if it was stale already), so a stale copy stays usable for RFC 9309
    section 2.3.1.4 while abandoned origins go away.
``P:host:O``
    Hash: ``v`` visits, ``lv`` last visit, ``na`` next allowed, ``vc`` visits
    since check; numbers as decimal strings (floats as ``repr``, so they round
    trip exactly).  Expires ``host_ttl`` seconds after the last write (plus
    any pause still running).
``P:lock:O``
    String: the token of the worker fetching O's robots.txt, with a PX expiry.
``P:tat:O``
    String: the GCRA "theoretical arrival time", integer microseconds on the
    Redis server's clock; expires shortly after that time has passed (an
    expired key and a past time mean the same thing).
``P:done:O``
    Pub/sub channel: ``saved`` after an entry is stored, ``released`` after a
    lock is released.

Anything else found under those names (wrong type, unparseable value, unknown
format) raises :class:`StoreError` naming the key and the prefix.

Faults: every call retries connection errors with jittered back-off for up
to ``unavailable_timeout`` seconds, then raises :class:`StoreError`.  Nothing
ever returns a default that would let a request through, and the client
reconnects by itself once Redis is back.

How a worker uses the fleet hooks for one origin::

    entry = await store.load_robots(origin)                 # 1 round trip
    if entry is None or not entry.is_fresh(time.time()):
        token = await store.lock_fetch(origin, ttl)         # ttl > fetch timeout
        if token is not None:
            try:
                ...fetch, then await store.save_robots(new_entry)
            finally:
                await store.unlock_fetch(origin, token)
        else:
            entry = await store.wait_robots(origin, ttl)    # None: try the lock again
    await asyncio.sleep(await store.reserve(origin, interval))  # 1 round trip
    ...send the request; on Retry-After: await store.pause(origin, until)

Limits: one Redis server (or a primary with replicas), not Redis Cluster (the
scripts touch several keys).  Pacing lives in Redis: if Redis loses its data
(a restart without persistence, eviction), slots granted before the loss may
overlap new ones by at most the longest wait already handed out; run Redis
with persistence and ``maxmemory-policy noeviction`` where that matters.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import random
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import NoScriptError, ReadOnlyError, ResponseError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "RedisStore needs the redis package (redis-py 5 or newer):"
        " pip install 'robotgate[redis]'"
    ) from _exc

from .base import HostState, RobotsEntry, Store, StoreError

__all__ = ["FORMAT_VERSION", "RedisStore", "Slot"]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

_APP = "robotgate"
#: The value format this code writes under a prefix (kept in ``P:meta``).
FORMAT_VERSION = 1

# Errors that mean "Redis cannot be reached right now": retried, never answered.
_UNAVAILABLE: tuple[type[BaseException], ...] = (
    RedisConnectionError,
    RedisTimeoutError,
    ReadOnlyError,  # a replica during failover
    OSError,
    asyncio.TimeoutError,
)

# Back-off between retries of an unreachable Redis (seconds).
_RETRY_MIN = 0.05
_RETRY_MAX = 1.0
# wait_robots re-checks on its own this often while pub/sub works (a safety
# net for messages lost in a reconnect) ...
_POLL_SUBSCRIBED = (1.0, 5.0)
# ... and this often while the subscriber is down.
_POLL_UNSUBSCRIBED = (0.05, 0.5)
# How long wait_robots waits for the subscriber before it polls instead.
_SUBSCRIBE_WAIT = 0.5
# Host states per script call when flushing.
_FLUSH_CHUNK = 500
# Longest TTL the store sets (Redis rejects absurd expiry times).
_MAX_TTL = 400 * 86_400.0

_HEADER_LEN = 11
_HOST_FIELDS = frozenset({b"v", b"lv", b"na", b"vc"})
_ROBOTS_FIELDS = frozenset({b"h", b"b"})


# -- Lua scripts ----------------------------------------------------------------
#
# All run atomically on the server.  Errors about foreign data are returned as
# "BADDATA <key> <why>" so the client can name the key.

# KEYS[1] meta; ARGV[1] the value to create.  Returns the stored value.
_OPEN_LUA = """
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1])
  return ARGV[1]
end
return v
"""

# KEYS[1] lock; ARGV token, ttl_ms.  1 if the caller holds the lock now.
# Taking a lock we already hold succeeds, so a retry after a lost reply is safe.
_LOCK_LUA = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

# KEYS[1] lock; ARGV token, channel.  Deletes only our own lock.
_UNLOCK_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'released')
  return 1
end
return 0
"""

# KEYS[1] robots; ARGV header, has_body ('1'/'0'), body, ttl_ms, channel.
_SAVE_ROBOTS_LUA = """
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
redis.call('PUBLISH', ARGV[5], 'saved')
return 1
"""

# Shared by the pacing scripts: the server clock in microseconds, and the
# stored theoretical arrival time (0 when absent).
_CLOCK_LUA = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local function stored_tat(key)
  local raw = redis.call('GET', key)
  if not raw then return 0 end
  local n = tonumber(raw)
  if not n or n ~= n or n < 0 or n > 1e17 then
    return redis.error_reply('BADDATA ' .. key .. ' is not a pacing time')
  end
  return n
end
local function set_tat(key, tat)
  redis.call('SET', key, string.format('%.0f', tat),
             'PX', string.format('%d', math.floor((tat - now) / 1000) + 1000))
end
"""

# GCRA with no burst: KEYS[1] tat; ARGV[1] interval_us.  Grants the slot at
# max(now, tat) and moves tat one interval past it, so any two grants for one
# origin are at least one interval apart on the server clock.
# Returns {wait_us, start_us}.
_RESERVE_LUA = (
    _CLOCK_LUA
    + """
local tat = stored_tat(KEYS[1])
if type(tat) == 'table' then return tat end
local start = math.max(now, tat)
set_tat(KEYS[1], start + tonumber(ARGV[1]))
return {start - now, start}
"""
)

# KEYS[1] tat, KEYS[2] host; ARGV delay_us, until (client Unix time, as
# text), host_ttl_ms, client_now.  No slot is granted before now + delay on
# the server clock, and the host's next_allowed becomes max(old, until).
_PAUSE_LUA = (
    _CLOCK_LUA
    + """
local t = redis.call('TYPE', KEYS[2])['ok']
if t ~= 'none' and t ~= 'hash' then
  return redis.error_reply('BADDATA ' .. KEYS[2] .. ' holds a ' .. t)
end
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
local keep = tonumber(ARGV[3]) + math.max(0, (tonumber(na) - tonumber(ARGV[4])) * 1000)
redis.call('PEXPIRE', KEYS[2], string.format('%d', math.floor(keep)))
return 1
"""
)

# KEYS host keys; ARGV host_ttl_ms, client_now, then per key: visits,
# last_visit ('' for none), next_allowed, visits_since_check.  next_allowed
# only moves forward.  Keys holding foreign data are skipped (the others are
# written) and returned as {key, why, key, why, ...}.
_FLUSH_HOSTS_LUA = """
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
    local at = 2 + (i - 1) * 4
    local na = ARGV[at + 3]
    if old and tonumber(old) > tonumber(na) then na = old end
    redis.call('HSET', key, 'v', ARGV[at + 1], 'na', na, 'vc', ARGV[at + 4])
    if ARGV[at + 2] == '' then
      redis.call('HDEL', key, 'lv')
    else
      redis.call('HSET', key, 'lv', ARGV[at + 2])
    end
    local keep = ttl + math.max(0, (tonumber(na) - client_now) * 1000)
    redis.call('PEXPIRE', key, string.format('%d', math.floor(keep)))
  end
end
return bad
"""


@dataclass(frozen=True)
class _Script:
    source: str
    sha: str

    @classmethod
    def of(cls, source: str) -> _Script:
        return cls(source, hashlib.sha1(source.encode()).hexdigest())


_OPEN = _Script.of(_OPEN_LUA)
_LOCK = _Script.of(_LOCK_LUA)
_UNLOCK = _Script.of(_UNLOCK_LUA)
_SAVE_ROBOTS = _Script.of(_SAVE_ROBOTS_LUA)
_RESERVE = _Script.of(_RESERVE_LUA)
_PAUSE = _Script.of(_PAUSE_LUA)
_FLUSH_HOSTS = _Script.of(_FLUSH_HOSTS_LUA)


@dataclass(frozen=True, slots=True)
class Slot:
    """A request slot granted by :meth:`RedisStore.reserve_slot`."""

    #: Seconds the caller must wait before starting its request.
    wait: float
    #: The granted start, in microseconds since the epoch on the Redis server's clock.
    start_us: int
    #: The server's clock when the slot was granted (same unit).
    granted_us: int


@dataclass(eq=False)
class _Waiter:
    """One wait_robots call, woken by the subscriber."""

    event: asyncio.Event
    # A "saved" message arrived: whatever is stored now was stored during the wait.
    saved: bool = False
    # A "released" message arrived: a holder let go of the lock.
    released: bool = False


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"(//[^:/@]*):[^@/]*@", r"\1:***@", url)


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def _ms(seconds: float) -> int:
    """A TTL in whole milliseconds, at least 1, at most ``_MAX_TTL``."""
    if not math.isfinite(seconds):
        seconds = _MAX_TTL if seconds > 0 else 0.0
    return max(1, math.ceil(min(seconds, _MAX_TTL) * 1000))


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class RedisStore(Store):
    """Robots.txt entries, host state, fetch locks and pacing in Redis.

    ``url``: a redis-py URL (``redis://``, ``rediss://``, ``unix://``).
    ``prefix``: namespace for every key; workers sharing data use the same one.
    ``unavailable_timeout``: how long a call keeps retrying an unreachable
    Redis before it raises :class:`StoreError`.
    ``client``: an existing ``redis.asyncio.Redis`` (with
    ``decode_responses=False``) to use instead of ``url``; it is not closed by
    :meth:`close`.
    ``keep_stale``: seconds a robots entry is kept after it stops being fresh.
    ``host_ttl``: seconds host state is kept after its last write.
    ``flush_interval`` / ``flush_batch``: host state is batched like
    :class:`~robotgate.store.sqlite.SQLiteStore` does.
    ``max_connections``: size of the connection pool (calls queue for a free one).

    :attr:`round_trips` counts the requests sent to Redis (each command,
    pipeline or script call, retries included), for benchmarks.
    """

    shared = True
    paces = True

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "robotgate",
        unavailable_timeout: float = 10.0,
        client: aioredis.Redis | None = None,
        keep_stale: float = 30 * 86_400.0,
        host_ttl: float = 7 * 86_400.0,
        flush_interval: float = 1.0,
        flush_batch: int = 500,
        max_connections: int = 50,
    ) -> None:
        if not prefix:
            raise ValueError("prefix must not be empty")
        if unavailable_timeout <= 0:
            raise ValueError("unavailable_timeout must be positive")
        if flush_interval < 0:
            raise ValueError("flush_interval must not be negative")
        if flush_batch < 1:
            raise ValueError("flush_batch must be at least 1")
        if max_connections < 2:
            raise ValueError("max_connections must be at least 2 (one is the subscriber)")
        if client is not None and client.connection_pool.connection_kwargs.get(
            "decode_responses"
        ):
            # Bodies are bytes, and so are the channel names the subscriber matches.
            raise ValueError("RedisStore needs a client with decode_responses=False")
        self.url = url
        self.prefix = prefix
        self.unavailable_timeout = unavailable_timeout
        self.keep_stale = keep_stale
        self.host_ttl = host_ttl
        self.flush_interval = flush_interval
        self.flush_batch = flush_batch
        self.max_connections = max_connections
        #: Requests sent to Redis so far.
        self.round_trips = 0
        self._given_client = client
        self._client: aioredis.Redis | None = client
        self._label = _redact(url) if client is None else repr(client)
        self._opened = False
        self._open_lock: asyncio.Lock | None = None
        self._pending: dict[str, HostState] = {}
        # Batches on their way to Redis: still this process's latest word.
        self._flushing: dict[str, HostState] = {}
        self._flush_task: asyncio.Task[None] | None = None
        # The shared pub/sub subscriber and the wait_robots calls it wakes.
        self._listener: asyncio.Task[None] | None = None
        self._subscribed: asyncio.Event | None = None
        self._waiters: dict[str, set[_Waiter]] = {}
        self._done_prefix = f"{prefix}:done:".encode()

    def __repr__(self) -> str:
        return f"RedisStore({self._label!r}, prefix={self.prefix!r})"

    # -- keys --------------------------------------------------------------

    def _key(self, kind: str, origin: str) -> str:
        return f"{self.prefix}:{kind}:{origin}"

    # -- lifecycle ---------------------------------------------------------

    async def open(self) -> None:
        """Connect and check the prefix holds robotgate data of a known format."""
        await self._ensure_open()

    async def close(self) -> None:
        """Write pending host states, stop the subscriber, close the connections.

        Idempotent; the store may be used again afterwards (it reconnects).
        """
        for task in (self._flush_task, self._listener):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._flush_task = self._listener = None
        self._subscribed = None
        try:
            if self._pending:
                await self.flush()
        finally:
            client, self._client = self._client, self._given_client
            self._opened = False
            self._open_lock = None
            if client is not None and client is not self._given_client:
                await client.aclose()

    @property
    def listening(self) -> bool:
        """True while the shared pub/sub subscriber is connected and subscribed."""
        return self._subscribed is not None and self._subscribed.is_set()

    def _redis(self) -> aioredis.Redis:
        if self._client is None:
            # Bounded socket timeouts so a hung server counts as unreachable;
            # no redis-py retries: _call retries, within unavailable_timeout.
            timeout = max(0.5, min(5.0, self.unavailable_timeout))
            pool = aioredis.BlockingConnectionPool.from_url(
                self.url,
                max_connections=self.max_connections,
                timeout=self.unavailable_timeout,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 0),
            )
            self._client = aioredis.Redis.from_pool(pool)
        return self._client

    async def _ensure_open(self) -> None:
        if self._opened:
            return
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._opened:
                return
            key = f"{self.prefix}:meta"
            found = await self._script(_OPEN, [key], [f"{_APP}/{FORMAT_VERSION}"], opening=True)
            self._check_meta(key, found)
            self._opened = True

    def _check_meta(self, key: str, found: object) -> None:
        value = _text(found) if isinstance(found, (bytes, str)) else repr(found)
        app, _, version = value.partition("/")
        if app != _APP or not version.isdigit():
            raise StoreError(
                f"Redis prefix {self.prefix!r} at {self._label} holds data of another"
                f" application ({key!r} is {value[:60]!r}, not '{_APP}/<n>')."
                " Use another prefix, or delete the keys under this one."
            )
        if int(version) != FORMAT_VERSION:
            raise StoreError(
                f"Redis prefix {self.prefix!r} at {self._label} holds robotgate data in format"
                f" {version} ({key!r}); this robotgate reads format {FORMAT_VERSION}."
                " Use another prefix, or upgrade robotgate."
            )

    # -- calls, retries and errors -----------------------------------------

    def _bad(self, key: str, why: str) -> StoreError:
        return StoreError(
            f"foreign or damaged data under Redis prefix {self.prefix!r} at {self._label}:"
            f" key {key!r} {why}. Delete the key or use another prefix."
        )

    async def _call(
        self,
        attempt: Callable[[aioredis.Redis], Awaitable[_T]],
        keys: Sequence[str],
        *,
        opening: bool = False,
    ) -> _T:
        """Run ``attempt`` until it answers; fail closed after ``unavailable_timeout``."""
        if not opening:
            await self._ensure_open()
        started = time.monotonic()
        delay = _RETRY_MIN
        while True:
            self.round_trips += 1
            try:
                return await attempt(self._redis())
            except _UNAVAILABLE as exc:
                elapsed = time.monotonic() - started
                if elapsed >= self.unavailable_timeout:
                    raise StoreError(
                        f"Redis at {self._label} unreachable for {elapsed:.1f} s: {exc}"
                    ) from exc
                pause = min(delay * random.uniform(0.5, 1.0), self.unavailable_timeout - elapsed)
                await asyncio.sleep(pause)
                delay = min(delay * 2, _RETRY_MAX)
            except ResponseError as exc:
                raise self._response_error(exc, keys) from exc

    def _response_error(self, exc: ResponseError, keys: Sequence[str]) -> StoreError:
        message = str(exc)
        found = re.search(r"BADDATA (.*?) (holds a \w+|is not a pacing time|has a bad na)", message)
        if found:
            return self._bad(found.group(1), found.group(2))
        if "WRONGTYPE" in message:
            shown = ", ".join(repr(k) for k in keys)
            return self._bad(shown, "holds a value of the wrong type")
        return StoreError(f"Redis at {self._label} refused a robotgate command: {message}")

    async def _script(
        self, script: _Script, keys: list[str], args: list[Any], *, opening: bool = False
    ) -> Any:
        async def attempt(client: aioredis.Redis) -> Any:
            try:
                return await client.evalsha(script.sha, len(keys), *keys, *args)
            except NoScriptError:
                # Not cached on this server (yet, or after a restart): EVAL caches it.
                self.round_trips += 1
                return await client.eval(script.source, len(keys), *keys, *args)

        return await self._call(attempt, keys, opening=opening)

    # -- robots entries ----------------------------------------------------

    async def load_robots(self, origin: str) -> RobotsEntry | None:
        key = self._key("robots", origin)
        raw = await self._call(lambda client: client.hgetall(key), [key])
        return self._decode_robots(origin, key, raw)

    async def save_robots(self, entry: RobotsEntry) -> None:
        key = self._key("robots", entry.origin)
        header = json.dumps(
            [
                entry.outcome,
                entry.fetched_at,
                entry.fresh_until,
                entry.status,
                entry.content_type,
                entry.etag,
                entry.last_modified,
                entry.failures,
                entry.final_url,
                entry.detail,
                entry.good_at,
            ],
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode()
        body = entry.body
        # max() also turns a NaN freshness into 0.
        ttl = _ms(max(0.0, entry.fresh_until - time.time()) + self.keep_stale)
        await self._script(
            _SAVE_ROBOTS,
            [key],
            [header, b"0" if body is None else b"1", body or b"", ttl, self._channel(entry.origin)],
        )

    def _decode_robots(self, origin: str, key: str, raw: object) -> RobotsEntry | None:
        if not isinstance(raw, dict):
            raise self._bad(key, f"gave {type(raw).__name__}, not a hash")
        if not raw:
            return None
        if not set(raw) <= _ROBOTS_FIELDS or b"h" not in raw:
            raise self._bad(key, f"has fields {sorted(raw)[:5]!r}, not a robots entry")
        try:
            header = json.loads(raw[b"h"])
        except ValueError as exc:
            raise self._bad(key, f"has an unreadable header ({exc})") from exc
        if not isinstance(header, list) or len(header) != _HEADER_LEN:
            raise self._bad(key, "has a header of the wrong shape")
        try:
            (
                outcome,
                fetched_at,
                fresh_until,
                status,
                content_type,
                etag,
                last_modified,
                failures,
                final_url,
                detail,
                good_at,
            ) = header
            return RobotsEntry(
                origin=origin,
                outcome=_need(outcome, str),
                fetched_at=_number(fetched_at),
                fresh_until=_number(fresh_until),
                status=None if status is None else _need(status, int),
                body=raw.get(b"b"),
                content_type=_opt_str(content_type),
                etag=_opt_str(etag),
                last_modified=_opt_str(last_modified),
                failures=_need(failures, int),
                final_url=_opt_str(final_url),
                detail=_need(detail, str),
                good_at=None if good_at is None else _number(good_at),
            )
        except (TypeError, ValueError) as exc:
            raise self._bad(key, f"has a header with a bad field ({exc})") from exc

    # -- host state (batched) ----------------------------------------------

    async def load_host(self, origin: str) -> HostState | None:
        pending = self._pending.get(origin)
        if pending is None:
            pending = self._flushing.get(origin)
        if pending is not None:
            return replace(pending)
        key = self._key("host", origin)
        raw = await self._call(lambda client: client.hgetall(key), [key])
        if not isinstance(raw, dict):
            raise self._bad(key, f"gave {type(raw).__name__}, not a hash")
        if not raw:
            return None
        if not set(raw) <= _HOST_FIELDS:
            raise self._bad(key, f"has fields {sorted(raw)[:5]!r}, not host state")
        try:
            last_visit = raw.get(b"lv")
            return HostState(
                origin=origin,
                visits=int(raw.get(b"v", b"0")),
                last_visit=None if last_visit is None else float(last_visit),
                next_allowed=float(raw.get(b"na", b"0")),
                visits_since_check=int(raw.get(b"vc", b"0")),
            )
        except ValueError as exc:
            raise self._bad(key, f"has a bad number ({exc})") from exc

    async def save_host(self, state: HostState) -> None:
        self._pending[state.origin] = replace(state)
        if len(self._pending) >= self.flush_batch:
            await self.flush()
        elif self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.get_running_loop().create_task(self._flush_later())

    async def flush(self) -> None:
        """Write all pending host states: one script call per ``_FLUSH_CHUNK`` hosts."""
        while self._pending:
            origins = list(self._pending)[:_FLUSH_CHUNK]
            batch = {origin: self._pending.pop(origin) for origin in origins}
            keys = [self._key("host", origin) for origin in origins]
            args: list[Any] = [_ms(self.host_ttl), repr(time.time())]
            for state in batch.values():
                args += [
                    state.visits,
                    "" if state.last_visit is None else repr(float(state.last_visit)),
                    repr(float(state.next_allowed)),
                    state.visits_since_check,
                ]
            self._flushing.update(batch)
            try:
                bad = await self._script(_FLUSH_HOSTS, keys, args)
            except BaseException:
                for origin, state in batch.items():
                    # States saved since the batch left are newer: keep them.
                    self._pending.setdefault(origin, state)
                raise
            finally:
                for origin, state in batch.items():
                    if self._flushing.get(origin) is state:
                        del self._flushing[origin]
            if bad:
                # Not requeued: retrying cannot help, and must not hold up the rest.
                first, why = _text(bad[0]), _text(bad[1])
                more = f" (and {len(bad) // 2 - 1} more keys)" if len(bad) > 2 else ""
                raise self._bad(first, why + more)

    async def _flush_later(self) -> None:
        await asyncio.sleep(self.flush_interval)
        try:
            await self.flush()
        except Exception:
            # The batch is back in _pending; the next save, flush or close retries.
            _log.warning("robotgate: writing host state to %s failed", self._label, exc_info=True)

    # -- fleet hooks: fetch locks and waiting --------------------------------

    def _channel(self, origin: str) -> str:
        return f"{self.prefix}:done:{origin}"

    async def lock_fetch(self, origin: str, ttl: float) -> str | None:
        """Become the one worker fetching ``origin``'s robots.txt, for at most ``ttl`` s."""
        token = secrets.token_hex(16)
        got = await self._script(_LOCK, [self._key("lock", origin)], [token, _ms(ttl)])
        return token if got == 1 else None

    async def unlock_fetch(self, origin: str, token: str) -> None:
        """Release the lock if ``token`` still holds it; wakes the waiters."""
        await self._script(
            _UNLOCK, [self._key("lock", origin)], [token, self._channel(origin)]
        )

    async def wait_robots(self, origin: str, timeout: float) -> RobotsEntry | None:
        """Wait for the lock holder's result, woken by pub/sub rather than polling.

        Returns an entry that is fresh or was fetched after this call began.
        Returns ``None`` when ``timeout`` passes, and early when the fetch lock,
        once seen held, is released or expires without such an entry (the
        holder gave up or died): the caller should then try :meth:`lock_fetch`.
        """
        started = time.time()
        deadline = time.monotonic() + max(0.0, timeout)
        await self._ensure_open()
        subscribed = await self._subscribe(deadline)
        waiter = _Waiter(asyncio.Event())
        self._waiters.setdefault(origin, set()).add(waiter)
        robots_key, lock_key = self._key("robots", origin), self._key("lock", origin)
        saw_lock = False
        poll_min, poll_max = _POLL_SUBSCRIBED if subscribed.is_set() else _POLL_UNSUBSCRIBED
        poll = poll_min

        async def check(client: aioredis.Redis) -> list[Any]:
            # The entry and the lock's remaining life, in one round trip.
            async with client.pipeline(transaction=False) as pipe:
                pipe.hgetall(robots_key)
                pipe.pttl(lock_key)
                return await pipe.execute()

        try:
            while True:
                # Cleared before the check: a message arriving during it sets it again.
                waiter.event.clear()
                raw, lock_ms = await self._call(check, [robots_key, lock_key])
                entry = self._decode_robots(origin, robots_key, raw)
                # A save announced during the wait counts whatever the
                # fetching worker's clock says (clocks of workers may differ).
                if entry is not None and (
                    waiter.saved or entry.fetched_at >= started or entry.is_fresh(time.time())
                ):
                    return entry
                held = isinstance(lock_ms, int) and lock_ms != -2
                if held:
                    saw_lock = True
                elif saw_lock or waiter.released:
                    return None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                if not subscribed.is_set():
                    poll_min, poll_max = _POLL_UNSUBSCRIBED
                    poll = min(poll, poll_max)
                # Jitter so that waiting workers do not poll in lockstep.
                nap = min(remaining, poll * random.uniform(0.5, 1.0))
                if held and isinstance(lock_ms, int) and lock_ms >= 0:
                    # Look again just after the lock expires: its holder may be dead.
                    nap = min(nap, lock_ms / 1000 + 0.01)
                try:
                    await asyncio.wait_for(waiter.event.wait(), nap)
                except asyncio.TimeoutError:
                    poll = min(poll * 2, poll_max)
        finally:
            waiters = self._waiters.get(origin)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiters[origin]

    async def _subscribe(self, deadline: float) -> asyncio.Event:
        """Start the shared subscriber if needed; wait (bounded) until it listens."""
        if self._subscribed is None:
            self._subscribed = asyncio.Event()
        if self._listener is None or self._listener.done():
            self._listener = asyncio.get_running_loop().create_task(
                self._listen(self._subscribed)
            )
        ready = self._subscribed
        if not ready.is_set():
            # Healthy, it is ready in a round trip.  If not, wait_robots polls
            # instead, and its own calls fail closed if Redis is down.
            limit = min(deadline - time.monotonic(), _SUBSCRIBE_WAIT)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(ready.wait(), max(0.0, limit))
        return ready

    async def _listen(self, ready: asyncio.Event) -> None:
        """The one subscriber per store: a pattern subscription to every done channel.

        Reconnects with back-off for as long as the store is open; after every
        (re)subscription all waiters re-check, since messages sent while it was
        down are lost.
        """
        pattern = _glob_escape(f"{self.prefix}:done:") + "*"
        delay = _RETRY_MIN
        while True:
            pubsub = self._redis().pubsub()
            try:
                self.round_trips += 1
                await pubsub.psubscribe(pattern)
                while True:
                    message = await pubsub.get_message(timeout=30.0)
                    if message is None:
                        continue
                    kind = message.get("type")
                    if kind == "psubscribe":
                        delay = _RETRY_MIN
                        ready.set()
                        self._wake_all()
                    elif kind == "pmessage":
                        self._dispatch(message.get("channel"), message.get("data"))
            except _UNAVAILABLE as exc:
                _log.debug("robotgate: Redis subscriber at %s lost: %s", self._label, exc)
            except Exception:
                # Say why, then keep going: waiters poll meanwhile.
                _log.warning("robotgate: Redis subscriber at %s failed", self._label, exc_info=True)
            finally:
                ready.clear()
                await pubsub.aclose()  # type: ignore[no-untyped-call]
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, _RETRY_MAX)

    def _dispatch(self, channel: object, data: object) -> None:
        if not isinstance(channel, bytes) or not channel.startswith(self._done_prefix):
            return
        origin = channel[len(self._done_prefix) :].decode("utf-8", "replace")
        for waiter in self._waiters.get(origin, ()):
            if data == b"saved":
                waiter.saved = True
            elif data == b"released":
                waiter.released = True
            waiter.event.set()

    def _wake_all(self) -> None:
        for waiters in self._waiters.values():
            for waiter in waiters:
                waiter.event.set()

    # -- fleet hooks: pacing -------------------------------------------------

    async def reserve(self, origin: str, interval: float) -> float:
        """Claim the next request slot for ``origin``; the seconds to wait before it.

        Any two slots granted for one origin, by any worker, are at least
        ``interval`` apart on the Redis server's clock, and none falls within
        a :meth:`pause`.  The caller must sleep the returned time and then
        start its request (a slot it does not use is simply lost).
        """
        return (await self.reserve_slot(origin, interval)).wait

    async def reserve_slot(self, origin: str, interval: float) -> Slot:
        """:meth:`reserve`, with the granted start on the server's clock."""
        if not interval >= 0:
            raise ValueError("interval must not be negative")
        interval_us = math.ceil(min(interval, _MAX_TTL) * 1_000_000)
        key = self._key("tat", origin)
        reply = await self._script(_RESERVE, [key], [interval_us])
        try:
            wait_us, start_us = (int(part) for part in reply)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"Redis at {self._label} gave an odd reply {reply!r}") from exc
        return Slot(wait_us / 1_000_000, start_us, start_us - wait_us)

    async def pause(self, origin: str, until: float) -> None:
        """Grant no slot for ``origin`` before the Unix time ``until`` (Retry-After).

        The pause is applied as a duration (``until`` minus this worker's
        clock) from the server's clock, so clock skew between workers and
        Redis does not shorten it.  The host's ``next_allowed`` becomes
        ``until`` unless it is later already.
        """
        for table in (self._pending, self._flushing):
            pending = table.get(origin)
            if pending is not None and pending.next_allowed < until:
                pending.next_allowed = until
        now = time.time()
        delay_us = math.ceil(max(-_MAX_TTL, min(until - now, _MAX_TTL)) * 1_000_000)
        await self._script(
            _PAUSE,
            [self._key("tat", origin), self._key("host", origin)],
            [delay_us, repr(float(until)), _ms(self.host_ttl), repr(now)],
        )


def _need(value: object, kind: type[_T]) -> _T:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TypeError(f"{value!r} is not {kind.__name__}")
    return value


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{value!r} is not a number")
    return float(value)


def _opt_str(value: object) -> str | None:
    return None if value is None else _need(value, str)
