"""The storage interfaces the gate uses: robots.txt entries and host state, and what
a store can do besides.

:class:`Store` is the base every store implements; a store declares each further
capability by deriving from its class, and the gate asks for the capability, never
for a store class:

- :class:`FleetStore`: shared by processes (fetch locks, pauses every worker keeps);
  :class:`PacingStore`, a fleet store that also hands out request slots fleet-wide;
- :class:`CrawlStore`: keeps named crawls; :class:`SharedCrawlStore`, a crawl that
  workers share, each server leased to one of them at a time;
- :class:`AnswersAtOnce`: answers without an await (the gate's hot path uses it).

Three backends implement them: :class:`~robotgate.store.memory.MemoryStore`
(default, one process; crawls, answers at once), :class:`~robotgate.store.sqlite.SQLiteStore`
(disk, survives restarts, shareable by processes on one machine; fleet, crawls) and
:class:`~robotgate.store.redis.RedisStore` (a fleet of workers; pacing, shared crawls).

Times are Unix timestamps (``time.time()``) so that they mean the same thing
after a restart and on another machine.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import TypeVar

from ..error_root import Error
from ..records import HostState, Outcome, RobotsEntry
from .crawl_state import CrawlState, NamedCrawlsUnsupported
from .leases import Leases

__all__ = ["AnswersAtOnce", "CrawlInUse", "CrawlStore", "FleetStore", "HostState", "Outcome",
           "PacingStore", "RobotsEntry", "SharedCrawlStore", "SlotAhead", "Store", "StoreError",
           "crawl_store", "immediate"]


_S = TypeVar("_S", bound="Store")


class StoreError(Error, RuntimeError):
    """A store that cannot be used: unreachable, corrupt, or holding foreign data."""


class SlotAhead(Error):
    """A shared store grants no slot further ahead than its horizon (so that, should it
    lose its data, it knows how long slots granted before may still be used): none was
    granted; ask again in ``retry_in`` seconds."""

    def __init__(self, key: str, retry_in: float) -> None:
        super().__init__(f"{key}'s next slot is more than the store's horizon ahead:"
                         f" ask again in {retry_in:.3f} s")
        self.key = key
        self.retry_in = retry_in


class CrawlInUse(StoreError):
    """Another process runs the named crawl in this store, which gives a crawl one process
    at a time (an SQLite store; a Redis crawl is shared by design).  The message names the
    crawl, its holder and how to take over; the holder's process id, host name and the Unix
    time it took the crawl are kept too (None where the crawl's row does not say)."""

    def __init__(self, message: str, *, name: str, pid: int | None = None,
                 host: str | None = None, since: float | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.pid = pid
        self.host = host
        self.since = since


class Store(abc.ABC):
    """Async storage for robots.txt entries and host state.

    Single-process stores need only the abstract methods; the fleet hooks answer as
    one process would (every lock granted at once, pacing left to the gate's local
    limiter) unless the store is a :class:`FleetStore`.
    """

    #: True when other processes may see and change the same data (a :class:`FleetStore`).
    shared: bool = False
    #: True when :meth:`reserve` hands out fleet-wide request slots (a :class:`PacingStore`).
    paces: bool = False
    #: Unix time up to which any server may have been asked without the store
    #: knowing (a process that used it died before writing its host state, or the
    #: store lost data); 0 when it knows of none.  A group made from this store's
    #: host state counts a request at that time as its last.
    unrecorded_until: float = 0.0
    #: True when the store also answers without an await (an :class:`AnswersAtOnce`
    #: whose coroutines do nothing more): the gate then calls ``get_robots``,
    #: ``put_robots``, ``get_host`` and ``put_host`` on every new origin, a coroutine
    #: less each.  Every other store is awaited.
    answers_at_once: bool = False

    async def open(self) -> None:  # noqa: B027
        """Make the store ready; idempotent."""

    async def close(self) -> None:  # noqa: B027
        """Flush and release resources; idempotent."""

    async def __aenter__(self: _S) -> _S:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @abc.abstractmethod
    async def load_robots(self, origin: str) -> RobotsEntry | None:
        """The stored entry for ``origin``, or ``None``."""

    @abc.abstractmethod
    async def save_robots(self, entry: RobotsEntry) -> None:
        """Store (replace) the entry for ``entry.origin``."""

    @abc.abstractmethod
    async def load_host(self, origin: str) -> HostState | None:
        """The stored host state for ``origin``, or ``None``."""

    @abc.abstractmethod
    async def save_host(self, state: HostState) -> None:
        """Store host state; backends may batch these writes (see :meth:`flush`).

        In shared stores ``next_allowed`` only moves forward, so one process's
        write never undoes another's pause.
        """

    async def flush(self) -> None:  # noqa: B027
        """Write out anything batched."""

    # -- fleet hooks, as one process answers them (FleetStore declares them) --

    async def lock_fetch(self, origin: str, ttl: float) -> str | None:
        """Try to become the one worker fetching ``origin``'s robots.txt.

        Returns a token to pass to :meth:`unlock_fetch`, or ``None`` when
        another worker holds the lock (which expires after ``ttl`` seconds).
        """
        return "local"

    async def unlock_fetch(self, origin: str, token: str) -> None:  # noqa: B027
        """Release a lock taken with :meth:`lock_fetch` (only if still ours)."""

    async def load_or_lock(self, origin: str, ttl: float) -> tuple[RobotsEntry | None, str | None]:
        """The stored entry, and a fetch lock's token or None (a shared store may take
        the lock, in the same request, when no entry is stored)."""
        return await self.load_robots(origin), None

    async def lock_load(self, origin: str, ttl: float) -> tuple[str | None, RobotsEntry | None]:
        """:meth:`lock_fetch`, then :meth:`load_robots` (a shared store may do both in
        one request): the lock's token or None, and the entry as stored."""
        token = await self.lock_fetch(origin, ttl)
        return token, await self.load_robots(origin)

    async def save_robots_unlock(self, entry: RobotsEntry, token: str) -> None:
        """:meth:`save_robots`, then :meth:`unlock_fetch` of ``entry.origin``'s lock
        (a shared store may do both in one request)."""
        await self.save_robots(entry)
        await self.unlock_fetch(entry.origin, token)

    async def renew_fetch(self, origin: str, token: str, ttl: float) -> bool:
        """Extend a lock taken with :meth:`lock_fetch` to ``ttl`` seconds from now;
        False when it is no longer ours (it expired, and maybe another took it)."""
        return True

    async def wait_robots(self, origin: str, timeout: float) -> RobotsEntry | None:
        """Wait up to ``timeout`` s for another worker to store ``origin``'s entry.

        Returns an entry that is fresh or was fetched after the call began,
        or ``None`` on timeout.
        """
        return await self.load_robots(origin)

    async def reserve(self, origin: str, interval: float) -> float | None:
        """Fleet-wide pacing: claim the next request slot for ``origin``.

        Returns the seconds to wait before the request may start, or ``None``
        when this store does not pace (the gate's local limiter does).
        """
        return None

    async def pause(self, origin: str, until: float) -> None:  # noqa: B027
        """Fleet-wide pause of ``origin`` until the Unix time ``until`` (Retry-After)."""


class FleetStore(Store):
    """A store that processes share: a robots.txt fetch lock is taken in the store,
    and a pause (Retry-After) holds for every process."""

    shared = True

    @abc.abstractmethod
    async def lock_fetch(self, origin: str, ttl: float) -> str | None:
        """Try to become the one worker fetching ``origin``'s robots.txt.

        Returns a token to pass to :meth:`unlock_fetch`, or ``None`` when
        another worker holds the lock (which expires after ``ttl`` seconds).
        """

    @abc.abstractmethod
    async def unlock_fetch(self, origin: str, token: str) -> None:
        """Release a lock taken with :meth:`lock_fetch` (only if still ours)."""

    @abc.abstractmethod
    async def renew_fetch(self, origin: str, token: str, ttl: float) -> bool:
        """Extend a lock taken with :meth:`lock_fetch`; False when no longer ours."""

    @abc.abstractmethod
    async def wait_robots(self, origin: str, timeout: float) -> RobotsEntry | None:
        """Wait up to ``timeout`` s for another worker to store ``origin``'s entry."""

    @abc.abstractmethod
    async def pause(self, origin: str, until: float) -> None:
        """Fleet-wide pause of ``origin`` until the Unix time ``until`` (Retry-After)."""


class PacingStore(FleetStore):
    """A fleet store that paces every server fleet-wide: :meth:`reserve` hands out
    request slots, any two for one server at least the interval apart."""

    paces = True

    @abc.abstractmethod
    async def reserve(self, origin: str, interval: float) -> float:
        """Claim the next request slot for ``origin``: the seconds to wait before it."""


class CrawlStore(abc.ABC):
    """A store that keeps named crawls (``gate.crawl(..., name=...)``, docs/crawl.md)."""

    @abc.abstractmethod
    def crawl_state(self, name: str) -> CrawlState:
        """The state of the crawl ``name`` kept in this store (created on first use)."""

    @abc.abstractmethod
    async def crawl_names(self) -> list[str]:
        """The names of the crawls kept in this store."""

    @abc.abstractmethod
    async def drop_crawl(self, name: str) -> bool:
        """Forget the crawl ``name``; whether there was one."""


class SharedCrawlStore(CrawlStore):
    """A store whose named crawl workers share: its URLs are queued per server and each
    server is leased to one worker at a time (docs/fleet.md)."""

    @abc.abstractmethod
    def crawl_state(self, name: str, *, server: Callable[[str], str] | None = None,
                    leases: Leases | None = None, max_servers: int = 64) -> CrawlState:
        """The crawl ``name``: its URLs queued per ``server(url)`` (default: the host
        name), at most ``max_servers`` servers leased by this worker at once; the
        servers it holds are written to ``leases``, where the gate's pacing reads them."""


class AnswersAtOnce(abc.ABC):
    """A store that answers without an await too: the gate calls these on every new
    origin (when the store's :attr:`Store.answers_at_once` is true)."""

    @abc.abstractmethod
    def get_robots(self, origin: str) -> RobotsEntry | None:
        """``load_robots`` without a coroutine."""

    @abc.abstractmethod
    def put_robots(self, entry: RobotsEntry) -> None:
        """``save_robots`` without a coroutine."""

    @abc.abstractmethod
    def get_host(self, origin: str) -> HostState | None:
        """``load_host`` without a coroutine."""

    @abc.abstractmethod
    def put_host(self, state: HostState) -> None:
        """``save_host`` without a coroutine."""


def crawl_store(store: Store) -> CrawlStore:
    """``store`` as a keeper of named crawls; :class:`NamedCrawlsUnsupported` (a
    ``NotImplementedError``) when it keeps none."""
    if isinstance(store, CrawlStore):
        return store
    raise NamedCrawlsUnsupported(
        f"{type(store).__name__} keeps no named crawls: use a MemoryStore, an SQLiteStore "
        f"or a RedisStore for a named crawl, or crawl without a name")


def immediate(store: Store) -> AnswersAtOnce | None:
    """``store`` if its answers need no await (:attr:`Store.answers_at_once`), else None."""
    return store if isinstance(store, AnswersAtOnce) and store.answers_at_once else None
