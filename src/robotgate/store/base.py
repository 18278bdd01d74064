"""The storage interfaces the gate uses: the base every store implements, and the
parts a store hands out for what it can do besides.

:class:`Store` holds robots.txt entries and host states; a store hands out a part
per further capability, and the gate asks for the part once, where it is wired:

- :meth:`Store.fleet`, a :class:`Fleet`: processes share the store (robots.txt fetch
  locks, waiting for another's fetch, pauses every worker keeps); its
  :meth:`Fleet.slots`, :class:`Slots`, hands out request slots fleet-wide;
- :meth:`Store.crawls`, a :class:`Crawls`: keeps named crawls; its
  :meth:`Crawls.shared`, :class:`SharedCrawls`, a crawl that workers share, each
  server leased to one of them at a time;
- :meth:`Store.at_once`, an :class:`AnswersAtOnce`: answers without an await (the
  gate's hot path uses it).

Each answers None where the store has no such part.  Three backends implement them:
:class:`~robotgate.store.memory.MemoryStore` (default, one process; crawls, answers
at once), :class:`~robotgate.store.sqlite.SQLiteStore` (disk, survives restarts,
shareable by processes on one machine; fleet, crawls) and
:class:`~robotgate.store.redis.RedisStore` (a fleet of workers; fleet with slots,
shared crawls); each is its own part.

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

__all__ = ["AnswersAtOnce", "CrawlInUse", "Crawls", "Fleet", "HostState", "Outcome",
           "RobotsEntry", "SharedCrawls", "SlotAhead", "Slots", "Store", "StoreError",
           "crawl_store"]


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

    A store implements these and nothing else unless it can do more: then it hands
    out the part (:meth:`fleet`, :meth:`crawls`, :meth:`at_once`), which each answer
    None here.
    """

    #: Unix time up to which any server may have been asked without the store
    #: knowing (a process that used it died before writing its host state, or the
    #: store lost data); 0 when it knows of none.  A group made from this store's
    #: host state counts a request at that time as its last.
    unrecorded_until: float = 0.0

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

    # -- the parts a store hands out for what it can do besides ----------------

    def fleet(self) -> Fleet | None:
        """What processes sharing this store do together (None: one process uses it,
        and the gate alone dedupes its fetches and paces its servers)."""
        return None

    def crawls(self) -> Crawls | None:
        """The named crawls this store keeps (None: it keeps none)."""
        return None

    def at_once(self) -> AnswersAtOnce | None:
        """This store's answers without an await (None: every answer is awaited)."""
        return None


#: Seconds the default :meth:`Fleet.save_robots_unlock` holds the lock it checked
#: while it saves.
_SAVE_WITHIN = 5.0


class Fleet(abc.ABC):
    """A store that processes share, as they use it together: a robots.txt fetch lock
    taken in the store, a wait for another's fetch, and a pause (Retry-After) that
    holds for every process.  The lock guards the store's robots.txt entries, which
    it reads and writes too (:meth:`load_robots`, :meth:`save_robots`: the store's)."""

    @abc.abstractmethod
    async def load_robots(self, origin: str) -> RobotsEntry | None:
        """The stored entry for ``origin``, or ``None`` (:meth:`Store.load_robots`)."""

    @abc.abstractmethod
    async def save_robots(self, entry: RobotsEntry) -> None:
        """Store (replace) the entry for ``entry.origin`` (:meth:`Store.save_robots`)."""

    @abc.abstractmethod
    async def lock_fetch(self, origin: str, ttl: float) -> str | None:
        """Try to become the one worker fetching ``origin``'s robots.txt.

        Returns a token to pass to :meth:`unlock_fetch`, or ``None`` when
        another worker holds the lock (which expires after ``ttl`` seconds).
        """

    @abc.abstractmethod
    async def unlock_fetch(self, origin: str, token: str) -> None:
        """Release a lock taken with :meth:`lock_fetch` (only if still ours)."""

    async def load_or_lock(self, origin: str, ttl: float) -> tuple[RobotsEntry | None, str | None]:
        """The stored entry, and a fetch lock's token or None (a store may take the
        lock, in the same request, when no entry is stored)."""
        return await self.load_robots(origin), None

    async def lock_load(self, origin: str, ttl: float) -> tuple[str | None, RobotsEntry | None]:
        """:meth:`lock_fetch`, then :meth:`load_robots` (a store may do both in one
        request): the lock's token or None, and the entry as stored."""
        token = await self.lock_fetch(origin, ttl)
        return token, await self.load_robots(origin)

    async def save_robots_unlock(self, entry: RobotsEntry, token: str) -> bool:
        """:meth:`save_robots`, then :meth:`unlock_fetch` of ``entry.origin``'s lock
        (a store may do both in one request, and should check the lock in it).  False,
        with nothing saved, when the lock is no longer ours: it expired under us and
        another worker took it, whose fetch saves."""
        if not await self.renew_fetch(entry.origin, token, _SAVE_WITHIN):
            return False
        await self.save_robots(entry)
        await self.unlock_fetch(entry.origin, token)
        return True

    async def confirm_fetch(self, origin: str, token: str, ttl: float
                            ) -> tuple[bool, RobotsEntry | None]:
        """Just before the fetch's request leaves: :meth:`renew_fetch` (False: the lock
        is another worker's now, and this one must not fetch), then
        :meth:`load_robots` (a store may do both in one request)."""
        held = await self.renew_fetch(origin, token, ttl)
        return held, await self.load_robots(origin)

    @abc.abstractmethod
    async def renew_fetch(self, origin: str, token: str, ttl: float) -> bool:
        """Extend a lock taken with :meth:`lock_fetch` to ``ttl`` seconds from now;
        False when it is no longer ours (it expired, and maybe another took it)."""

    @abc.abstractmethod
    async def wait_robots(self, origin: str, timeout: float) -> RobotsEntry | None:
        """Wait up to ``timeout`` s for another worker to store ``origin``'s entry.

        Returns an entry that is fresh or was fetched after the call began,
        or ``None`` on timeout.
        """

    @abc.abstractmethod
    async def pause(self, origin: str, until: float) -> None:
        """Fleet-wide pause of ``origin`` until the Unix time ``until`` (Retry-After);
        where :meth:`slots` hands out slots, none for ``origin`` starts before it."""

    def slots(self) -> Slots | None:
        """The fleet-wide request slots this store hands out (None: each process
        paces the servers by itself, from the host states the store keeps)."""
        return None


class Slots(abc.ABC):
    """A fleet store that paces every server fleet-wide: :meth:`reserve` hands out
    request slots, any two for one server at least the interval apart."""

    @abc.abstractmethod
    async def reserve(self, origin: str, interval: float, slack: float = 0.0) -> float:
        """Claim the next request slot for ``origin``: the seconds to wait before it.
        ``slack`` (part of ``interval``): how late after its slot's start the request
        may leave; a stored back-off spaces slots by itself plus ``slack``."""


class Crawls(abc.ABC):
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

    def shared(self) -> SharedCrawls | None:
        """These crawls as workers share them (None: one process runs a crawl)."""
        return None


class SharedCrawls(abc.ABC):
    """Named crawls that workers share: a crawl's URLs are queued per server and each
    server is leased to one worker at a time (docs/fleet.md)."""

    @abc.abstractmethod
    def crawl_state(self, name: str, *, server: Callable[[str], str] | None = None,
                    leases: Leases | None = None, max_servers: int = 64) -> CrawlState:
        """The crawl ``name``: its URLs queued per ``server(url)`` (default: the host
        name), at most ``max_servers`` servers leased by this worker at once; the
        servers it holds are written to ``leases``, where the gate's pacing reads them."""


class AnswersAtOnce(abc.ABC):
    """A store that answers without an await too: the gate calls these on every new
    origin, where a coroutine each would cost more than the work."""

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


def crawl_store(store: Store) -> Crawls:
    """``store``'s named crawls; :class:`NamedCrawlsUnsupported` (a
    ``NotImplementedError``) when it keeps none."""
    crawls = store.crawls()
    if crawls is not None:
        return crawls
    raise NamedCrawlsUnsupported(
        f"{type(store).__name__} keeps no named crawls: use a MemoryStore, an SQLiteStore "
        f"or a RedisStore for a named crawl, or crawl without a name")
