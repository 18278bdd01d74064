"""Where ``robotgate fetch`` reads URLs: the command line, files, standard input.

Files and pipes are read on a daemon thread (a slow pipe never blocks the event
loop), a bounded number of lines ahead; the crawl takes them lazily, so a list
of millions never sits in memory.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from .args import UsageError, error, say
from .check import stdin_bytes

if TYPE_CHECKING:
    from ..politeness.sitemaps import Sitemaps
    from ..robots.sitemap import SitemapEntry


@dataclass
class Source:
    """URLs from the command line, or lines of a file or standard input."""

    name: str
    urls: list[str] | None = None
    stream: IO[bytes] | None = None
    owned: bool = False  # opened here, so closed here


def open_sources(args: argparse.Namespace) -> list[Source]:
    """The sources named by the arguments, in order (files opened now: a file that
    cannot be read is a usage error before anything is fetched)."""
    sources: list[Source] = []
    stdin_used = False

    def stdin() -> Source:
        nonlocal stdin_used
        stdin_used = True
        return Source("standard input", stream=stdin_bytes())

    try:
        for arg in args.urls:
            if arg == "-":
                sources.append(stdin())
            elif sources and sources[-1].urls is not None:
                sources[-1].urls.append(arg)
            else:
                sources.append(Source("the command line", urls=[arg]))
        for path in args.input:
            if path == "-":
                sources.append(stdin())
                continue
            try:
                stream = open(path, "rb")  # noqa: SIM115 - closed by close_sources
            except OSError as exc:
                raise UsageError(f"cannot read {path!r}: {exc.strerror or exc}") from None
            sources.append(Source(repr(path), stream=stream, owned=True))
    except BaseException:
        close_sources(sources)
        raise
    if not sources and not getattr(args, "sitemaps", None):
        raise UsageError("no URLs to fetch: give URLs, -i FILE, - to read standard input, "
                         "or --sitemaps ORIGIN")
    if stdin_used and sys.stdin.isatty():
        say("reading URLs from the terminal, one per line; end with Ctrl-D")
    return sources


def close_sources(sources: Sequence[Source]) -> None:
    """Close the files :func:`open_sources` opened."""
    for source in sources:
        if source.owned and source.stream is not None:
            source.stream.close()


class UrlReader:
    """The URLs of all sources in order, as an async iterator; notes a read failure."""

    def __init__(self, sources: Sequence[Source]) -> None:
        self.sources = sources
        self.input_error: str | None = None
        self._readers: list[LineReader] = []

    async def urls(self) -> AsyncIterator[str]:
        """Each non-blank, non-comment line, stripped (invalid ones too: the crawl
        gives them a line of their own)."""
        for source in self.sources:
            try:
                async for line in self._lines(source):
                    url = line.strip()
                    if url and not url.startswith("#"):
                        yield url
            except OSError as exc:
                self.input_error = f"cannot read {source.name}: {exc.strerror or exc}"
                error(self.input_error)
                return

    async def _lines(self, source: Source) -> AsyncIterator[str]:
        if source.urls is not None:
            for url in source.urls:
                yield url
            return
        assert source.stream is not None
        reader = LineReader(source.stream)
        self._readers.append(reader)
        try:
            async for line in reader.lines():
                yield line
        finally:
            reader.stop()

    def stop(self) -> None:
        """Let the reading threads go (the crawl ended early)."""
        for reader in self._readers:
            reader.stop()


#: The longest input line read (a URL is far shorter; browsers stop near 2 MB).
MAX_LINE = 1 << 20


class LineReader:
    """Lines of a stream, read on a daemon thread so a slow pipe never blocks the loop.

    At most ``room`` lines wait in memory; the thread pauses when they are not taken.
    A line longer than :data:`MAX_LINE` ends the stream with an :class:`OSError`.
    """

    def __init__(self, stream: IO[bytes], room: int = 10_000) -> None:
        self._stream = stream
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[bytes | OSError | None] = asyncio.Queue()
        self._room = threading.Semaphore(room)
        self._stop = threading.Event()
        # Daemon: a thread blocked reading a terminal must not keep the process alive.
        self._thread = threading.Thread(target=self._run, name="robotgate-input", daemon=True)
        self._thread.start()

    def _put(self, item: bytes | OSError | None) -> bool:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: we were stopped
            return False
        return True

    def _run(self) -> None:
        number = 0
        try:
            while line := self._stream.readline(MAX_LINE + 1):
                number += 1
                if len(line) > MAX_LINE and line[-1:] != b"\n":
                    # Not a list of URLs (e.g. a binary file): an error, not a hang.
                    raise OSError(f"line {number} is longer than {MAX_LINE:,} bytes")
                while not self._room.acquire(timeout=0.2):
                    if self._stop.is_set():
                        return
                if self._stop.is_set() or not self._put(line):
                    return
        except OSError as exc:
            self._put(exc)
            return
        except Exception as exc:  # e.g. ValueError: the file was closed under us
            # Whatever ends the thread must reach the run, or the run waits forever.
            self._put(OSError(f"{type(exc).__name__}: {exc}"))
            return
        self._put(None)

    async def lines(self) -> AsyncIterator[str]:
        """The stream's lines as text (undecodable bytes replaced)."""
        while True:
            item = await self._queue.get()
            if item is None:
                return
            if isinstance(item, OSError):
                raise item
            self._room.release()
            yield item.decode("utf-8", "replace")

    def stop(self) -> None:
        """Tell the thread to stop at its next line."""
        self._stop.set()


def sitemap_origins(args: argparse.Namespace) -> list[str]:
    """The origins ``--sitemaps`` names (a bad one is a usage error before any fetch)."""
    from ..urls import InvalidURL, split_origin

    origins: list[str] = []
    for text in getattr(args, "sitemaps", None) or ():
        try:
            origin = split_origin(text.strip())[0]
        except InvalidURL as exc:
            raise UsageError(f"bad --sitemaps: {printable(str(exc))} (give an origin such "
                             "as https://example.com/)") from None
        if origin not in origins:
            origins.append(origin)
    return origins


async def with_sitemaps(urls: AsyncIterator[str],
                        walks: Sequence[Sitemaps]) -> AsyncIterator[str | SitemapEntry]:
    """``urls``, then the entries of each sitemap walk; each walk's problems are said
    on stderr as they come (a sitemap not read is no failure of the run)."""
    async for url in urls:
        yield url
    for walk in walks:
        told = 0
        try:
            async for entry in walk:
                told = _tell(walk, told)
                yield entry
        finally:
            _tell(walk, told)
            await walk.aclose()


def _tell(walk: Sitemaps, told: int) -> int:
    problems = walk.problems
    for problem in problems[told:]:
        say(f"sitemap {printable(str(problem))}")
    return len(problems)


def printable(text: str) -> str:
    """``text`` with what a terminal would act on (controls, escapes) shown as ``?``."""
    return "".join(c if c.isprintable() else "?" for c in text)

