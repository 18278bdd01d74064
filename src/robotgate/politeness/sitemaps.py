"""Sitemaps through the gate: each fetched once for the walks that need it, checked, paced.

Client-free: the gate supplies a :class:`SitemapTransport` that opens a sitemap
as it opens a page (robots.txt checked, raising
:class:`~robotgate.errors.Disallowed`; the server's turn taken; each redirect
hop checked and paced); the bytes go to the pure
:class:`~robotgate.robots.sitemap.SitemapParser` as they arrive.

A sitemap robots.txt names, or an index lists, is that file's pointer, opened
``pointed_by`` it: a public site's may not lead into a private address (see
:mod:`robotgate.policy.hops`).  Only ``/sitemap.xml`` of the origin asked for is
the caller's own input.

A :class:`SitemapReader` reads each sitemap once for all the walks running at
the time (single flight), as a :class:`SitemapStream`: the entries go to the walks
reading it a network chunk at a time; once no other walk can join, what they all
have is let go, and the read waits for the slowest (a 50,000-URL file through one
walk holds a few chunks' entries, not the file's).  A :class:`Sitemaps` walk is one
caller's async iterator over an origin's entries.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from ..errors import Disallowed, GateClosed
from ..redaction import failure_text, logger
from ..robots.sitemap import Scope, SitemapEntry, SitemapFile, SitemapParser
from ..urls import InvalidURL, redact

__all__ = ["SitemapBody", "SitemapProblem", "SitemapReader", "SitemapTransport", "Sitemaps"]

log = logger("robotgate.sitemaps")

#: Bytes asked of the body at a time.
_CHUNK = 1 << 16
#: A sitemap not read whole this long after its request went out is cut there.
TIMEOUT = 120.0


class SitemapBody(Protocol):
    """An answer being read: its status, and its body (decoded) in chunks."""

    @property
    def status(self) -> int: ...

    async def read(self, n: int) -> bytes:
        """At most ``n`` more bytes of the body; ``b""`` at its end."""
        ...


class SitemapTransport(Protocol):
    """What an adapter provides to read sitemaps through the gate."""

    def open(self, url: str, timeout: float,
             pointed_by: str | None) -> AbstractAsyncContextManager[SitemapBody]:
        """GET ``url`` as a page is fetched: raises :class:`~robotgate.errors.Disallowed`
        when robots.txt forbids it (nothing sent), or when it is the pointer of a public
        page (``pointed_by``, None: the caller's input) into a private address; waits for
        the server's turn, follows redirects hop by hop; the request ends ``timeout``
        seconds after it is sent.  Leaving the context lets go of the answer, read whole
        or not."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class SitemapProblem:
    """Why a sitemap, or part of it, was not read: ``sitemap`` is its URL (without
    its password)."""

    sitemap: str
    reason: str

    def __str__(self) -> str:
        return f"{self.sitemap}: {self.reason}"


#: Chunks' entries a read may be ahead of the slowest walk reading it, once no other
#: walk can join it (before that, each is kept for the walks still to read the file).
_AHEAD = 2


class SitemapStream:
    """One sitemap being read for the walks reading it: its entries (or an index's
    sitemaps) a network chunk at a time, then the file (kind, problems; no entries).

    Each walk reading it has a place in it.  While others may still join (``open``),
    every chunk is kept; after, what every walk reading it has had is let go, and the
    read waits while it is :data:`_AHEAD` chunks ahead of the slowest.
    """

    def __init__(self) -> None:
        self.chunks: deque[tuple[SitemapEntry, ...]] = deque()
        self.dropped = 0  # chunks let go before ``chunks[0]``
        self.kind = ""  # the parser's, once known: "index" or what gives entries
        self.file: SitemapFile | None = None  # the end
        self.open = True  # walks may join: every chunk is kept
        self.places: dict[Sitemaps, int] = {}  # each walk reading it: its next chunk
        self.task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    @property
    def held(self) -> int:
        return sum(map(len, self.chunks))

    def add(self, entries: list[SitemapEntry]) -> None:
        if entries:
            self.chunks.append(tuple(entries))
            self._wake()

    def end(self, file: SitemapFile) -> None:
        self.file = file
        self._wake()

    async def room(self) -> None:
        """Wait while the read is far enough ahead of the slowest walk reading it."""
        while not self.open and self.places and len(self.chunks) >= _AHEAD:
            await self._changed.wait()  # (the read itself waits: no failure to watch)

    async def next(self, walk: Sitemaps) -> tuple[SitemapEntry, ...] | None:
        """``walk``'s next chunk, waited for; None at the end."""
        while True:
            place = self.places[walk]
            if place - self.dropped < len(self.chunks):
                self.places[walk] = place + 1
                chunk = self.chunks[place - self.dropped]
                self._let_go()
                return chunk
            if self.file is not None:
                return None
            await self._change()

    async def started(self) -> None:
        """Wait for the first chunk, or the end."""
        while not self.chunks and self.file is None:
            await self._change()

    def join(self, walk: Sitemaps) -> None:
        self.places[walk] = self.dropped  # while open, nothing was let go

    def leave(self, walk: Sitemaps) -> None:
        self.places.pop(walk, None)
        self._let_go()

    def close(self) -> None:
        """No more walks join: let go of what every walk reading it has had."""
        self.open = False
        self._let_go()

    def _let_go(self) -> None:
        if self.open:
            return
        if not self.places:
            self.chunks.clear()
            if self.file is None and self.task is not None:
                self.task.cancel()  # nobody reads it any more
            return
        lowest = min(self.places.values())
        chunks = self.chunks
        while self.dropped < lowest and chunks:
            chunks.popleft()
            self.dropped += 1
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _change(self) -> None:
        """Wait for a change; the read's failure (the gate closed) is raised here."""
        task = self.task
        if task is not None and task.done():
            task.result()  # GateClosed, or CancelledError: as the walk's own
            return  # it ended with its end given
        changed = self._changed
        if task is None:
            await changed.wait()
            return
        waiter = asyncio.ensure_future(changed.wait())
        try:
            await asyncio.wait((waiter, task), return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()


class SitemapReader:
    """Reads sitemaps through ``transport``, each once for all the walks running.

    ``named(origin)`` gives the ``Sitemap`` URLs of the origin's robots.txt.  A
    sitemap being read is shared by the walks that ask for it until the first of
    them has its first entries and no other walk running has it still to read
    (a walk asking for it later reads it again); ``keep_entries`` is no longer used.
    """

    def __init__(self, transport: SitemapTransport,
                 named: Callable[[str], Awaitable[Sequence[str]]], *,
                 timeout: float = TIMEOUT, keep_entries: int = 200_000) -> None:
        self.transport = transport
        self.named = named
        self.timeout = timeout
        self.keep_entries = keep_entries
        self._files: dict[tuple[str, str | None, str | None], SitemapStream] = {}
        self._walks: weakref.WeakSet[Sitemaps] = weakref.WeakSet()

    @property
    def held_entries(self) -> int:
        """Entries (and an index's sitemaps) of the sitemaps read that the reader holds
        for walks still to read them; one every walk has started is no longer held."""
        return sum(stream.held for stream in self._files.values())

    def walk(self, origin: str, *, max_depth: int = 2, max_sitemaps: int = 1000) -> Sitemaps:
        """A new walk over ``origin``'s sitemaps (see :class:`Sitemaps`)."""
        if max_depth < 0:
            raise ValueError("max_depth must be >= 0")
        if max_sitemaps < 1:
            raise ValueError("max_sitemaps must be at least 1")
        if not self._walks:
            self._forget_read()  # nobody can be sharing them: each walk reads afresh
        walk = Sitemaps(self, origin, max_depth, max_sitemaps)
        self._walks.add(walk)
        return walk

    def ended(self, walk: Sitemaps) -> None:
        self._walks.discard(walk)
        if not self._walks:
            self._forget_read()

    def file(self, url: str, vouched_by: str | None, pointed_by: str | None,
             walk: Sitemaps) -> SitemapStream:
        """The sitemap at ``url`` being read (or read) for every walk that asks, with
        ``walk`` reading it from its start; ``pointed_by``: the robots.txt or index that
        named it (None: the caller's input)."""
        key = (url, vouched_by, pointed_by)
        stream = self._files.get(key)
        if stream is None or (stream.task is not None and stream.task.cancelled()):
            stream = self._files[key] = SitemapStream()
            stream.task = asyncio.ensure_future(self._read(stream, url, vouched_by, pointed_by))
            stream.task.add_done_callback(functools.partial(self._read_done, key))
        stream.join(walk)
        return stream

    def _read_done(self, key: tuple[str, str | None, str | None],
                   task: asyncio.Task[None]) -> None:
        # GateClosed, or a cancel: each walk reading it hears it; the next ask reads again.
        failed = task.cancelled() or task.exception() is not None
        stream = self._files.get(key)
        if failed and stream is not None and stream.task is task:
            del self._files[key]

    def release(self, key: tuple[str, str | None, str | None]) -> None:
        """No more walks join the sitemap read for ``key`` (URL, vouched by, pointed by)
        unless a walk running still has it to read: its entries then live in the walks
        reading them alone, as they read them."""
        stream = self._files.get(key)
        if stream is None:
            return
        url, vouched_by, pointed_by = key
        for walk in self._walks:
            if walk.will_read(url, vouched_by, pointed_by):
                return
        del self._files[key]
        stream.close()

    def _forget_read(self) -> None:
        """No walk runs: no sitemap read is kept, and one being read is let go."""
        for stream in self._files.values():
            stream.close()
        self._files.clear()

    async def _read(self, stream: SitemapStream, url: str, vouched_by: str | None,
                    pointed_by: str | None) -> None:
        """Fetch and parse one sitemap into ``stream``: always a file at its end, whatever
        happens, unless the gate closes or the read is cancelled."""
        try:
            scope = Scope.of(url, vouched_by)
        except InvalidURL as exc:
            stream.end(_failed(url, f"not read: {exc}"))
            return
        parser = SitemapParser(url, scope)
        why: str | None = None
        try:
            async with self.transport.open(url, self.timeout, pointed_by) as body:
                status = body.status
                if not 200 <= status < 300:
                    stream.end(_failed(url, f"answered {status}: not read"))
                    return
                while True:
                    chunk = await body.read(_CHUNK)
                    more = bool(chunk) and parser.feed(chunk)
                    stream.kind = parser.kind
                    stream.add(parser.take())
                    if not more:
                        break  # the end, or the parser wants no more
                    await stream.room()
        except Disallowed as no:
            stream.end(_failed(url, f"not fetched: {no.decision.reason}"))
            return
        except (asyncio.CancelledError, GateClosed):
            raise
        except asyncio.TimeoutError:
            why = f"not read whole within {self.timeout:g}s"
        except Exception as exc:  # the site's failure, or the client's: still an answer
            why = f"the fetch failed ({failure_text(exc)})"
        file = parser.close(cut=why is not None)
        if why is not None:
            file = dataclasses.replace(file, problems=(why, *file.problems))
        for problem in file.problems:
            log.info("sitemap %s: %s", redact(url), problem)
        stream.kind = file.kind
        stream.add(list(file.children if file.kind == "index" else file.entries))
        stream.end(dataclasses.replace(file, entries=(), children=()))


#: A sitemap a walk will read: URL, depth, the origin vouching for it, the page pointing to it.
_Pending = tuple[str, int, str | None, str | None]


def _failed(url: str, why: str) -> SitemapFile:
    log.info("sitemap %s: %s", redact(url), why)
    return SitemapFile(url, problems=(why,))


class Sitemaps:
    """``async for entry in gate.sitemaps(url)``: the entries of an origin's sitemaps.

    The sitemaps are those its robots.txt names, else ``/sitemap.xml``; an index's
    sitemaps are read in its order, down to ``max_depth`` levels of index, at most
    ``max_sitemaps`` files in all.  Nothing is raised for a sitemap that cannot be
    read (disallowed, failed, broken, too big): ``problems`` says what and why, as
    the walk goes; ``read`` lists the sitemaps read.
    """

    def __init__(self, reader: SitemapReader, origin: str, max_depth: int,
                 max_sitemaps: int) -> None:
        self.origin = origin
        self.max_depth = max_depth
        self.max_sitemaps = max_sitemaps
        self.problems: list[SitemapProblem] = []
        self.read: list[str] = []
        self._reader = reader
        # Each sitemap to read: its URL, depth, the origin vouching for it, its pointer.
        self._pending: deque[_Pending] | None = None
        self._seen: set[str] = set()
        self._said_too_many = False
        self._entries: tuple[SitemapEntry, ...] = ()
        self._next = 0
        # The sitemap being read: its stream, depth and the origin vouching for it.
        self._reading: tuple[SitemapStream, int, str | None] | None = None
        self._ended = False

    def __aiter__(self) -> Sitemaps:
        return self

    async def __anext__(self) -> SitemapEntry:
        while True:
            entries = self._entries
            if self._next < len(entries):
                self._next += 1
                return entries[self._next - 1]
            if self._ended:
                raise StopAsyncIteration
            self._entries = ()  # a chunk delivered is let go before the next is read
            if self._reading is not None:
                await self._read_on(*self._reading)
                continue
            pending = self._pending
            if pending is None:
                self._pending = await self._first()
                continue
            if not pending:
                await self.aclose()
                raise StopAsyncIteration
            url, depth, vouched_by, pointed_by = pending.popleft()
            stream = self._reader.file(url, vouched_by, pointed_by, self)
            self._reading = (stream, depth, vouched_by)
            try:
                await stream.started()  # meanwhile, the other walks asking join
            except BaseException:
                self._stop_reading()
                raise
            self._reader.release((url, vouched_by, pointed_by))

    async def _read_on(self, stream: SitemapStream, depth: int, vouched_by: str | None) -> None:
        """The next chunk of the sitemap being read into ``_entries`` (an index's sitemaps
        all at once, to the walk's queue), or its end taken."""
        try:
            if stream.kind == "index":
                children: list[SitemapEntry] = []
                while (chunk := await stream.next(self)) is not None:
                    children.extend(chunk)
            else:
                chunk = await stream.next(self)
                if chunk is not None:
                    self._entries, self._next = chunk, 0
                    return
        except BaseException:
            self._stop_reading()
            raise
        self._stop_reading()
        file = stream.file
        assert file is not None
        if file.kind == "index":
            file = dataclasses.replace(file, children=tuple(children))
        self._take(file, depth, vouched_by)

    def _stop_reading(self) -> None:
        if self._reading is not None:
            self._reading[0].leave(self)
            self._reading = None

    def will_read(self, url: str, vouched_by: str | None, pointed_by: str | None) -> bool:
        """Is this sitemap still to be read by this walk?"""
        return any(p[0] == url and p[2] == vouched_by and p[3] == pointed_by
                   for p in self._pending or ())

    async def aclose(self) -> None:
        """End the walk (``async for`` ending early may leave it to the garbage collector)."""
        if not self._ended:
            self._ended = True
            self._entries = ()
            self._stop_reading()
            self._reader.ended(self)

    async def _first(self) -> deque[_Pending]:
        origin = self.origin
        named = list(await self._reader.named(origin))
        if not named:
            return deque([(origin + "/sitemap.xml", 0, None, None)])  # the caller's input
        first: deque[_Pending] = deque()
        robots = origin + "/robots.txt"
        for url in named:
            if self._admit(url):
                first.append((url, 0, origin, robots))  # robots.txt vouches for it, points to it
        return first

    def _admit(self, url: str) -> bool:
        """Count ``url`` as a sitemap of this walk, unless seen or over the limit."""
        if url in self._seen:
            return False
        if len(self._seen) >= self.max_sitemaps:
            if not self._said_too_many:
                self._said_too_many = True
                self._problem(url, f"more than {self.max_sitemaps:,} sitemaps (max_sitemaps): "
                                   "this one and the rest are not read")
            return False
        self._seen.add(url)
        return True

    def _take(self, file: SitemapFile, depth: int, vouched_by: str | None) -> None:
        shown = redact(file.url)
        self.problems.extend(SitemapProblem(shown, why) for why in file.problems)
        if file.kind:
            self.read.append(file.url)
        if file.kind != "index":
            return  # its entries were delivered as they came
        if depth >= self.max_depth:
            self._problem(file.url, f"an index {depth} levels down (max_depth={self.max_depth}):"
                                    f" its {len(file.children):,} sitemaps are not read")
            return
        children = [(c.url, depth + 1, vouched_by, file.url) for c in file.children
                    if self._admit(c.url)]
        pending = self._pending
        assert pending is not None
        pending.extendleft(reversed(children))  # depth first, in the index's order

    def _problem(self, sitemap: str, reason: str) -> None:
        sitemap = redact(sitemap)
        log.info("sitemap %s: %s", sitemap, reason)
        self.problems.append(SitemapProblem(sitemap, reason))
