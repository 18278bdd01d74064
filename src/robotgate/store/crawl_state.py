"""A crawl's frontier state: every URL it knows by its resource key, and where it stands.

The frontier (:mod:`robotgate.crawl.frontier`) asks a :class:`CrawlState` to
add URLs (once per key), hands out the queued ones a window at a time, and
reports each URL's outcome together with the links its page gave, in one step,
so that a state kept on disk never marks a page done without its links.

:class:`MemoryCrawlState` keeps it in this process: bounded (``max_seen``,
``max_pending``) for an unnamed crawl, unbounded for a named crawl kept in a
:class:`~robotgate.store.memory.MemoryStore`.  The SQLite one lives in
:mod:`robotgate.store.sqlite_crawl`.  No client, no I/O here.
"""

from __future__ import annotations

import abc
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from ..error_root import Error
from ..policy.provenance import INPUT, Provenance

__all__ = ["DONE", "FAILED", "IN_FLIGHT", "QUEUED", "SKIPPED", "CrawlCounts", "CrawlState",
           "Entry", "MemoryCrawlState", "NamedCrawlsUnsupported"]

#: Where a URL stands (the values a store keeps).
QUEUED, IN_FLIGHT, DONE, SKIPPED, FAILED = 0, 1, 2, 3, 4
#: The outcomes :meth:`CrawlState.finish` takes.
OUTCOMES = (DONE, SKIPPED, FAILED)


class NamedCrawlsUnsupported(Error, NotImplementedError):
    """The gate's store keeps no named crawls (a third-party store that does not implement
    them): use a MemoryStore, an SQLiteStore or a RedisStore, or crawl without ``name``."""


@dataclass(slots=True)
class Entry:
    """A URL of the crawl: its resource key, the URL as given, its link depth
    (0 for input), whether a page gave it, the attempts made so far, and who pointed
    at it (``provenance``: the caller's input, or the page whose link or sitemap
    entry it is), kept with it by every store.  None: a link an older robotgate
    queued without its page (see :meth:`robotgate.crawl.discovery.Discovery.pointer_of`)."""

    key: str
    url: str
    depth: int = 0
    discovered: bool = False
    attempts: int = 0
    provenance: Provenance | None = INPUT


@dataclass(slots=True)
class CrawlCounts:
    """How many of a crawl's URLs are queued, in flight, done, skipped and failed."""

    queued: int = 0
    in_flight: int = 0
    done: int = 0
    skipped: int = 0
    failed: int = 0

    @property
    def total(self) -> int:
        return self.queued + self.in_flight + self.done + self.skipped + self.failed

    @property
    def finished(self) -> int:
        return self.done + self.skipped + self.failed


@dataclass(slots=True)
class Added:
    """What became of URLs offered to a state: new (queued), already known, turned
    away for room (an unnamed crawl's bounds only)."""

    new: int = 0
    known: int = 0
    dropped: int = 0


class CrawlState(abc.ABC):
    """The state one crawl works on.  The frontier is its only writer while it runs."""

    #: Whether URLs are turned away for room (``Added.dropped``); the input then
    #: waits for room instead.
    bounded = False
    #: Seconds the frontier waits before asking again when :meth:`take` gave nothing
    #: while URLs are pending (a state shared by workers: the others hold them).
    idle_poll = 0.0

    @property
    @abc.abstractmethod
    def pending(self) -> int:
        """URLs queued in the state, not yet handed out by :meth:`take`."""

    @property
    def ready(self) -> int:
        """Entries :meth:`take` hands out without asking anyone: a shared state's,
        taken for this worker along with a write."""
        return 0

    @abc.abstractmethod
    async def open(self) -> CrawlCounts:
        """Start (or resume) the crawl: URLs left in flight by an earlier run go back
        to the queue.  Returns the counts found.  A store that gives a crawl one process
        at a time (SQLite) raises :class:`~robotgate.store.base.CrawlInUse` here, having
        changed nothing, while another process runs it."""

    @abc.abstractmethod
    async def add(self, entries: Sequence[Entry]) -> Added:
        """Queue the entries whose key is new (input URLs)."""

    @abc.abstractmethod
    async def add_links(self, entries: Sequence[Entry]) -> Added:
        """Queue the new ones of a page's links before its outcome (a page of many
        links): the page stays in flight, so a crash loses none of them."""

    @abc.abstractmethod
    async def take(self, most: int) -> list[Entry]:
        """Up to ``most`` queued entries, oldest first, now in flight."""

    @abc.abstractmethod
    async def finish(self, entry: Entry, outcome: int, links: Sequence[Entry]) -> Added:
        """``entry`` ended with ``outcome`` (DONE, SKIPPED, FAILED); its page gave
        ``links``, queued in the same step where new."""

    def will_take(self, most: int) -> None:  # noqa: B027 - nothing to prepare by default
        """The frontier's first :meth:`take` will ask for up to ``most`` entries: a shared
        state that hands entries out along with its writes may take them along with
        the input's first write, sparing that take a request of its own."""

    def write_now(self) -> None:  # noqa: B027 - written at once by default
        """Every visit of the crawl waits for its outcome's write, and no other can
        start: a state that holds writes back to share them sends them now."""

    @abc.abstractmethod
    async def release(self, entries: Sequence[Entry]) -> None:
        """Entries taken but not finished (a crawl stopped) go back to the queue."""

    @abc.abstractmethod
    async def counts(self) -> CrawlCounts:
        """The crawl's counts now."""

    async def close(self) -> None:  # noqa: B027 - nothing to let go of by default
        """The run is over (the state may still be reopened)."""


class MemoryCrawlState(CrawlState):
    """A crawl's state in this process.

    ``max_seen`` bounds the keys remembered and ``max_pending`` the URLs queued:
    links beyond either are turned away and counted (``Added.dropped``); input URLs
    are never turned away (the frontier waits for room), and beyond ``max_seen``
    they are queued without being remembered.  ``None``: no bound (a named crawl).
    """

    def __init__(self, max_seen: int | None = None, max_pending: int | None = None) -> None:
        self.max_seen = max_seen
        self.max_pending = max_pending
        self.bounded = max_seen is not None or max_pending is not None
        self._status: dict[str, int] = {}  # key -> QUEUED .. FAILED
        self._queue: deque[Entry] = deque()
        self._taken: dict[str, Entry] = {}
        self._counts = CrawlCounts()

    @property
    def pending(self) -> int:
        return len(self._queue)

    async def open(self) -> CrawlCounts:
        if self._taken:
            await self.release(list(self._taken.values()))
        return await self.counts()

    def _room_for_key(self) -> bool:
        return self.max_seen is None or len(self._status) < self.max_seen

    def _queue_new(self, entries: Sequence[Entry], links: bool) -> Added:
        added = Added()
        status = self._status
        for entry in entries:
            if entry.key in status:
                added.known += 1
                continue
            if links and self.max_pending is not None and len(self._queue) >= self.max_pending:
                added.dropped += 1
                continue
            if self._room_for_key():
                status[entry.key] = QUEUED
            elif links:
                added.dropped += 1
                continue
            self._queue.append(entry)
            added.new += 1
        self._counts.queued += added.new
        return added

    async def add(self, entries: Sequence[Entry]) -> Added:
        return self._queue_new(entries, links=False)

    async def add_links(self, entries: Sequence[Entry]) -> Added:
        return self._queue_new(entries, links=True)

    async def take(self, most: int) -> list[Entry]:
        queue = self._queue
        out = [queue.popleft() for _ in range(min(most, len(queue)))]
        for entry in out:
            self._taken[entry.key] = entry
            if entry.key in self._status:
                self._status[entry.key] = IN_FLIGHT
        self._counts.queued -= len(out)
        self._counts.in_flight += len(out)
        return out

    async def finish(self, entry: Entry, outcome: int, links: Sequence[Entry]) -> Added:
        if outcome not in OUTCOMES:
            raise ValueError(f"not an outcome: {outcome!r}")
        if self._taken.pop(entry.key, None) is not None:
            self._counts.in_flight -= 1
        if entry.key in self._status:
            self._status[entry.key] = outcome
        counts = self._counts
        if outcome == DONE:
            counts.done += 1
        elif outcome == SKIPPED:
            counts.skipped += 1
        else:
            counts.failed += 1
        return self._queue_new(links, links=True)

    async def release(self, entries: Sequence[Entry]) -> None:
        back = [e for e in entries if self._taken.pop(e.key, None) is not None]
        for entry in reversed(back):
            if entry.key in self._status:
                self._status[entry.key] = QUEUED
            self._queue.appendleft(entry)
        self._counts.in_flight -= len(back)
        self._counts.queued += len(back)

    async def counts(self) -> CrawlCounts:
        c = self._counts
        return CrawlCounts(c.queued, c.in_flight, c.done, c.skipped, c.failed)
