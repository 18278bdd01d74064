"""TDMRep's ``/.well-known/tdmrep.json``: fetched once per origin however many tasks ask.

The file is fetched by robots.txt's flow and fetcher (redirects, validators and
304, timeouts, what each failure means, how long an answer stays fresh, the
back-off after failures, an earlier good copy standing in), in the server's
turn like robots.txt; this module only keeps the answers and shares each fetch
among the tasks that ask at once.  With a store (SQLite, Redis), each answer is
saved there too, as a robots.txt entry keyed by the file's URL (origin + path):
a restarted gate, or another worker sharing the store, uses it while fresh.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import GateClosed
from ..policy.hops import Address
from ..policy.tdm import TdmVerdict, tdm_verdict
from ..records import Outcome, RobotsEntry
from ..robots.tdmrep import TdmRep, parse_tdmrep_json
from ..store.base import Store
from ..urls import split_origin
from .robots_fetcher import PacingHooks, RobotsFetcher

if TYPE_CHECKING:
    from ..robots.directives import PageDirectives

__all__ = ["PointedOrigins", "TdmRepCache", "TdmRepSite"]


@dataclass(frozen=True, slots=True)
class TdmRepSite:
    """One origin's tdmrep.json as fetched: the entry (robots.txt's record) and its rules."""

    entry: RobotsEntry
    tdmrep: TdmRep | None


@asynccontextmanager
async def _unpaced() -> AsyncIterator[PacingHooks | None]:
    yield None


class PointedOrigins:
    """The origins whose last robots.txt fetch a public page's pointer asked for, with
    the addresses its check found public (at most ``max_origins``, the oldest go
    first): their tdmrep.json is guarded alike.  The robots.txt fetcher tells it of
    each fetch (its ``on_fetch``)."""

    def __init__(self, max_origins: int = 100_000) -> None:
        self.max_origins = max(1, max_origins)
        self._pointed: dict[str, tuple[Address, ...]] = {}

    def robots_fetched(self, origin: str, guard: bool, checked: tuple[Address, ...]) -> None:
        """``origin``'s robots.txt is being fetched, ``guard``-ed when a public page's
        pointer led there (``checked``: the addresses its check found)."""
        pointed = self._pointed
        pointed.pop(origin, None)
        if guard:
            pointed[origin] = checked
            while len(pointed) > self.max_origins:
                del pointed[next(iter(pointed))]

    def get(self, origin: str) -> tuple[Address, ...] | None:
        """The addresses of ``origin``'s last pointer check (None: its last robots.txt
        fetch was no pointer's)."""
        return self._pointed.get(origin)


class TdmRepCache:
    """Per-origin tdmrep.json, fetched once for all who ask, kept while fresh.

    ``paced_by(origin)`` is held around each fetch (a request to the server like
    any other).  At most ``max_origins`` origins are kept in memory (the oldest
    go first).  ``store`` (None: memory only) keeps the entries between runs and
    workers; ``trouble(what, exc)`` hears of a store that fails (the fetch's
    answer is used all the same).

    The first request of an origin a public page's pointer led to is guarded as
    that pointer's robots.txt request is: its connection must reach a public
    address.  The pointer is the asker's (``guard`` to :meth:`get`), or, for one
    who does not say, the one whose robots.txt fetch was the origin's last
    (``pointed``, which the robots.txt fetcher tells).
    """

    def __init__(
        self,
        fetcher: RobotsFetcher,
        *,
        paced_by: Callable[[str], AbstractAsyncContextManager[PacingHooks | None]] | None = None,
        max_origins: int = 100_000,
        store: Store | None = None,
        trouble: Callable[[str, Exception], None] | None = None,
        pointed: PointedOrigins | None = None,
    ) -> None:
        self.fetcher = fetcher
        self.max_origins = max(1, max_origins)
        self.store = store
        self._trouble = trouble
        self._paced_by = paced_by
        self._sites: dict[str, TdmRepSite] = {}
        self._flights: dict[str, asyncio.Task[TdmRepSite]] = {}
        #: The origins whose last robots.txt fetch was a pointer's.
        self.pointed = pointed if pointed is not None else PointedOrigins(max_origins)
        #: origin -> the addresses a pointer check found public, for the origins whose
        #: fetch in flight a pointer's asker waits for (until its request leaves).
        self._asked_by_pointer: dict[str, tuple[Address, ...]] = {}
        self._closed = False

    @property
    def requests(self) -> int:
        """tdmrep.json requests sent (every hop of a redirect counts once with its fetch)."""
        return self.fetcher.requests

    async def reservation(self, url: str, page: PageDirectives | None = None, *,
                          guard: bool = False, checked: tuple[Address, ...] = (),
                          via: object = None) -> TdmVerdict:
        """Whether TDM rights are reserved for ``url``: the origin's file, then ``page``
        (the page's :class:`~robotgate.robots.directives.PageDirectives`, if read);
        ``guard``, ``checked`` and ``via`` as :meth:`get` takes them."""
        site = await self.get(split_origin(url)[0], guard, checked, via)
        return tdm_verdict(url, site.entry, site.tdmrep, page)

    async def get(self, origin: str, guard: bool = False,
                  checked: tuple[Address, ...] = (), via: object = None) -> TdmRepSite:
        """The origin's tdmrep.json, fetched once for all waiters when not fresh.

        ``guard``: the asker came through a public page's pointer, so a fetch it starts,
        or joins before its request leaves, must connect to a public address
        (``checked``: the addresses the pointer check found).  ``via``: the route the
        asker's page takes (an adapter's proxy), which a fetch it starts takes too: one
        fetch per origin, by the route of the asker that started it."""
        site = self._sites.get(origin)
        if site is not None and site.entry.is_fresh(time.time()):
            return site
        flight = self._flights.get(origin)
        if flight is None:
            if self._closed:
                raise GateClosed("the gate is closed")
            flight = asyncio.get_running_loop().create_task(self._fetch(origin, site, via))
            self._flights[origin] = flight
            flight.add_done_callback(lambda done: self._land(origin, done))
        if guard:  # read by the flight as its request leaves
            self._asked_by_pointer[origin] = checked
        try:
            # A waiter cancelled cancels only its wait, never the shared fetch.
            return await asyncio.shield(flight)
        except asyncio.CancelledError:
            if self._closed and flight.cancelled():
                raise GateClosed("the gate was closed during the tdmrep.json fetch") from None
            raise

    def _land(self, origin: str, flight: asyncio.Task[TdmRepSite]) -> None:
        if self._flights.get(origin) is flight:
            del self._flights[origin]
            self._asked_by_pointer.pop(origin, None)  # a pointer's ask ends with its flight
        if not flight.cancelled():
            flight.exception()  # retrieved: every waiter got it

    async def _fetch(self, origin: str, known: TdmRepSite | None,
                     via: object = None) -> TdmRepSite:
        previous = known.entry if known is not None else None
        key = origin + self.fetcher.path
        stored = await self._load(key)
        if stored is not None:
            stored = stored.copy(origin=origin)
            if stored.is_fresh(time.time()):
                return self._keep(origin, stored, known)  # a restart, or another worker
            if previous is None or stored.fetched_at > previous.fetched_at:
                previous = stored
        pacing = self._paced_by(origin) if self._paced_by is not None else _unpaced()
        async with pacing as hooks:
            # As the request leaves: a pointer's asker that joined meanwhile counts.
            checked = self._asked_by_pointer.pop(origin, None)
            if checked is None:
                checked = self.pointed.get(origin)
            entry = await self.fetcher.fetch(origin, previous, hooks, checked is not None,
                                             checked or (), via)
        await self._save(entry.copy(origin=key))
        return self._keep(origin, entry, known)

    def _keep(self, origin: str, entry: RobotsEntry, known: TdmRepSite | None) -> TdmRepSite:
        tdmrep = None
        if entry.outcome == Outcome.OK:
            if known is not None and known.tdmrep is not None and known.entry.body == entry.body:
                tdmrep = known.tdmrep  # a 304, or the same bytes: parsed already
            else:
                tdmrep = parse_tdmrep_json(entry.body or b"")
        site = TdmRepSite(entry, tdmrep)  # the body kept: the next fetch asks if modified
        sites = self._sites
        sites.pop(origin, None)
        sites[origin] = site
        while len(sites) > self.max_origins:
            del sites[next(iter(sites))]
        return site

    async def _load(self, key: str) -> RobotsEntry | None:
        if self.store is None:
            return None
        try:
            entry = await self.store.load_robots(key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._store_trouble("load tdmrep.json", exc)
            return None
        if entry is not None and entry.outcome == Outcome.OK and entry.body is None:
            return None  # damaged: an "ok" entry always keeps its body
        return entry

    async def _save(self, entry: RobotsEntry) -> None:
        if self.store is None or self._closed:
            return
        try:
            await self.store.save_robots(entry)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._store_trouble("save tdmrep.json", exc)

    def _store_trouble(self, what: str, exc: Exception) -> None:
        if self._trouble is not None:
            self._trouble(what, exc)

    def peek(self, origin: str) -> TdmRepSite | None:
        """The origin's tdmrep.json as kept, fresh or not (no I/O)."""
        return self._sites.get(origin)

    async def close(self) -> None:
        """Cancel the fetches in flight; their waiters and later asks get GateClosed."""
        self._closed = True
        flights = list(self._flights.values())
        for flight in flights:
            flight.cancel()
        if flights:
            await asyncio.wait(flights)
