"""A named crawl's state in the SQLite store's file (table ``crawl_urls``, schema 6).

Each URL is a row keyed by ``(crawl, key)``, where ``key`` is its resource key,
so a URL is added once however often it is offered.  A page's outcome and the
links it gave are written in one transaction: a crash never keeps a page done
without its links, nor its links without their page.  Rows handed out are
marked in flight; a crawl that resumes puts them back in the queue, so a
process killed mid-crawl fetches at most the pages it had in flight again.

The jobs run on the store's worker thread (``run``: :meth:`SQLiteStore._call`),
like every other read and write of the file.  One process works on a named
crawl at a time.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ..politeness.crawl_state import (
    IN_FLIGHT,
    OUTCOMES,
    QUEUED,
    Added,
    CrawlCounts,
    CrawlState,
    Entry,
)
from .sqlite_schema import immediate

__all__ = ["SQLiteCrawlState", "crawl_names", "drop_crawl"]

_T = TypeVar("_T")
Run = Callable[[Callable[[sqlite3.Connection], _T]], Awaitable[_T]]

_Finished = list[tuple[str, int, int, list[Entry], "asyncio.Future[Added]"]]
_INSERT = ("INSERT OR IGNORE INTO crawl_urls (crawl, key, url, depth, discovered)"
           " VALUES (?, ?, ?, ?, ?)")


def _insert(conn: sqlite3.Connection, name: str, entries: Sequence[Entry]) -> Added:
    before = conn.total_changes
    conn.executemany(_INSERT, [(name, e.key, e.url, e.depth, int(e.discovered))
                               for e in entries])
    new = conn.total_changes - before
    return Added(new=new, known=len(entries) - new)


def _counts(conn: sqlite3.Connection, name: str) -> CrawlCounts:
    found = dict(conn.execute(
        "SELECT state, count(*) FROM crawl_urls WHERE crawl = ? GROUP BY state", (name,)))
    return CrawlCounts(*(int(found.get(state, 0)) for state in range(5)))


class SQLiteCrawlState(CrawlState):
    """The crawl ``name`` in the file of the store whose job runner is ``run``."""

    def __init__(self, run: Run[Any], name: str) -> None:
        self._run = run
        self.name = name
        self._pending = 0
        # Finished pages waiting for the next write: key, attempts, outcome, links, answer.
        self._finished: _Finished = []
        self._writer: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        return self._pending

    async def open(self) -> CrawlCounts:
        name = self.name

        def job(conn: sqlite3.Connection) -> CrawlCounts:
            with immediate(conn):
                conn.execute("INSERT OR IGNORE INTO crawls (name, created) VALUES (?, ?)",
                             (name, time.time()))
                # In flight when the last run ended (killed, or stopped): queued again.
                conn.execute("UPDATE crawl_urls SET state = ? WHERE crawl = ? AND state = ?",
                             (QUEUED, name, IN_FLIGHT))
                return _counts(conn, name)

        counts: CrawlCounts = await self._run(job)
        self._pending = counts.queued
        return counts

    async def add(self, entries: Sequence[Entry]) -> Added:
        name = self.name
        rows = list(entries)

        def job(conn: sqlite3.Connection) -> Added:
            with immediate(conn):
                return _insert(conn, name, rows)

        added: Added = await self._run(job)
        self._pending += added.new
        return added

    async def add_links(self, entries: Sequence[Entry]) -> Added:
        return await self.add(entries)

    async def take(self, most: int) -> list[Entry]:
        name = self.name

        def job(conn: sqlite3.Connection) -> list[Entry]:
            with immediate(conn):
                rows = conn.execute(
                    "SELECT id, key, url, depth, discovered, attempts FROM crawl_urls"
                    " WHERE crawl = ? AND state = ? ORDER BY id LIMIT ?",
                    (name, QUEUED, most)).fetchall()
                conn.executemany(
                    "UPDATE crawl_urls SET state = ?, attempts = attempts + 1 WHERE id = ?",
                    [(IN_FLIGHT, row[0]) for row in rows])
            return [Entry(str(key), str(url), int(depth), bool(discovered), int(attempts))
                    for _, key, url, depth, discovered, attempts in rows]

        taken: list[Entry] = await self._run(job)
        self._pending -= len(taken)
        return taken

    async def finish(self, entry: Entry, outcome: int, links: Sequence[Entry]) -> Added:
        """Pages that finish while a write is under way go in the next one together
        (each with its links): one transaction for many pages, none split."""
        if outcome not in OUTCOMES:
            raise ValueError(f"not an outcome: {outcome!r}")
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Added] = loop.create_future()
        self._finished.append((entry.key, entry.attempts, outcome, list(links), done))
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write_finished())
        return await asyncio.shield(done)

    async def _write_finished(self) -> None:
        name = self.name
        while self._finished:
            batch, self._finished = self._finished, []

            def job(conn: sqlite3.Connection, batch: _Finished = batch) -> list[Added]:
                out = []
                with immediate(conn):  # each page and its links, or none of them
                    for key, attempts, outcome, links, _ in batch:
                        out.append(_insert(conn, name, links) if links else Added())
                        conn.execute(
                            "UPDATE crawl_urls SET state = ?, attempts = ?"
                            " WHERE crawl = ? AND key = ?", (outcome, attempts, name, key))
                return out

            try:
                results: list[Added] = await self._run(job)
            except Exception as exc:
                for *_, done in batch:
                    if not done.done():
                        done.set_exception(exc)
                continue
            except BaseException:  # cancelled: nobody is left to tell
                for *_, done in batch:
                    done.cancel()
                raise
            for added, (*_, done) in zip(results, batch, strict=True):
                self._pending += added.new
                if not done.done():
                    done.set_result(added)

    async def release(self, entries: Sequence[Entry]) -> None:
        if not entries:
            return
        name = self.name
        keys = [(QUEUED, name, e.key, IN_FLIGHT) for e in entries]

        def job(conn: sqlite3.Connection) -> int:
            with immediate(conn):
                before = conn.total_changes
                conn.executemany(
                    "UPDATE crawl_urls SET state = ? WHERE crawl = ? AND key = ? AND state = ?",
                    keys)
                return conn.total_changes - before

        back: int = await self._run(job)
        self._pending += back

    async def close(self) -> None:
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)

    async def counts(self) -> CrawlCounts:
        name = self.name
        counts: CrawlCounts = await self._run(lambda conn: _counts(conn, name))
        return counts


def crawl_names(conn: sqlite3.Connection) -> list[str]:
    """The named crawls in the file (a job for the store's thread)."""
    return [str(row[0]) for row in conn.execute("SELECT name FROM crawls ORDER BY name")]


def drop_crawl(conn: sqlite3.Connection, name: str) -> bool:
    """Forget the crawl ``name`` and its URLs (a job for the store's thread)."""
    with immediate(conn):
        gone = conn.execute("DELETE FROM crawls WHERE name = ?", (name,)).rowcount
        urls = conn.execute("DELETE FROM crawl_urls WHERE crawl = ?", (name,)).rowcount
    return bool(gone or urls)
