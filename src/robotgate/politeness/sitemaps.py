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
the time (single flight; the entries are shared, at most 50,000 a file); a
:class:`Sitemaps` walk is one caller's async iterator over an origin's entries.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from ..errors import Disallowed, GateClosed
from ..robots.sitemap import Scope, SitemapEntry, SitemapFile, SitemapParser
from ..urls import InvalidURL, redact

__all__ = ["SitemapBody", "SitemapProblem", "SitemapReader", "SitemapTransport", "Sitemaps"]

log = logging.getLogger("robotgate.sitemaps")

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


class SitemapReader:
    """Reads sitemaps through ``transport``, each once for all the walks running.

    ``named(origin)`` gives the ``Sitemap`` URLs of the origin's robots.txt.  A
    sitemap read is shared by the walks reading it and kept only while a walk running
    still has it to read (a walk asking for it later reads it again); ``keep_entries``
    is no longer used.
    """

    def __init__(self, transport: SitemapTransport,
                 named: Callable[[str], Awaitable[Sequence[str]]], *,
                 timeout: float = TIMEOUT, keep_entries: int = 200_000) -> None:
        self.transport = transport
        self.named = named
        self.timeout = timeout
        self.keep_entries = keep_entries
        self._files: dict[tuple[str, str | None, str | None], asyncio.Task[SitemapFile]] = {}
        self._kept = 0  # entries and children of the files read and kept
        self._walks: weakref.WeakSet[Sitemaps] = weakref.WeakSet()

    @property
    def held_entries(self) -> int:
        """Entries (and an index's sitemaps) of the files read that the reader holds for
        walks still to read them; a file every walk has read is no longer held."""
        return self._kept

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

    def file(self, url: str, vouched_by: str | None,
             pointed_by: str | None = None) -> Awaitable[SitemapFile]:
        """The sitemap at ``url`` read (or being read) for every walk that asks;
        ``pointed_by``: the robots.txt or index that named it (None: the caller's input)."""
        key = (url, vouched_by, pointed_by)
        task = self._files.get(key)
        if task is None:
            task = asyncio.ensure_future(self._read(url, vouched_by, pointed_by))
            self._files[key] = task
            task.add_done_callback(self._read_done)
        # One walk cancelled while waiting leaves the read to the others.
        return asyncio.shield(task)

    def _read_done(self, task: asyncio.Task[SitemapFile]) -> None:
        if task.cancelled() or task.exception() is not None:
            # GateClosed, or a cancel: each waiter hears it; the next ask reads again.
            for key, kept in list(self._files.items()):
                if kept is task:
                    del self._files[key]
            return
        file = task.result()
        self._kept += len(file.entries) + len(file.children)
        for key, kept in list(self._files.items()):
            if kept is task:
                self.release(key)

    def release(self, key: tuple[str, str | None, str | None]) -> None:
        """Forget the sitemap read for ``key`` (URL, vouched by, pointed by) unless a walk
        running still has it to read: its entries live in the walks reading them alone."""
        task = self._files.get(key)
        if task is None or not task.done():
            return
        url, vouched_by, pointed_by = key
        for walk in self._walks:
            if walk.will_read(url, vouched_by, pointed_by):
                return
        del self._files[key]
        self._kept -= _size(task)

    def _forget_read(self) -> None:
        for key, task in list(self._files.items()):
            if task.done():
                del self._files[key]
                self._kept -= _size(task)

    async def _read(self, url: str, vouched_by: str | None,
                    pointed_by: str | None) -> SitemapFile:
        """Fetch and parse one sitemap: always a file, whatever happens, unless the
        gate closes or the read is cancelled."""
        try:
            scope = Scope.of(url, vouched_by)
        except InvalidURL as exc:
            return _failed(url, f"not read: {exc}")
        parser = SitemapParser(url, scope)
        why: str | None = None
        try:
            async with self.transport.open(url, self.timeout, pointed_by) as body:
                status = body.status
                if not 200 <= status < 300:
                    return _failed(url, f"answered {status}: not read")
                while True:
                    chunk = await body.read(_CHUNK)
                    if not chunk or not parser.feed(chunk):
                        break  # the end, or the parser wants no more
        except Disallowed as no:
            return _failed(url, f"not fetched: {no.decision.reason}")
        except (asyncio.CancelledError, GateClosed):
            raise
        except asyncio.TimeoutError:
            why = f"not read whole within {self.timeout:g}s"
        except Exception as exc:  # the site's failure, or the client's: still an answer
            why = f"the fetch failed ({type(exc).__name__}: {exc})"
        file = parser.close(cut=why is not None)
        if why is not None:
            file = dataclasses.replace(file, problems=(why, *file.problems))
        for problem in file.problems:
            log.info("sitemap %s: %s", redact(url), problem)
        return file


#: A sitemap a walk will read: URL, depth, the origin vouching for it, the page pointing to it.
_Pending = tuple[str, int, str | None, str | None]


def _size(task: asyncio.Task[SitemapFile]) -> int:
    if task.cancelled() or task.exception() is not None:
        return 0
    file = task.result()
    return len(file.entries) + len(file.children)


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
            pending = self._pending
            if pending is None:
                self._pending = await self._first()
                continue
            if not pending:
                await self.aclose()
                raise StopAsyncIteration
            url, depth, vouched_by, pointed_by = pending.popleft()
            self._entries = ()  # the file read last is let go before the next is read
            file = await self._reader.file(url, vouched_by, pointed_by)
            self._reader.release((url, vouched_by, pointed_by))
            self._take(file, depth, vouched_by)

    def will_read(self, url: str, vouched_by: str | None, pointed_by: str | None) -> bool:
        """Is this sitemap still to be read by this walk?"""
        return any(p[0] == url and p[2] == vouched_by and p[3] == pointed_by
                   for p in self._pending or ())

    async def aclose(self) -> None:
        """End the walk (``async for`` ending early may leave it to the garbage collector)."""
        if not self._ended:
            self._ended = True
            self._entries = ()
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
            self._entries, self._next = file.entries, 0
            return
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
