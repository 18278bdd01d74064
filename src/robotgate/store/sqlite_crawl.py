"""A named crawl's state in the SQLite store's file (table ``crawl_urls``, schema 6).

Each URL is a row keyed by ``(crawl, key)``, where ``key`` is its resource key,
so a URL is added once however often it is offered.  A page's outcome and the
links it gave are written in one transaction: a crash never keeps a page done
without its links, nor its links without their page.  Rows handed out are
marked in flight; a crawl that resumes puts them back in the queue, so a
process killed mid-crawl fetches at most the pages it had in flight again.

The jobs run on the store's worker thread (``run``: :meth:`SQLiteStore._call`),
like every other read and write of the file.

One process works on a named crawl at a time: :meth:`SQLiteCrawlState.open` takes an
OS lock (``flock``) on a file beside the store, named after the crawl, and holds it
until :meth:`~SQLiteCrawlState.close`.  The kernel lets go of it when the process
ends, however it ends, so a crawl whose process was killed is free at once, and one
whose process lives is never taken from it (no clock, no process id to guess from).
The holder writes its process id, host name and start into the lock file, which a
refused process quotes (:class:`~robotgate.store.base.CrawlInUse`).  Both take the
lock inside a write transaction on the store, so the one refused reads what the
holder wrote, whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import socket
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from .base import CrawlInUse, StoreError
from .crawl_state import (
    IN_FLIGHT,
    OUTCOMES,
    QUEUED,
    Added,
    CrawlCounts,
    CrawlState,
    Entry,
)
from .sqlite_schema import immediate

__all__ = ["CrawlLease", "SQLiteCrawlState", "crawl_names", "drop_crawl", "lock_path"]

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


# -- the crawl's owner ------------------------------------------------------------

if sys.platform == "win32":
    import msvcrt

    _UNLINK = False  # an open file cannot be removed there
    _LOCKED_BYTE = 1 << 30  # past the holder's details, which stay readable

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, _LOCKED_BYTE, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        finally:
            os.lseek(fd, 0, os.SEEK_SET)
        return True
else:
    import fcntl

    _UNLINK = True

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # per open file, not per process
        except BlockingIOError:
            return False
        return True


def lock_path(store: str, name: str) -> str:
    """The lock file of the crawl ``name`` in the store file ``store``: beside it, named
    after it (its real path: a link to the file shares the lock) and the crawl."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:40]
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{os.path.realpath(store)}-crawl-{readable}-{digest}.lock"


class CrawlLease:
    """This process's hold on a named crawl: an OS lock on its lock file, until
    :meth:`release` or the process ends."""

    def __init__(self, fd: int, path: str) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def take(cls, path: str, name: str, store: str) -> CrawlLease:
        """The lease, or :class:`CrawlInUse` naming its holder."""
        while True:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise StoreError(f"cannot take crawl {name!r} in {store}: its lock file"
                                 f" {path}: {exc.strerror or exc}") from exc
            try:
                if not _try_lock(fd):
                    raise _in_use(name, store, path)
                # The last holder removes the file as it lets go: a lock on the file
                # it removed guards nothing, so lock the one at the path now.
                if _UNLINK and not _same_file(fd, path):
                    os.close(fd)
                    continue
                os.ftruncate(fd, 0)
                os.write(fd, json.dumps({
                    "crawl": name, "store": store, "pid": os.getpid(),
                    "host": socket.gethostname(), "since": time.time()}).encode())
            except BaseException:
                with contextlib.suppress(OSError):
                    os.close(fd)
                raise
            return cls(fd, path)

    def release(self) -> None:
        """Let go (idempotent): the file is removed first, then the lock."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if _UNLINK:
                with contextlib.suppress(OSError):
                    os.remove(self.path)
        finally:
            os.close(fd)


def _same_file(fd: int, path: str) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _in_use(name: str, store: str, path: str) -> CrawlInUse:
    """The refusal, with what the holder wrote in the lock file."""
    try:
        with open(path, "rb") as file:
            holder = json.loads(file.read(4096))
    except (OSError, ValueError):
        holder = None
    if not isinstance(holder, dict):
        holder = {}
    pid, host, since = holder.get("pid"), holder.get("host"), holder.get("since")
    pid = pid if isinstance(pid, int) else None
    host = host if isinstance(host, str) else None
    since = since if isinstance(since, (int, float)) and 0 <= since < 1e11 else None
    if pid == os.getpid() and host == socket.gethostname():
        who = (f"this process (pid {pid}) already: another state of the crawl is open"
               f" on a store of this file")
        how = "Close that state first (gate.crawl closes its state as it returns)."
    else:
        at = "" if since is None else time.strftime(
            " since %Y-%m-%d %H:%M:%S UTC", time.gmtime(since))
        ago = "" if since is None else f" ({max(0.0, time.time() - since):.0f} s ago)"
        who = (f"another process: pid {pid if pid is not None else '?'} on host"
               f" {host if host is not None else '?'}{at}{ago}")
        end = f"kill {pid}" if pid is not None else "end it"
        how = (f"One process runs a named crawl at a time. To take it over, end that process"
               f" ({end} on {host or 'its host'}; however it ends, even killed, it lets go of"
               f" the crawl at once) and start the crawl again: the pages it had in flight"
               f" are queued again. Or wait for it to finish.")
    return CrawlInUse(
        f"crawl {name!r} in {store} is run by {who}. {how} (Its lock file: {path})",
        name=name, pid=pid, host=host, since=since)


class SQLiteCrawlState(CrawlState):
    """The crawl ``name`` in the file of the store whose job runner is ``run``, at ``path``.

    :meth:`open` takes the crawl's lease (:class:`CrawlInUse` if another process holds
    it) and :meth:`close` lets it go; ``leases`` holds the store's leases, which its
    close lets go of too.
    """

    def __init__(self, run: Run[Any], name: str, path: str, leases: set[CrawlLease]) -> None:
        self._run = run
        self.name = name
        self._path = path
        self._leases = leases
        self._lease: CrawlLease | None = None
        self._pending = 0
        # Finished pages waiting for the next write: key, attempts, outcome, links, answer.
        self._finished: _Finished = []
        self._writer: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        return self._pending

    async def open(self) -> CrawlCounts:
        """Take the crawl (:class:`CrawlInUse` when another process runs it) and put
        back in the queue what an ended process left in flight."""
        name = self.name

        def job(conn: sqlite3.Connection) -> CrawlCounts:
            with immediate(conn):  # the holder's details are whole in its lock file
                taken = self._lease is None
                if taken:
                    self._lease = CrawlLease.take(lock_path(self._path, name), name, self._path)
                    self._leases.add(self._lease)
                try:
                    conn.execute("INSERT OR IGNORE INTO crawls (name, created) VALUES (?, ?)",
                                 (name, time.time()))
                    # Held by no live process: what is in flight was left by one that
                    # ended (killed, or stopped), and goes back to the queue.
                    conn.execute(
                        "UPDATE crawl_urls SET state = ? WHERE crawl = ? AND state = ?",
                        (QUEUED, name, IN_FLIGHT))
                    return _counts(conn, name)
                except BaseException:
                    if taken:
                        self._let_go()
                    raise

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
        """The run is over: pending writes land, then the crawl is let go."""
        try:
            if self._writer is not None:
                await asyncio.gather(self._writer, return_exceptions=True)
        finally:
            self._let_go()

    def _let_go(self) -> None:
        lease, self._lease = self._lease, None
        if lease is not None:
            self._leases.discard(lease)
            lease.release()

    async def counts(self) -> CrawlCounts:
        name = self.name
        counts: CrawlCounts = await self._run(lambda conn: _counts(conn, name))
        return counts


def crawl_names(conn: sqlite3.Connection) -> list[str]:
    """The named crawls in the file (a job for the store's thread)."""
    return [str(row[0]) for row in conn.execute("SELECT name FROM crawls ORDER BY name")]


def drop_crawl(conn: sqlite3.Connection, name: str, path: str) -> bool:
    """Forget the crawl ``name`` and its URLs (a job for the store's thread, whose file is
    at ``path``); :class:`CrawlInUse` while a process runs it."""
    with immediate(conn):
        lease = CrawlLease.take(lock_path(path, name), name, path)
        try:
            gone = conn.execute("DELETE FROM crawls WHERE name = ?", (name,)).rowcount
            urls = conn.execute("DELETE FROM crawl_urls WHERE crawl = ?", (name,)).rowcount
        finally:
            lease.release()
    return bool(gone or urls)
