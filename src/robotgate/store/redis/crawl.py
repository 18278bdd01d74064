"""A named crawl in Redis, shared by every worker that crawls it (see ``docs/fleet.md``).

The crawl's URLs are queued per server (the URL's host name, the default
politeness group).  A worker leases the servers it crawls: for ``lease`` seconds,
renewed with each call and every third of it while the worker runs; a server is
crawled by one worker at a time, and a server whose lease lapsed (its worker died
or stalled) is taken back by whichever worker calls next: its URLs in flight return
to the front of its queue.  So every URL is handed out once fleet-wide, and again
only after its worker's lease lapsed.

Reads and writes go in batches: one script call hands out up to ``most`` URLs
(renewing the leases on the way), and pages that finish while a write is under way
go in the next one together, each with its links.  All of a crawl's keys share one
hash tag (:mod:`.crawl_scripts`), so on Redis Cluster a page's outcome and its links
are written atomically, as on one server.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...policy.provenance import INPUT, Provenance
from ...urls import resource_key
from ..base import StoreError
from ..crawl_state import OUTCOMES, Added, CrawlCounts, CrawlState, Entry
from ..leases import Leases
from .codec import tag, text
from .crawl_scripts import (
    CRAWL_COUNTS,
    CRAWL_DROP,
    CRAWL_OPEN,
    CRAWL_RELEASE,
    CRAWL_SYNC,
    CRAWL_WRITE,
    LAYOUT,
)

if TYPE_CHECKING:
    from .store import RedisStore

__all__ = ["RedisCrawlState", "crawl_base", "server_of"]

#: Seconds a worker's lease on a server lasts unless renewed.
LEASE = 6.0
#: The share of a lease its worker does not send in: a request that passed the fence
#: just before it still reaches the server before the lease ends in Redis.
FENCE_MARGIN = 1 / 6
#: Keys handed out per server at once, and servers leased by one worker at most.
_PER_SERVER = 64
_MAX_SERVERS = 64
#: Seconds a finished page waits for others to share its write (its visit keeps its
#: place in ``concurrency`` meanwhile, so a killed or stalled worker's pages fetched and
#: not yet written, fetched again, stay within it), and a write that queues URLs (links,
#: input): those may be for this worker's servers.  None waits once every place of
#: the crawl waits for it (:meth:`RedisCrawlState.write_now`).  Waiting costs no
#: pace: a visit starts while any place is free, and with none free the write goes.
#: At 0.2 s a worker pacing 5 servers 0.2 s apart wrote 5 pages a call, at 0.5 s 8
#: (its ``concurrency``): the fleet's writes fell from 0.17 to 0.12 round trips a page.
LINGER = 0.5
LINGER_LINKS = 0.05
#: A page's links and pages per write call at most (a script's arguments stay small).
_WRITE_ARGS = 30_000

_Pending = list[tuple[Entry, str, int, list[Entry], "asyncio.Future[Added]"]]


def crawl_base(prefix: str, name: str) -> str:
    """The start of every key of crawl ``name`` (one hash tag: one Cluster slot)."""
    return f"{prefix}:crawl:{tag('crawl/' + name)}"


def _names_key(store: RedisStore) -> str:
    """The set of the crawl names under the store's prefix."""
    return f"{store.prefix}:crawls"


def server_of(url: str) -> str:
    """The server a URL is queued under: its host name (scheme and port aside)."""
    authority = resource_key(url).partition("://")[2].partition("/")[0]
    if authority[:1] == "[":
        return authority[: authority.find("]") + 1]
    return authority.rpartition("@")[2].partition(":")[0]


def _counts(raw: Any) -> CrawlCounts:
    return CrawlCounts(*(int(v) for v in raw))


#: A provenance's mark in an entry: input, or a page public, private, to be looked up
#: (``?``: a link whose page is not known, never written by robotgate itself).
_MARKS = {True: "t", False: "f", None: "n"}
_PUBLIC = {mark: public for public, mark in _MARKS.items()}


def _entry(key: bytes, raw: bytes, attempts: bytes) -> Entry:
    """An entry as layout 2 keeps it: ``depth|discovered|mark|len(page)|page url``."""
    try:
        depth, discovered, mark, size, rest = text(raw).split("|", 4)
        n = int(size)
        if not 0 <= n <= len(rest) or mark not in "ifnt?" or len(mark) != 1:
            raise ValueError(mark)
    except ValueError:
        raise StoreError(f"the named crawl's entry of {text(key)!r} is not one robotgate"
                         f" writes (layout {LAYOUT}): {text(raw)[:120]!r}") from None
    provenance: Provenance | None
    if mark == "i":
        provenance = INPUT
    elif mark in _PUBLIC:
        provenance = Provenance(rest[:n], _PUBLIC[mark])
    else:
        provenance = None
    return Entry(text(key), rest[n:], int(depth), discovered == "1", int(attempts), provenance)


def _record(entry: Entry) -> str:
    provenance = entry.provenance
    if provenance is None:
        mark, page = "?", ""
    elif provenance.page is None:
        mark, page = "i", ""
    else:
        mark, page = _MARKS[provenance.public], provenance.page
    return f"{entry.depth}|{int(entry.discovered)}|{mark}|{len(page)}|{page}{entry.url}"


def _older_layout(name: str, prefix: str, layout: int) -> str:
    """The refusal of a crawl an older robotgate keeps (its workers may still run)."""
    return (
        f"the named crawl {name!r} under Redis prefix {prefix!r} is in layout {layout},"
        f" kept by an older robotgate, whose queued links do not say which page pointed"
        f" at them; this robotgate reads layout {LAYOUT}, which does. Finish the crawl with"
        f" the robotgate that started it, or drop it (robotgate crawls --store redis://HOST"
        f" {name} --drop, or store.drop_crawl(name)) and start it again, or crawl under"
        " another name")


class RedisCrawlState(CrawlState):
    """The crawl ``name`` under ``store``'s prefix, shared by the workers that open it."""

    idle_poll = 0.25

    def __init__(self, store: RedisStore, name: str, *, lease: float = LEASE,
                 server: Callable[[str], str] = server_of,
                 max_servers: int = _MAX_SERVERS, leases: Leases | None = None,
                 linger: float = LINGER) -> None:
        if lease <= 0:
            raise ValueError("lease must be positive")
        self.store = store
        self.name = name
        self.lease = lease
        self.server = server
        self.max_servers = max_servers
        self.linger = linger
        #: Where the gate's pacing learns the servers held (written here only).
        self.leases = leases
        self.base = crawl_base(store.prefix, name)
        #: This worker's name in the leases.
        self.worker = secrets.token_hex(8)
        self._held: dict[str, int] = {}  # leased server -> its keys handed to us, not done
        self._out: dict[str, str] = {}  # key handed to us -> its server
        self._fleet = CrawlCounts()  # as the last call saw them
        self._sync_lock = asyncio.Lock()
        self._synced = float("-inf")  # loop time the last call for URLs asked
        self._want = 0  # URLs the frontier last asked for: a write takes as many along
        self._handed: list[Entry] = []  # taken along with a write, for the next take()
        self._renewer: asyncio.Task[None] | None = None
        self._finished: _Pending = []
        self._writer: asyncio.Task[None] | None = None
        self._hurry = asyncio.Event()  # a write waiting queues URLs: it goes soon
        self._now = asyncio.Event()  # nothing more can join the write waiting: it goes
        #: URLs of this worker's crawl taken back from lapsed leases, and servers
        #: whose lease this worker lost (it stalled longer than the lease).
        self.reaped = 0
        self.lost = 0
        self._lost: set[str] = set()  # servers lost, fenced until leased again or closed
        #: Redis lost the crawl (restarted empty, or dropped): nothing more to renew.
        self.gone = False
        # The crawl's ``created`` as opened: one made again after a loss is another.
        self._created = b""

    # -- the calls ------------------------------------------------------------

    async def _run(self, script: Any, args: list[Any]) -> Any:
        return self._checked(
            await self.store.run_script(script, [self.base], [*args, self._created]))

    def _call(self, script: Any, args: list[Any]) -> tuple[Any, list[str], list[Any]]:
        """A call of ``script`` for :meth:`RedisStore.run_scripts`."""
        return script, [self.base], [*args, self._created]

    def _checked(self, reply: Any) -> Any:
        """A crawl script's reply; StoreError where it failed, or the crawl is gone."""
        if isinstance(reply, StoreError):
            raise reply
        if isinstance(reply, list) and reply[:1] == [b"LOST"]:
            if not self.gone:
                self.gone = True
                # Any server, this worker's or another's, may have just been asked.
                self.store.note_data_lost(
                    f"the named crawl {self.name!r} is gone: start it again from its input")
            raise StoreError(
                f"the named crawl {self.name!r} is gone from Redis under prefix"
                f" {self.store.prefix!r} (Redis restarted empty, or the crawl was dropped):"
                " its queue and seen-set are lost; start it again from its input")
        return reply

    @property
    def pending(self) -> int:
        """URLs the fleet has queued, or in flight with other workers (whose pages
        may give more, or whose lease may lapse): this worker waits for them."""
        fleet = self._fleet
        return max(0, fleet.queued + fleet.in_flight - len(self._out))

    async def open(self) -> CrawlCounts:
        store = self.store
        names = _names_key(store)
        # On one server the crawl is named in the same call; a cluster keeps the names
        # in another slot.
        keys = [self.base] if store.cluster else [self.base, names]
        reply = await store.run_script(CRAWL_OPEN, keys, [LAYOUT, repr(time.time()), self.name])
        layout = int(reply[0])
        if layout > LAYOUT:
            raise StoreError(
                f"the named crawl {self.name!r} under Redis prefix {store.prefix!r} is in"
                f" layout {layout}; this robotgate reads layout {LAYOUT}. Upgrade robotgate,"
                " or crawl under another name")
        if layout < LAYOUT:
            raise StoreError(_older_layout(self.name, store.prefix, layout))
        if store.cluster:
            await store.call(lambda client: client.sadd(names, self.name), [names])
        self._fleet = _counts(reply[1])
        self._created = reply[2]
        self.gone = False
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.get_running_loop().create_task(self._renew())
        return CrawlCounts(self._fleet.queued, self._fleet.in_flight, self._fleet.done,
                           self._fleet.skipped, self._fleet.failed)

    async def _renew(self) -> None:
        """Keep the leases of the servers this worker works on: every third of the
        lease, unless a call for URLs renewed them meanwhile."""
        loop = asyncio.get_running_loop()
        every = self.lease / 3
        while not self.gone:
            ahead = self._synced + every - loop.time()
            if ahead > 0 or not self._held:  # renewed meanwhile, or nothing to renew
                await asyncio.sleep(ahead if ahead > 0 else every)
                continue
            with contextlib.suppress(StoreError):  # the next call says it
                async with self._sync_lock:
                    await self._sync(0)

    def _sync_args(self, want: int, finishing: Counter[str]) -> list[Any]:
        """CRAWL_SYNC's arguments: the busy servers renewed, the idle ones (whose keys
        are all done once ``finishing``, keys per server the same request finishes
        first, is written) give keys or are let go, and fresh ones leased while
        ``want`` keys are wanted.  The leases are counted from now."""
        left = {s: n - finishing[s] for s, n in self._held.items()}
        busy = [s for s, n in left.items() if n > 0]
        idle = [s for s, n in left.items() if n <= 0]
        fresh = max(0, self.max_servers - len(self._held)) if want > 0 else 0
        self._synced = asyncio.get_running_loop().time()  # the leases are renewed from here
        return [self.worker, max(1, round(self.lease * 1000)), want, _PER_SERVER, fresh,
                len(busy), *busy, len(idle), *idle]

    async def _sync(self, most: int) -> list[Entry]:
        """Up to ``most`` keys of this worker's servers, and leases renewed; under
        ``_sync_lock``."""
        args = self._sync_args(most, Counter())
        asked = self._synced
        reply = await self._run(CRAWL_SYNC, args)
        return await self._synced_reply(reply, asked)

    async def _synced_reply(self, reply: Any, asked: float) -> list[Entry]:
        """The keys a CRAWL_SYNC asked at loop time ``asked`` handed out; the leases
        it renewed, gave and took noted."""
        replied = asyncio.get_running_loop().time()
        reaped, fleet, pairs, lost, flat = reply
        self.reaped += int(reaped)
        self.lost += len(lost)
        self._fleet = _counts(fleet)
        held = {text(s): int(since) for s, since in zip(pairs[::2], pairs[1::2], strict=True)}
        # Lost, and not leased to this worker again in the same call (as its own
        # lapsed lease may be: then the URLs it holds are still its own).
        lost_to = {text(s) for s in lost} - held.keys()
        if lost_to:
            self._forget(lost_to)
            self._lost |= lost_to
        leases = self.leases
        if leases is not None:
            for server in self._held.keys() - held.keys():
                if server in lost_to:
                    leases.lose(server)
                else:
                    leases.drop(server)
            first = self._first_free(replied)
            # Redis set each lease's end an interval after it ran the script: after
            # `asked`.  A request leaves before the fence, a margin earlier.
            until = asked + self.lease * (1 - FENCE_MARGIN)
            for server, since in held.items():
                free_at = (None if since == -1 else first if since == -2
                           else replied - since / 1000)
                leases.hold(server, until, free_at)
            # The servers just leased: their host states are asked for next.
            taken = [s for s, since in held.items() if since != -1]
            if taken:
                await self.store.read_hosts_ahead(taken)
        self._held = {s: self._held.get(s, 0) for s in held}
        out: list[Entry] = []
        for i in range(0, len(flat), 4):
            server = text(flat[i])
            entry = _entry(flat[i + 1], flat[i + 2], flat[i + 3])
            if self._out.get(entry.key) == server:
                continue  # handed out again after its lease lapsed: still queued here
            self._out[entry.key] = server
            self._held[server] = self._held.get(server, 0) + 1
            out.append(entry)
        return out

    def _forget(self, servers: set[str]) -> None:
        """Another worker took ``servers`` over: the URLs handed out with their leases
        went back to their queues in Redis (handed out again to whoever leases them)."""
        for key in [k for k, s in self._out.items() if s in servers]:
            del self._out[key]
        self._handed = [e for e in self._handed if e.key in self._out]

    def _first_free(self, now: float) -> float:
        """When the worker before may have asked a server never leased in this crawl
        (loop time ``now``): never, unless this store saw Redis lose its data.  Then any
        server may have been asked as late as the end of a lease of the lost crawl,
        by a worker that had not yet seen the loss: a lease after it was noticed."""
        lost = self.store.unrecorded_until
        if not lost:
            return float("-inf")
        return now - max(0.0, time.time() - lost) + self.lease

    @property
    def ready(self) -> int:
        return len(self._handed)

    async def take(self, most: int) -> list[Entry]:
        """The keys taken along with a write, if any; else up to ``most`` keys asked
        for now, unless a call asked lately: within ``idle_poll`` or, while this worker
        has keys not yet done (whose writes take along), within a third of the lease."""
        self._want = most
        async with self._sync_lock:  # a write's take under way lands first
            if self._handed:
                out, self._handed = self._handed[:most], self._handed[most:]
                return out
            lately = self.lease / 3 if self._out else self.idle_poll
            if asyncio.get_running_loop().time() - self._synced < lately:
                return []
            return await self._sync(most)

    def _let_go(self, key: str) -> str:
        server = self._out.pop(key, None)
        if server is None:
            return ""
        if server in self._held:
            self._held[server] -= 1
        return server

    # -- writes ---------------------------------------------------------------

    async def add(self, entries: Sequence[Entry]) -> Added:
        return await self._queue(None, 0, entries)

    async def add_links(self, entries: Sequence[Entry]) -> Added:
        return await self._queue(None, 0, entries)

    async def finish(self, entry: Entry, outcome: int, links: Sequence[Entry]) -> Added:
        if outcome not in OUTCOMES:
            raise ValueError(f"not an outcome: {outcome!r}")
        return await self._queue(entry, outcome, links)

    async def _queue(self, entry: Entry | None, outcome: int, links: Sequence[Entry]) -> Added:
        """Into the next write, with whatever else finishes meanwhile."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Added] = loop.create_future()
        page = entry if entry is not None else Entry("", "")
        self._finished.append((page, "", outcome, list(links), done))
        if links:
            self._hurry.set()
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write())
        return await asyncio.shield(done)

    async def _write(self) -> None:
        while self._finished:
            if self.linger > 0:
                # Pages finishing within ``linger`` of each other share one call; new
                # URLs go sooner; none waits once nothing more can join.
                if not self._hurry.is_set():
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._hurry.wait(), self.linger)
                if not self._now.is_set():
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._now.wait(), min(self.linger, LINGER_LINKS))
            self._hurry.clear()
            self._now.clear()
            batch: _Pending = []
            size = 0
            while self._finished and (not batch or size < _WRITE_ARGS):
                item = self._finished.pop(0)
                batch.append(item)
                size += 5 + 3 * len(item[3])
            args: list[Any] = [len(batch)]
            finishing: Counter[str] = Counter()
            for page, _, outcome, links, _done in batch:
                server = self._out.get(page.key, "") if page.key else ""
                finishing[server] += 1
                args += [page.key, server, outcome, page.attempts, len(links)]
                for link in links:
                    args += [link.key, self.server(link.url), _record(link)]
            async with self._sync_lock:
                await self._write_batch(batch, args, finishing)

    async def _write_batch(self, batch: _Pending, args: list[Any],
                           finishing: Counter[str]) -> None:
        """One write: the pages' outcomes and links and, in the same request, a take
        for this worker's servers (renewing their leases), unless it has none and wants
        no keys; under ``_sync_lock``."""
        calls = [self._call(CRAWL_WRITE, args)]
        want = max(0, self._want - len(self._handed))
        along = bool(self._held) or want > 0
        if along:
            calls.append(self._call(CRAWL_SYNC, self._sync_args(want, finishing)))
        asked = self._synced
        try:
            replies = await self.store.run_scripts(calls)
            fleet, news = self._checked(replies[0])
        except Exception as exc:
            for *_, done in batch:
                if not done.done():
                    done.set_exception(exc)
            return
        except BaseException:
            for *_, done in batch:
                done.cancel()
            raise
        for page, _, _, _, _ in batch:
            if page.key:
                self._let_go(page.key)
        self._fleet = _counts(fleet)
        for (_, _, _, links, done), new in zip(batch, news, strict=True):
            if not done.done():
                done.set_result(Added(new=int(new), known=len(links) - int(new)))
        if along:
            with contextlib.suppress(StoreError):  # the next call says it
                self._handed += await self._synced_reply(self._checked(replies[1]), asked)

    def will_take(self, most: int) -> None:
        if not self._out and not self._handed:
            self._want = most

    def write_now(self) -> None:
        self._hurry.set()
        self._now.set()

    async def release(self, entries: Sequence[Entry]) -> None:
        """Entries handed to this worker and not finished go back to the front of
        their queues; with no entries left, its servers are let go too."""
        back = [(e.key, self._out[e.key]) for e in entries if e.key in self._out]
        for key, _ in back:
            self._let_go(key)
        servers = [s for s, n in self._held.items() if n <= 0]
        if not back and not servers:
            return
        async with self._sync_lock:
            reply = await self._run(CRAWL_RELEASE, [
                self.worker, len(back), *(x for pair in back for x in pair),
                len(servers), *servers])
            for server in servers:
                self._held.pop(server, None)
                if self.leases is not None:
                    self.leases.drop(server)
            self._fleet = _counts(reply[0])

    async def close(self) -> None:
        renewer, self._renewer = self._renewer, None
        if renewer is not None:
            renewer.cancel()
            await asyncio.gather(renewer, return_exceptions=True)
        if self._writer is not None:
            self.write_now()  # nothing more can join a write waiting
            await asyncio.gather(self._writer, return_exceptions=True)
        handed, self._handed = self._handed, []
        with contextlib.suppress(StoreError):
            await self.release(handed)
        if self.leases is not None:
            for server in {*self._held, *self._lost}:
                self.leases.drop(server)

    async def counts(self) -> CrawlCounts:
        return _counts(await self.store.run_script(CRAWL_COUNTS, [self.base], []))


async def drop(store: RedisStore, name: str) -> bool:
    """Forget the crawl ``name`` under ``store``'s prefix; whether there was one."""
    had = await store.run_script(CRAWL_DROP, [crawl_base(store.prefix, name)], [])
    names = _names_key(store)
    removed = await store.call(lambda client: client.srem(names, name), [names])
    return bool(had) or bool(removed)


async def names(store: RedisStore) -> list[str]:
    """The named crawls under ``store``'s prefix."""
    key = _names_key(store)
    found = await store.call(lambda client: client.smembers(key), [key])
    return sorted(text(n) for n in found)
