"""The default store: plain dictionaries in this process, bounded (LRU)."""

from __future__ import annotations

import time
import zlib
from collections import OrderedDict
from dataclasses import fields
from operator import attrgetter
from typing import Any, TypeVar

from ..records import SMALL_BODY
from .base import AnswersAtOnce, Crawls, HostState, RobotsEntry, Store
from .crawl_state import MemoryCrawlState

__all__ = ["MemoryStore"]

_V = TypeVar("_V")
#: How many of the least recently used host states eviction chooses among.
_EVICTION_CHOICES = 8

# A host's state is kept as the tuple of its fields, in HostState's order: taken in
# one C call on every answered page, where a HostState copy cost two Python calls.
_HOST_FIELDS = tuple(f.name for f in fields(HostState))
_host_values = attrgetter(*_HOST_FIELDS)
_NEXT_ALLOWED = _HOST_FIELDS.index("next_allowed")


class MemoryStore(Store, Crawls, AnswersAtOnce):
    """Keeps robots.txt entries and host state in memory.

    At most ``max_origins`` origins are kept; the least recently used is
    dropped first, so memory stays flat over a crawl of millions of hosts.

    >>> store = MemoryStore(max_origins=100_000)

    It keeps named crawls (:meth:`crawls`), and its answers need no await
    (:meth:`at_once`); a subclass whose coroutines do more (I/O) is awaited unless
    it sets ``answers_at_once = True`` itself.
    """

    #: Whether :meth:`at_once` hands out this store's answers without an await.
    answers_at_once = True

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "answers_at_once" not in vars(cls):
            cls.answers_at_once = False

    def __init__(self, max_origins: int = 100_000) -> None:
        if max_origins < 1:
            raise ValueError("max_origins must be at least 1")
        self.max_origins = max_origins
        # Bodies are kept compressed (text compresses 3-4x): they are read only
        # when an origin is revalidated or another gate shares the store.  A
        # small one gains little: it stays in its entry, kept as given (entries
        # are values: robotgate never changes one; load_robots returns a copy).
        self._robots: OrderedDict[str, RobotsEntry | tuple[RobotsEntry, bytes]] = OrderedDict()
        self._hosts: OrderedDict[str, tuple[Any, ...]] = OrderedDict()  # see _HOST_FIELDS
        self._crawls: dict[str, MemoryCrawlState] = {}  # named crawls, never evicted

    async def load_robots(self, origin: str) -> RobotsEntry | None:
        return self.get_robots(origin)

    async def save_robots(self, entry: RobotsEntry) -> None:
        self.put_robots(entry)

    async def load_host(self, origin: str) -> HostState | None:
        return self.get_host(origin)

    async def save_host(self, state: HostState) -> None:
        self.put_host(state)

    def crawls(self) -> Crawls:
        return self

    def at_once(self) -> AnswersAtOnce | None:
        return self if self.answers_at_once else None

    def crawl_state(self, name: str) -> MemoryCrawlState:
        state = self._crawls.get(name)
        if state is None:
            state = self._crawls[name] = MemoryCrawlState()
        return state

    async def crawl_names(self) -> list[str]:
        return sorted(self._crawls)

    async def drop_crawl(self, name: str) -> bool:
        return self._crawls.pop(name, None) is not None

    # The same, answered at once: the gate calls these on every new origin
    # (see :meth:`at_once`), where a coroutine each would cost more than the work.

    def get_robots(self, origin: str) -> RobotsEntry | None:
        """:meth:`load_robots` without a coroutine."""
        got = self._robots.get(origin)
        if got is None:
            return None
        self._robots.move_to_end(origin)
        if isinstance(got, RobotsEntry):
            return got.copy(body=got.body)
        entry, packed = got
        return entry.copy(body=zlib.decompress(packed))

    def put_robots(self, entry: RobotsEntry) -> None:
        """:meth:`save_robots` without a coroutine."""
        body = entry.body
        if body is None or len(body) <= SMALL_BODY:
            self._put(self._robots, entry.origin, entry)
        else:
            self._put(self._robots, entry.origin, (entry.copy(body=None), zlib.compress(body)))

    def get_host(self, origin: str) -> HostState | None:
        """:meth:`load_host` without a coroutine: a state made of the values kept."""
        kept = self._hosts.get(origin)
        if kept is None:
            return None
        self._hosts.move_to_end(origin)
        return HostState(*kept)

    def put_host(self, state: HostState) -> None:
        """:meth:`save_host` without a coroutine: ``state``'s values are kept (the
        scheduler goes on changing its own)."""
        hosts = self._hosts
        origin = state.origin
        hosts[origin] = _host_values(state)
        hosts.move_to_end(origin)
        while len(hosts) > self.max_origins:
            self._evict_host()

    def _evict_host(self) -> None:
        # Of the least recently used few, the one whose server may be asked soonest:
        # a wait a server asked for (Retry-After, a back-off) is not forgotten
        # because other servers came since; still O(1).
        hosts = self._hosts
        now = time.time()
        victim: str | None = None
        victim_next = 0.0
        # Never the newest: the state just stored.
        choices = min(_EVICTION_CHOICES, len(hosts) - 1)
        for (origin, kept), _ in zip(hosts.items(), range(choices), strict=False):
            next_allowed = kept[_NEXT_ALLOWED]
            if victim is None or next_allowed < victim_next:
                victim, victim_next = origin, next_allowed
            if next_allowed <= now:
                break
        assert victim is not None
        del hosts[victim]

    def _put(self, table: OrderedDict[str, _V], key: str, value: _V) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > self.max_origins:
            table.popitem(last=False)

