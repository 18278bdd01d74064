"""The storage interface the gate uses for robots.txt entries and host state.

Three backends implement it: :class:`~robotgate.store.memory.MemoryStore`
(default, one process), :class:`~robotgate.store.sqlite.SQLiteStore` (disk,
survives restarts, shareable by processes on one machine) and
:class:`~robotgate.store.redis.RedisStore` (a fleet of workers).

Times are Unix timestamps (``time.time()``) so that they mean the same thing
after a restart and on another machine.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, TypeVar

from ..error_root import Error
from ..records import HostState, Outcome, RobotsEntry

if TYPE_CHECKING:
    from ..politeness.crawl_state import CrawlState

__all__ = ["CrawlInUse", "HostState", "Outcome", "RobotsEntry", "Store", "StoreError"]


_S = TypeVar("_S", bound="Store")


class StoreError(Error, RuntimeError):
    """A store that cannot be used: unreachable, corrupt, or holding foreign data."""


class CrawlInUse(StoreError):
    """Another process runs the named crawl in this store, which gives a crawl one process
    at a time (an SQLite store; a Redis crawl is shared by design).  The message names the
    crawl, its holder and how to take over; the holder's process id, host name and the Unix
    time it took the crawl are kept too (None where its lock file does not say)."""

    def __init__(self, message: str, *, name: str, pid: int | None = None,
                 host: str | None = None, since: float | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.pid = pid
        self.host = host
        self.since = since


class Store(abc.ABC):
    """Async storage for robots.txt entries and host state.

    Single-process stores need only the first group of methods; the fleet
    hooks have in-process defaults (every lock granted at once, pacing left to
    the gate's local limiter).
    """

    #: True when other processes may see and change the same data.
    shared: bool = False
    #: True when :meth:`reserve` hands out fleet-wide request slots (Redis).
    paces: bool = False
    #: Unix time up to which any server may have been asked without the store
    #: knowing (a process that used it died before writing its host state, or the
    #: store lost data); 0 when it knows of none.  A group made from this store's
    #: host state counts a request at that time as its last.
    unrecorded_until: float = 0.0
    #: True when the store also answers without an await, through ``get_robots``,
    #: ``put_robots``, ``get_host`` and ``put_host`` (as :class:`MemoryStore` does): the
    #: gate then calls those on every new origin, a coroutine less each.  Every other
    #: store is awaited.
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

    # -- fleet hooks -------------------------------------------------------

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

    # -- named crawls (docs/crawl.md) ---------------------------------------

    def crawl_state(self, name: str) -> CrawlState:
        """The state of the crawl ``name`` kept in this store (created on first use).

        Raises :class:`~robotgate.politeness.crawl_state.NamedCrawlsUnsupported`
        (a ``NotImplementedError``) where the store keeps none.
        """
        from ..politeness.crawl_state import NamedCrawlsUnsupported

        raise NamedCrawlsUnsupported(
            f"{type(self).__name__} keeps no named crawls: use a MemoryStore, an SQLiteStore "
            f"or a RedisStore for gate.crawl(..., name={name!r}), or crawl without a name")

    async def crawl_names(self) -> list[str]:
        """The names of the crawls kept in this store."""
        return []

    async def drop_crawl(self, name: str) -> bool:
        """Forget the crawl ``name``; whether there was one."""
        return False
