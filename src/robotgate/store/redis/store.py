"""RedisStore: robots.txt entries, host state, fetch locks and pacing in Redis."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from ..base import (
    Crawls,
    Fleet,
    HostState,
    RobotsEntry,
    SharedCrawls,
    SlotAhead,
    Slots,
    Store,
    StoreError,
)
from ..batching import HostBatcher
from . import scripts
from .codec import (
    APP,
    BACKOFF_LAPSE,
    FORMAT_VERSION,
    MAX_TTL,
    Keys,
    backoff_args,
    decode_host,
    decode_robots,
    host_args,
    ms,
    redact,
    robots_header,
    text,
)
from .crawl import LEASE
from .link import Client, Link
from .notify import ChannelNotifier, Notifier, Publisher, ShardNotifier, wait_for_entry
from .together import Together

if TYPE_CHECKING:
    from ..crawl_state import CrawlState
    from ..leases import Leases

__all__ = ["RedisStore", "Slot"]

_T = TypeVar("_T")

# Host states per script call when flushing.
_FLUSH_CHUNK = 500
# How long the moment Redis was found to have lost its data is kept (ms): past any
# interval a server is paced at, it holds nothing back.
_LOST_KEEP_MS = 86_400_000
# No slot is granted further ahead than this (s), the length of a crawl's lease: should
# Redis lose its data, whatever was handed out before (a slot, a lease) ends within it.
_HORIZON = LEASE
# Host states read ahead are used for this long (s), and this many kept at most.
_AHEAD_KEEP = 5.0
_AHEAD_MAX = 10_000
# Seconds a robots.txt look (with its fetch lock) or save waits for others to share its
# request: a crawl's visits ask several new origins, and their fetches end, within it.
ROBOTS_WINDOW = 0.01

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Slot:
    """A request slot granted by :meth:`RedisStore.reserve_slot`."""

    #: Seconds the caller must wait before starting its request.
    wait: float
    #: The granted start, in microseconds since the epoch on the Redis server's clock.
    start_us: int
    #: The server's clock when the slot was granted (same unit).
    granted_us: int
    #: False: the slot is beyond the store's horizon, none was granted (``wait`` is
    #: when it is within).
    granted: bool = True


def _cluster_url(url: str) -> tuple[str, bool]:
    """``redis+cluster://`` (or ``rediss+cluster://``) names a cluster node: the URL without it."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() in ("redis+cluster", "rediss+cluster"):
        return f"{scheme[: -len('+cluster')]}://{rest}", True
    return url, False


def _cluster_mode(url: str, cluster: bool, client: aioredis.Redis | RedisCluster | None) -> bool:
    """Whether the store talks to a cluster; raises ValueError for a client it cannot use."""
    if isinstance(client, RedisCluster):
        cluster = True
        decode = client.connection_kwargs.get("decode_responses")
    elif client is not None:
        if cluster:
            raise ValueError("cluster=True needs a RedisCluster client (or none)")
        decode = client.connection_pool.connection_kwargs.get("decode_responses")
    else:
        decode = False
        if cluster and url.startswith("unix:"):
            raise ValueError("Redis Cluster is reached over TCP, not a unix socket")
    if decode:
        # Bodies are bytes, and so are the channel names the subscriber matches.
        raise ValueError("RedisStore needs a client with decode_responses=False")
    return cluster


class RedisStore(Store, Fleet, Slots, Crawls, SharedCrawls):
    """Robots.txt entries, host state, fetch locks and pacing in Redis or Redis Cluster.

    ``url``: a redis-py URL (``redis://``, ``rediss://``, ``unix://``); with
    ``cluster=True``, any node of a Redis Cluster (the others are discovered).
    ``redis+cluster://`` (``rediss+cluster://``) says ``cluster=True`` in the URL
    itself, for places that take only a URL.
    ``prefix``: namespace for every key; workers sharing data use the same one
    (no braces: they would break the cluster hash tags).
    ``unavailable_timeout``: how long a call keeps retrying an unreachable
    Redis (or a cluster in failover) before it raises :class:`StoreError`.
    ``client``: an existing ``redis.asyncio.Redis`` or ``RedisCluster`` (with
    ``decode_responses=False``) to use instead of ``url``; it is not closed by
    :meth:`close`.  A ``RedisCluster`` implies ``cluster=True``.
    ``keep_stale``: seconds a robots entry is kept after it stops being fresh.
    ``host_ttl``: seconds host state is kept after its last write.
    ``flush_interval`` / ``flush_batch``: host state is batched (see
    :mod:`robotgate.store.batching`).
    ``max_connections``: connections per server (calls queue for a free one).

    Host state and pacing are keyed by whatever the gate passes as ``origin``
    to :meth:`load_host`, :meth:`save_host`, :meth:`reserve` and :meth:`pause`
    (its politeness-group key, such as ``host:example.com``); robots entries
    and locks by origin.  The store treats both as opaque strings.

    :attr:`round_trips` counts the requests sent to Redis (each command,
    script call, or pipeline per node, retries included), for benchmarks.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "robotgate",
        cluster: bool = False,
        unavailable_timeout: float = 10.0,
        client: aioredis.Redis | RedisCluster | None = None,
        keep_stale: float = 30 * 86_400.0,
        host_ttl: float = 7 * 86_400.0,
        flush_interval: float = 1.0,
        flush_batch: int = 500,
        max_connections: int = 50,
    ) -> None:
        if unavailable_timeout <= 0:
            raise ValueError("unavailable_timeout must be positive")
        if max_connections < 2:
            raise ValueError("max_connections must be at least 2 (one is the subscriber)")
        url, by_scheme = _cluster_url(url)
        cluster = _cluster_mode(url, cluster or by_scheme, client)
        self.url = url
        self.prefix = prefix
        self.cluster = cluster
        self.unavailable_timeout = unavailable_timeout
        self.keep_stale = keep_stale
        self.host_ttl = host_ttl
        self.flush_interval = flush_interval
        self.flush_batch = flush_batch
        self.max_connections = max_connections
        label = redact(url) if client is None else repr(client)
        self._keys = Keys(prefix, label)
        self._link = Link(
            url,
            cluster=cluster,
            client=client,
            unavailable_timeout=unavailable_timeout,
            max_connections=max_connections,
            label=label,
            map_error=self._keys.response_error,
        )
        self._hosts = HostBatcher(
            self._write_hosts, interval=flush_interval, batch=flush_batch, label=label
        )
        self._notifier: Notifier | None = None
        self._publisher = Publisher(self._link, self._keys, cluster)
        # The robots.txt looks and saves go ahead of pacing calls (see _robots_batch).
        self._robots = Together(self._robots_batch, ROBOTS_WINDOW)
        self._opened = False
        self._open_lock: asyncio.Lock | None = None
        # The data's epoch this store saw (one server): another, or none, is lost data.
        self._epoch: str | None = None
        # Host states read ahead (read_hosts_ahead), until load_host takes them.
        self._ahead: dict[str, tuple[HostState | None, float]] = {}

    def __repr__(self) -> str:
        kind = ", cluster=True" if self.cluster else ""
        return f"RedisStore({self._link.label!r}, prefix={self.prefix!r}{kind})"

    @property
    def round_trips(self) -> int:
        """Requests sent to Redis so far."""
        return self._link.round_trips

    @property
    def listening(self) -> bool:
        """True while a pub/sub subscriber is connected and subscribed."""
        return self._notifier is not None and self._notifier.listening

    @property
    def client(self) -> Client:
        """The redis-py client in use (made on first use unless one was given)."""
        return self._link.client()

    # -- lifecycle ---------------------------------------------------------

    async def open(self) -> None:
        """Connect and check the prefix holds robotgate data of a known format."""
        await self._ensure_open()

    async def close(self) -> None:
        """Write pending host states, stop the subscribers, close the connections.

        Idempotent; the store may be used again afterwards (it reconnects).
        """
        notifier, self._notifier = self._notifier, None
        if notifier is not None:
            await notifier.close()
        await self._publisher.settle()
        try:
            await self._robots.close()
            await self._hosts.close()
        finally:
            self._opened = False
            self._open_lock = None
            await self._link.close()

    async def _ensure_open(self) -> None:
        if self._opened:
            return
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._opened:
                return
            meta = self._keys.meta
            if self.cluster:
                found = await self._link.script(scripts.OPEN, [meta], [f"{APP}/{FORMAT_VERSION}"])
                self._keys.check_meta(found)
            else:
                # The format's check and the data's epoch in one round trip; the epoch is
                # made only under a meta value of this code's.
                found, epoch = await self._link.script(
                    scripts.OPEN_EPOCH, [meta, self._keys.epoch],
                    [f"{APP}/{FORMAT_VERSION}", secrets.token_hex(8)])
                self._keys.check_meta(found)
                if self._epoch is None:
                    self._epoch = text(epoch)
            self._opened = True

    # -- calls and errors ----------------------------------------------------

    # -- for the store's own modules (the named crawl, crawl.py) ---------------

    async def call(self, attempt: Callable[[Client], Awaitable[_T]], keys: Sequence[str]) -> _T:
        """``attempt(client)``'s result, the store opened first; ``keys`` (those the
        command touches) pick the cluster node.  Retried while Redis is unreachable, up
        to ``unavailable_timeout``, then :class:`StoreError`."""
        await self._ensure_open()
        return await self._link.call(attempt, keys)

    async def run_script(self, script: scripts.Script, keys: list[str], args: list[Any], *,
                         urgent: bool = False) -> Any:
        """The reply of the Lua ``script`` run on ``keys`` (one cluster slot) with
        ``args``, the store opened first; retried as :meth:`call` is.  ``urgent``: it
        waits for a connection ahead of the calls that are not."""
        await self._ensure_open()
        return await self._link.script(script, keys, args, urgent=urgent)

    # -- robots entries ----------------------------------------------------

    async def load_robots(self, origin: str) -> RobotsEntry | None:
        key = self._keys.robots(origin)
        raw = await self.call(lambda client: client.hgetall(key), [key])
        return decode_robots(self._keys, origin, key, raw)

    async def save_robots(self, entry: RobotsEntry) -> None:
        key = self._keys.robots(entry.origin)
        body = entry.body
        # max() also turns a NaN freshness into 0.
        ttl = ms(max(0.0, entry.fresh_until - time.time()) + self.keep_stale)
        wanted = await self.run_script(
            scripts.SAVE_ROBOTS,
            [key, *self._publisher.flag_keys(entry.origin)],
            [robots_header(entry), b"0" if body is None else b"1", body or b"", ttl,
             *self._publisher.script_args("saved", entry.origin)],
        )
        if wanted == 1:
            self._publisher.after("saved", entry.origin)

    async def save_robots_unlock(self, entry: RobotsEntry, token: str) -> bool:
        """:meth:`save_robots` and :meth:`unlock_fetch` in one round trip, if the lock
        is ours or nobody's; False, saving nothing, if another worker holds it."""
        key = self._keys.robots(entry.origin)
        body = entry.body
        ttl = ms(max(0.0, entry.fresh_until - time.time()) + self.keep_stale)
        wanted = await self._robots.run(
            scripts.SAVE_UNLOCK,
            [key, self._keys.lock(entry.origin), *self._publisher.flag_keys(entry.origin)],
            [robots_header(entry), b"0" if body is None else b"1", body or b"", ttl,
             *self._publisher.script_args("saved", entry.origin), token],
        )
        if wanted == 1:
            self._publisher.after("saved", entry.origin)
        return bool(wanted != -1)

    # -- host state (batched) ----------------------------------------------

    async def load_host(self, origin: str) -> HostState | None:
        """The host state under ``origin`` (a politeness-group key, opaque here)."""
        pending = self._hosts.get(origin)
        if pending is not None:
            return pending
        ahead = self._ahead.pop(origin, None)
        if ahead is not None and time.monotonic() - ahead[1] < _AHEAD_KEEP:
            return ahead[0]
        key = self._keys.host(origin)
        raw = await self.call(lambda client: client.hgetall(key), [key])
        return decode_host(self._keys, origin, key, raw)

    async def read_hosts_ahead(self, groups: Sequence[str]) -> None:
        """Read the host states of ``groups`` in one request (one per cluster node) for
        :meth:`load_host` to answer from, for a few seconds: the servers a worker
        leased in a named crawl, which it is about to ask for one by one.  Best effort:
        a failure leaves it to load_host."""
        wanted = [g for g in groups if self._hosts.get(g) is None]
        if not wanted:
            return
        by_slot: dict[int, list[str]] = {}
        for group in wanted:
            key = self._keys.host(group)
            by_slot.setdefault(self._link.slot(key) if self.cluster else 0, []).append(group)
        calls: list[tuple[list[str], list[Any]]] = [
            ([self._keys.host(g) for g in chunk], []) for chunk in by_slot.values()]
        try:
            replies = await self._link.scripts(scripts.LOAD_HOSTS, calls)
        except StoreError:
            return
        if len(self._ahead) > _AHEAD_MAX:
            self._ahead.clear()
        read = time.monotonic()
        for chunk, reply in zip(by_slot.values(), replies, strict=True):
            for group, raw in zip(chunk, reply, strict=True):
                if not isinstance(raw, list):
                    continue  # foreign data: load_host reads it and names the key
                fields = dict(zip(raw[::2], raw[1::2], strict=False))
                with contextlib.suppress(StoreError):
                    state = decode_host(self._keys, group, self._keys.host(group), fields)
                    self._ahead[group] = (state, read)

    async def save_host(self, state: HostState) -> None:
        self._ahead.pop(state.origin, None)  # older than this
        await self._hosts.save(state)

    async def flush(self) -> None:
        """Write all pending host states: one pipeline (one request per cluster node)."""
        await self._hosts.flush()

    async def _write_hosts(self, states: list[HostState]) -> StoreError | None:
        await self._ensure_open()
        return self._hosts_written(await self._link.scripts(scripts.FLUSH_HOSTS,
                                                            self._host_calls(states)))

    def _host_calls(self, states: list[HostState]) -> list[tuple[list[str], list[Any]]]:
        """The FLUSH_HOSTS calls that write ``states``: one per slot on a cluster."""
        groups: dict[int, list[HostState]] = {}
        for state in states:
            key = self._keys.host(state.origin)
            # A script's keys must share a slot on a cluster; one server takes any.
            groups.setdefault(self._link.slot(key) if self.cluster else 0, []).append(state)
        head = [ms(self.host_ttl), repr(time.time())]
        calls: list[tuple[list[str], list[Any]]] = []
        for group in groups.values():
            for start in range(0, len(group), _FLUSH_CHUNK):
                chunk = group[start : start + _FLUSH_CHUNK]
                args = list(head)
                for state in chunk:
                    args += host_args(state)
                calls.append(([self._keys.host(s.origin) for s in chunk], args))
        return calls

    def _hosts_written(self, replies: Sequence[Any]) -> StoreError | None:
        """What FLUSH_HOSTS ``replies`` say could not be written (foreign data)."""
        for reply in replies:
            if isinstance(reply, StoreError):
                return reply
        bad = [text(part) for reply in replies for part in (reply or [])]
        if not bad:
            return None
        # Not retried: retrying cannot help, and must not hold up the rest.
        more = f" (and {len(bad) // 2 - 1} more keys)" if len(bad) > 2 else ""
        return self._keys.bad(bad[0], bad[1] + more)

    async def run_scripts(self, calls: list[tuple[scripts.Script, list[str], list[Any]]],
                          *, urgent: bool = False) -> list[Any]:
        """The replies of ``calls``, sent in one request (one per node on a cluster),
        the store opened first: each call's reply, or the :class:`StoreError` that
        call alone met.  Idempotent calls only (retried whole, as :meth:`call` is).
        On one server the pending host states go along, sparing their timed write a
        request; on a cluster they would cost a request per node, and keep their timer.
        ``urgent`` as :meth:`run_script`."""
        await self._ensure_open()
        if self.cluster:
            return await self._link.batch(calls, urgent=urgent)

        async def send(states: list[HostState]) -> tuple[list[Any], StoreError | None]:
            hosts = [(scripts.FLUSH_HOSTS, keys, args) for keys, args in self._host_calls(states)]
            replies = await self._link.batch([*calls, *hosts], urgent=urgent)
            return replies[: len(calls)], self._hosts_written(replies[len(calls):])

        return await self._hosts.write_along(send)

    async def _robots_batch(self, calls: list[tuple[scripts.Script, list[str], list[Any]]]
                            ) -> list[Any]:
        """The robots.txt looks (with their fetch locks) and saves gathered by
        ``_robots``, sent ahead of the calls queued for a connection: every task of a
        new origin waits on its look, and every other worker on its save, while a
        pacing call holds up one request.  Behind a busy worker's pacing calls they
        waited 8-29 s beside 6 CPU-bound processes."""
        return await self.run_scripts(calls, urgent=True)

    # -- the fleet: fetch locks and waiting -----------------------------------

    def fleet(self) -> Fleet:
        return self

    async def lock_fetch(self, origin: str, ttl: float) -> str | None:
        """Become the one worker fetching ``origin``'s robots.txt, for at most ``ttl`` s."""
        token = secrets.token_hex(16)
        got = await self.run_script(scripts.LOCK, [self._keys.lock(origin)], [token, ms(ttl)],
                                      urgent=True)
        return token if got == 1 else None

    async def lock_load(self, origin: str, ttl: float) -> tuple[str | None, RobotsEntry | None]:
        """:meth:`lock_fetch` and :meth:`load_robots` in one round trip."""
        token = secrets.token_hex(16)
        robots_key = self._keys.robots(origin)
        reply = await self.run_script(scripts.LOCK_LOAD, [self._keys.lock(origin), robots_key],
                                      [token, ms(ttl)], urgent=True)
        try:
            got, raw = reply
        except (TypeError, ValueError):
            raise StoreError(f"Redis at {self._link.label} gave an odd reply {reply!r}") from None
        return (token if got == 1 else None), decode_robots(self._keys, origin, robots_key, raw)

    async def load_or_lock(self, origin: str, ttl: float) -> tuple[RobotsEntry | None, str | None]:
        """The stored entry; with none, the fetch lock's token if it was free: one
        round trip."""
        token = secrets.token_hex(16)
        robots_key = self._keys.robots(origin)
        reply = await self._robots.run(scripts.LOAD_OR_LOCK,
                                       [self._keys.lock(origin), robots_key], [token, ms(ttl)])
        try:
            raw, got = reply
        except (TypeError, ValueError):
            raise StoreError(f"Redis at {self._link.label} gave an odd reply {reply!r}") from None
        return decode_robots(self._keys, origin, robots_key, raw), (token if got == 1 else None)

    async def renew_fetch(self, origin: str, token: str, ttl: float) -> bool:
        """Extend the lock to ``ttl`` s from now if ``token`` still holds it: False once it
        expired, even if nobody took it since (someone may have fetched meanwhile).  Sent
        ahead of the calls queued for a connection: a renewal that waited behind a busy
        worker's crawl would come after the lock expired."""
        await self._ensure_open()
        got = await self._link.script(scripts.RENEW, [self._keys.lock(origin)],
                                      [token, ms(ttl)], urgent=True)
        return bool(got == 1)

    async def confirm_fetch(self, origin: str, token: str, ttl: float
                            ) -> tuple[bool, RobotsEntry | None]:
        """:meth:`renew_fetch` and :meth:`load_robots` in one round trip (LOCK_LOAD with
        the holder's token), sent ahead of the queued calls as a renewal is."""
        await self._ensure_open()
        robots_key = self._keys.robots(origin)
        reply = await self._link.script(scripts.LOCK_LOAD, [self._keys.lock(origin), robots_key],
                                        [token, ms(ttl)], urgent=True)
        try:
            got, raw = reply
        except (TypeError, ValueError):
            raise StoreError(f"Redis at {self._link.label} gave an odd reply {reply!r}") from None
        return got == 1, decode_robots(self._keys, origin, robots_key, raw)

    async def unlock_fetch(self, origin: str, token: str) -> None:
        """Release the lock if ``token`` still holds it; wakes the waiters."""
        args = [token, *self._publisher.script_args("released", origin)]
        keys = [self._keys.lock(origin), *self._publisher.flag_keys(origin)]
        if await self.run_script(scripts.UNLOCK, keys, args, urgent=True) == 2:  # waited for
            self._publisher.after("released", origin)

    async def wait_robots(self, origin: str, timeout: float) -> RobotsEntry | None:
        """Wait for the lock holder's result, woken by pub/sub rather than polling.

        Returns an entry that is fresh or was fetched after this call began.
        Returns ``None`` when ``timeout`` passes, and early when the fetch lock,
        once seen held, is released or expires without such an entry (the
        holder gave up or died): the caller should then try :meth:`lock_fetch`.
        """
        await self._ensure_open()
        if self._notifier is None:
            self._notifier = (ShardNotifier if self.cluster else ChannelNotifier)(
                self._link, self._keys
            )
        keys = [self._keys.robots(origin), self._keys.lock(origin),
                *self._publisher.flag_keys(origin)]
        robots_key = keys[0]

        async def peek() -> tuple[RobotsEntry | None, object]:
            # The entry and the lock's remaining life (flagged as waited for), in one
            # round trip.
            reply = await self.run_script(scripts.PEEK, keys, [])
            try:
                raw, lock_ms = reply
            except (TypeError, ValueError):
                raise StoreError(
                    f"Redis at {self._link.label} gave an odd reply {reply!r}"
                ) from None
            return decode_robots(self._keys, origin, robots_key, raw), lock_ms

        return await wait_for_entry(self._notifier, origin, timeout, peek)

    # -- the fleet: pacing -----------------------------------------------------

    def slots(self) -> Slots:
        return self

    async def reserve(self, origin: str, interval: float, slack: float = 0.0) -> float:
        """Claim the next request slot for ``origin``; the seconds to wait before it.

        Any two slots granted for one key, by any worker, are at least
        ``interval`` apart on the Redis server's clock (or the key's stored
        back-off plus ``slack``, when longer and renewed lately: a 429 one worker
        saw slows them all; ``slack``, included in ``interval``, is how late after
        its slot's start the caller's request may leave), and none falls within a
        :meth:`pause`.  The caller must
        sleep the returned time and then start its request (a slot it does
        not use is simply lost).  A slot further ahead than the store's horizon
        (6 s) is not granted: :class:`~robotgate.store.base.SlotAhead` says when
        to ask again.
        """
        slot = await self.reserve_slot(origin, interval, slack)
        if not slot.granted:
            raise SlotAhead(origin, slot.wait)
        return slot.wait

    async def reserve_slot(self, origin: str, interval: float, slack: float = 0.0) -> Slot:
        """:meth:`reserve`, with the granted start on the server's clock (none granted
        beyond the horizon: then :attr:`Slot.wait` is when to ask again)."""
        if not interval >= 0 or not 0 <= slack <= interval:
            raise ValueError("interval must not be negative, nor slack outside it")
        interval_us = math.ceil(min(interval, MAX_TTL) * 1_000_000)
        keys = [self._keys.tat(origin), self._keys.host(origin)]
        args: list[Any] = [interval_us, math.ceil(MAX_TTL * 1_000_000), BACKOFF_LAPSE,
                           math.ceil(_HORIZON * 1_000_000), math.ceil(slack * 1_000_000)]
        await self._ensure_open()
        if not self.cluster:
            # Lost data noticed in the same atomic step as the slot (see scripts.RESERVE).
            keys += [self._keys.epoch, self._keys.lost, self._keys.meta]
            args += [self._epoch or "", secrets.token_hex(8), f"{APP}/{FORMAT_VERSION}",
                     _LOST_KEEP_MS]
        reply = await self.run_script(scripts.RESERVE, keys, args)
        try:
            wait_us, start_us, granted = int(reply[0]), int(reply[1]), reply[4] == 1
            epoch = None if reply[2] is None else text(reply[2])
        except (TypeError, ValueError, IndexError) as exc:
            raise StoreError(f"Redis at {self._link.label} gave an odd reply {reply!r}") from exc
        if epoch is not None and epoch != self._epoch:
            self._epoch = epoch
            self.note_data_lost("its pacing epoch changed")
        if not granted:
            return Slot(wait_us / 1_000_000, start_us, 0, granted=False)
        return Slot(wait_us / 1_000_000, start_us, start_us - wait_us)

    def note_data_lost(self, found: str) -> None:
        """Redis lost robotgate's data (restarted empty, flushed) since this store saw
        it, as ``found`` shows: say so (a warning), and count a request to any server as
        just made (:attr:`~robotgate.store.base.Store.unrecorded_until`)."""
        self.unrecorded_until = time.time()
        _log.warning(
            "robotgate: Redis at %s lost its data under prefix %r (restarted empty?): %s;"
            " any server may have just been asked, so each waits its interval from now",
            self._link.label, self.prefix, found,
        )

    async def pause(self, origin: str, until: float) -> None:
        """Grant no slot for ``origin`` before the Unix time ``until`` (Retry-After).

        The pause is applied as a duration (``until`` minus this worker's
        clock) from the server's clock, so clock skew between workers and
        Redis does not shorten it.  The host's ``next_allowed`` becomes
        ``until`` unless it is later already; its back-off becomes the one this
        worker saved last, at once, so that every worker's next slot keeps it.
        """
        self._hosts.pause(origin, until)
        saved = self._hosts.get(origin)
        backoff = backoff_args(saved) if saved is not None else ("", "")
        now = time.time()
        delay_us = math.ceil(max(-MAX_TTL, min(until - now, MAX_TTL)) * 1_000_000)
        await self.run_script(
            scripts.PAUSE,
            [self._keys.tat(origin), self._keys.host(origin)],
            [delay_us, repr(float(until)), ms(self.host_ttl), repr(now), *backoff],
        )

    # -- named crawls (store/redis/crawl.py) -----------------------------------

    def crawls(self) -> Crawls:
        return self

    def shared(self) -> SharedCrawls:
        return self

    def crawl_state(self, name: str, *, server: Callable[[str], str] | None = None,
                    leases: Leases | None = None, max_servers: int = 64) -> CrawlState:
        """The named crawl ``name``, shared by every worker on this prefix: its URLs
        queued per ``server(url)`` (default: the host name), each server leased to one
        worker at a time, ``max_servers`` at most; ``leases`` tells the gate's pacing
        which (see crawl.py)."""
        from .crawl import RedisCrawlState, server_of

        return RedisCrawlState(self, name, server=server or server_of, leases=leases,
                               max_servers=max_servers)

    async def crawl_names(self) -> list[str]:
        from .crawl import names

        return await names(self)

    async def drop_crawl(self, name: str) -> bool:
        from .crawl import drop

        return await drop(self, name)
