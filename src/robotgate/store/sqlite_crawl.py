"""A named crawl's state in the SQLite store's file (table ``crawl_urls``, schema 7).

Each URL is a row keyed by ``(crawl, key)``, where ``key`` is its resource key,
so a URL is added once however often it is offered; it keeps who pointed at it
(``page``, ``page_public``: its :class:`~robotgate.policy.provenance.Provenance`),
so a resumed run asks it as the run that found it did.  A page's outcome and the
links it gave are written in one transaction: a crash never keeps a page done
without its links, nor its links without their page.  Rows handed out are
marked in flight; a crawl that resumes puts them back in the queue, so a
process killed mid-crawl fetches at most the pages it had in flight again.

The jobs run on the store's worker thread (``run``: :meth:`SQLiteStore._call`),
like every other read and write of the file.

One process works on a named crawl at a time: :meth:`SQLiteCrawlState.open` takes an
OS lock on a byte of the store file itself, chosen by the crawl's name, and holds it
until :meth:`~SQLiteCrawlState.close` (:class:`CrawlLocks`).  The kernel lets go of it
when the process ends, however it ends, so a crawl whose process was killed is free at
once, and one whose process lives is never taken from it (no clock, no process id to
guess from); nothing beside the store is written or trusted.  The holder writes its
process id, host name and start into the crawl's row, which a refused process quotes
(:class:`~robotgate.store.base.CrawlInUse`); both take the lock inside a write
transaction on the store, so the one refused reads what the holder wrote, whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import os
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ..policy.provenance import INPUT, Provenance
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

__all__ = ["CrawlLease", "CrawlLocks", "SQLiteCrawlState", "crawl_names", "drop_crawl"]

_T = TypeVar("_T")
Run = Callable[[Callable[[sqlite3.Connection], _T]], Awaitable[_T]]

_Finished = list[tuple[str, int, int, list[Entry], "asyncio.Future[Added]"]]
_INSERT = ("INSERT OR IGNORE INTO crawl_urls"
           " (crawl, key, url, depth, discovered, page, page_public, page_kept)"
           " VALUES (?, ?, ?, ?, ?, ?, ?, ?)")


def _insert(conn: sqlite3.Connection, name: str, entries: Sequence[Entry]) -> Added:
    before = conn.total_changes
    conn.executemany(_INSERT, [(name, e.key, e.url, e.depth, int(e.discovered),
                                *_pointer_columns(e.provenance)) for e in entries])
    new = conn.total_changes - before
    return Added(new=new, known=len(entries) - new)


def _pointer_columns(provenance: Provenance | None) -> tuple[str | None, int | None, int]:
    """``page``, ``page_public`` and ``page_kept`` of a row (0: a link whose page is not
    known, as schema 6 rows are)."""
    if provenance is None:
        return None, None, 0
    public = provenance.public
    return provenance.page, None if public is None else int(public), 1


def _provenance(key: object, discovered: object, page: object, public: object,
                kept: object, path: str) -> Provenance | None:
    """A row's provenance: None for a link of a schema 6 crawl (its page was not kept).
    A value robotgate never writes there is :class:`StoreError`, never read as input."""
    if isinstance(page, str) and public in (None, 0, 1):
        return Provenance(page, None if public is None else bool(public))
    if page is None and public is None and kept in (0, 1):
        return INPUT if kept or not discovered else None
    raise StoreError(f"robotgate store {path}: crawl_urls row {key!r} holds a provenance"
                     f" robotgate never writes (page {page!r:.80}, page_public {public!r:.20},"
                     f" page_kept {kept!r:.20}); nothing was changed")


def _counts(conn: sqlite3.Connection, name: str) -> CrawlCounts:
    found = dict(conn.execute(
        "SELECT state, count(*) FROM crawl_urls WHERE crawl = ? GROUP BY state", (name,)))
    return CrawlCounts(*(int(found.get(state, 0)) for state in range(5)))


# -- the crawl's owner ------------------------------------------------------------
#
# Each crawl name is a byte of the store file itself, locked far past the bytes SQLite
# locks (1 GiB on): the file's identity, which no removed or planted file beside it,
# nor a hard link in another folder, gets around.  A lock goes with the open file
# description (Linux's OFD locks; a handle on Windows), so the kernel lets go of it
# when its process ends, however it ends.  Closing any descriptor of a file drops the
# POSIX locks its process holds on it (SQLite's among them), so a process opens the
# store file once, keeps that descriptor while any of its stores has the file open,
# and lets a forked child close its copy (the child holds none of the parent's crawls).

#: Where the bytes locked for crawl names start, and how many there are.
_LOCK_BASE = 1 << 41
_LOCK_SPAN = 1 << 40

if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int, offset: int, take: bool) -> bool:
        os.lseek(fd, offset, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK if take else msvcrt.LK_UNLCK, 1)
        except OSError:
            return False
        return True
else:
    import fcntl
    import struct

    # Linux: locks of the open file description.  Elsewhere (macOS, the BSDs) POSIX
    # locks, which the process holds: they are lost if SQLite closes another
    # descriptor of the file meanwhile (a second store of the file in one process).
    _OFD = getattr(fcntl, "F_OFD_SETLK", None)
    _FLOCK = "hhqqi0q"  # struct flock: type, whence, start, len, pid

    def _lock(fd: int, offset: int, take: bool) -> bool:
        kind = fcntl.F_WRLCK if take else fcntl.F_UNLCK
        try:
            if _OFD is not None:
                fcntl.fcntl(fd, _OFD, struct.pack(_FLOCK, kind, os.SEEK_SET, offset, 1, 0))
            else:
                fcntl.lockf(fd, (fcntl.LOCK_EX | fcntl.LOCK_NB) if take else fcntl.LOCK_UN,
                            1, offset, os.SEEK_SET)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise
        return True


def _offset(name: str) -> int:
    """The byte of the store file locked for the crawl ``name``."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()
    return _LOCK_BASE + int.from_bytes(digest[:8], "big") % _LOCK_SPAN


class _StoreFile:
    """This process's open descriptor of one store file (by device and inode), the
    stores using the file, and the crawls taken in it."""

    def __init__(self, key: tuple[int, int]) -> None:
        self.key = key
        self.fd: int | None = None
        self.strays: list[int] = []  # opened on another file (the path replaced meanwhile)
        self.users = 0
        self.held: dict[str, CrawlLease] = {}

    def descriptor(self, path: str) -> int:
        if self.fd is None:
            fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
            stat = os.fstat(fd)
            if (stat.st_dev, stat.st_ino) != self.key:
                self.strays.append(fd)  # closed with the others, never while in use
                raise OSError(errno.ESTALE, "the file at its path was replaced")
            self.fd = fd
        return self.fd

    def close(self) -> None:
        fds = [*self.strays, *([self.fd] if self.fd is not None else [])]
        self.fd, self.strays = None, []
        self.held.clear()
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


_FILES: dict[tuple[int, int], _StoreFile] = {}
_FILES_LOCK = threading.Lock()


def _forget_in_child() -> None:
    """A forked child closes its copies: the crawls stay with its parent, and are free
    once the parent ends (the child holds no POSIX lock to lose)."""
    global _FILES_LOCK
    _FILES_LOCK = threading.Lock()  # another thread may have held it at the fork
    for file in _FILES.values():
        file.close()
    _FILES.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


class CrawlLease:
    """This process's hold on a named crawl: the lock on its byte of the store file,
    until :meth:`release` or the process ends."""

    def __init__(self, file: _StoreFile, name: str) -> None:
        self._file: _StoreFile | None = file
        self.name = name

    def release(self) -> None:
        """Let go (idempotent)."""
        file, self._file = self._file, None
        if file is None:
            return
        with _FILES_LOCK:
            if file.held.get(self.name) is self:
                del file.held[self.name]
                if file.fd is not None:
                    _lock(file.fd, _offset(self.name), False)


class CrawlLocks:
    """A store's named crawls: :meth:`attach` once its connection opened the file,
    :meth:`take` a crawl in a write transaction, :meth:`detach` once the connection is
    closed (its crawls let go of, and the process's descriptor closed with its last
    store of the file)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file: _StoreFile | None = None
        self.leases: set[CrawlLease] = set()

    def attach(self) -> None:
        if self._file is not None:
            return
        try:
            stat = os.stat(self.path)
        except OSError:
            return  # no file to lock (":memory:"): take() says so
        key = (stat.st_dev, stat.st_ino)
        with _FILES_LOCK:
            file = _FILES.get(key)
            if file is None:
                file = _FILES[key] = _StoreFile(key)
            file.users += 1
        self._file = file

    def take(self, conn: sqlite3.Connection, name: str) -> CrawlLease:
        """The lease of ``name`` (in the caller's write transaction on ``conn``, so a
        process refused reads its holder whole), or :class:`CrawlInUse` naming it."""
        self.attach()
        file = self._file
        try:
            if file is None:
                raise OSError(errno.ENOENT, "no store file")
            with _FILES_LOCK:
                if name in file.held:
                    raise _in_use(conn, name, self.path, here=True)
                if not _lock(file.descriptor(self.path), _offset(name), True):
                    raise _in_use(conn, name, self.path, here=False)
                lease = file.held[name] = CrawlLease(file, name)
        except OSError as exc:
            raise StoreError(f"cannot take crawl {name!r} in {self.path}: its store file:"
                             f" {exc.strerror or exc}") from exc
        self.leases.add(lease)
        return lease

    def let_go(self, lease: CrawlLease) -> None:
        self.leases.discard(lease)
        lease.release()

    def detach(self) -> None:
        for lease in list(self.leases):  # crawls whose state was never closed
            self.let_go(lease)
        file, self._file = self._file, None
        if file is None:
            return
        with _FILES_LOCK:
            file.users -= 1
            if file.users <= 0:
                file.close()
                if _FILES.get(file.key) is file:
                    del _FILES[file.key]


def _owner(conn: sqlite3.Connection, name: str) -> tuple[int | None, str | None, float | None]:
    """The holder's process id, host and start, as it wrote them."""
    row = conn.execute("SELECT owner_pid, owner_host, owner_since FROM crawls WHERE name = ?",
                       (name,)).fetchone()
    pid, host, since = row if row is not None else (None, None, None)
    pid = pid if isinstance(pid, int) else None
    host = host if isinstance(host, str) else None
    since = since if isinstance(since, (int, float)) and 0 <= since < 1e11 else None
    return pid, host, since


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's
    return True


def _in_use(conn: sqlite3.Connection, name: str, store: str, *, here: bool) -> CrawlInUse:
    """The refusal, naming the holder as it wrote itself down."""
    pid, host, since = _owner(conn, name)
    if here:
        pid, host = os.getpid(), socket.gethostname()
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
        if pid is not None and host == socket.gethostname() and not _alive(pid):
            who += (", which has ended: a process that shares its open store file (started"
                    " from it without Python's fork) holds the crawl now")
            how = (f"Find it with `fuser -v {store}` and end it; the crawl is free as soon as"
                   f" no such process is left.")
    return CrawlInUse(f"crawl {name!r} in {store} is run by {who}. {how}",
                      name=name, pid=pid, host=host, since=since)


class SQLiteCrawlState(CrawlState):
    """The crawl ``name`` in the file of the store whose job runner is ``run``, at ``path``.

    :meth:`open` takes the crawl's lease from ``locks``, the store's
    (:class:`CrawlInUse` if another process holds it), and :meth:`close` lets it go;
    the store's close lets go of it too.
    """

    def __init__(self, run: Run[Any], name: str, locks: CrawlLocks) -> None:
        self._run = run
        self.name = name
        self._locks = locks
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
            with immediate(conn):  # the holder's details are whole in the crawl's row
                taken = self._lease is None
                if taken:
                    self._lease = self._locks.take(conn, name)
                try:
                    conn.execute("INSERT OR IGNORE INTO crawls (name, created) VALUES (?, ?)",
                                 (name, time.time()))
                    if taken:
                        conn.execute(
                            "UPDATE crawls SET owner_pid = ?, owner_host = ?, owner_since = ?"
                            " WHERE name = ?",
                            (os.getpid(), socket.gethostname(), time.time(), name))
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
        name, path = self.name, self._locks.path

        def job(conn: sqlite3.Connection) -> list[Entry]:
            with immediate(conn):  # a row robotgate never writes: nothing taken
                rows = conn.execute(
                    "SELECT id, key, url, depth, discovered, attempts, page, page_public,"
                    " page_kept FROM crawl_urls WHERE crawl = ? AND state = ?"
                    " ORDER BY id LIMIT ?", (name, QUEUED, most)).fetchall()
                taken = [Entry(str(key), str(url), int(depth), bool(discovered), int(attempts),
                               _provenance(key, discovered, page, public, kept, path))
                         for _, key, url, depth, discovered, attempts, page, public, kept
                         in rows]
                conn.executemany(
                    "UPDATE crawl_urls SET state = ?, attempts = attempts + 1 WHERE id = ?",
                    [(IN_FLIGHT, row[0]) for row in rows])
            return taken

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
            self._locks.let_go(lease)

    async def counts(self) -> CrawlCounts:
        name = self.name
        counts: CrawlCounts = await self._run(lambda conn: _counts(conn, name))
        return counts


def crawl_names(conn: sqlite3.Connection) -> list[str]:
    """The named crawls in the file (a job for the store's thread)."""
    return [str(row[0]) for row in conn.execute("SELECT name FROM crawls ORDER BY name")]


def drop_crawl(conn: sqlite3.Connection, name: str, locks: CrawlLocks) -> bool:
    """Forget the crawl ``name`` and its URLs (a job for the store's thread, whose
    crawls ``locks`` takes); :class:`CrawlInUse` while a process runs it."""
    with immediate(conn):
        lease = locks.take(conn, name)
        try:
            gone = conn.execute("DELETE FROM crawls WHERE name = ?", (name,)).rowcount
            urls = conn.execute("DELETE FROM crawl_urls WHERE crawl = ?", (name,)).rowcount
        finally:
            locks.let_go(lease)
    return bool(gone or urls)
