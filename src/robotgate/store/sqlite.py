"""A store on disk: one SQLite file that survives restarts and can be shared.

Several processes on one machine may open the same file: it runs in WAL mode
(readers never wait for the writer) with a busy timeout (writers queue up
instead of failing), and every write happens in a short ``IMMEDIATE``
transaction.  All SQLite work runs on one worker thread per store, so the
event loop never waits for the disk.

Robots.txt entries are written through at once; host state (saved on every
page visit) is batched in memory and written in one transaction every
``flush_interval`` seconds or ``flush_batch`` states.  A process killed in the
middle loses at most its unflushed batch; the file stays readable, and the next
store to open it notices (each process keeps a row in ``sessions`` until it
closes the file) and assumes every server was asked at that moment
(:attr:`~robotgate.store.base.Store.unrecorded_until`).

>>> store = SQLiteStore("crawl.sqlite3")  # doctest: +SKIP
>>> gate = RobotGate("MyBot/1.0", store=store)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import operator
import os
import random
import reprlib
import secrets
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from typing import Any, TypeVar, get_args, get_type_hints

from .base import Crawls, Fleet, HostState, RobotsEntry, Store, StoreError
from .batching import HostBatcher
from .sqlite_crawl import CrawlLocks, SQLiteCrawlState, crawl_names, drop_crawl
from .sqlite_schema import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    check_one_name,
    check_sound,
    create_new,
    create_owner_only,
    fresh_hint,
    immediate,
    move_aside,
    prepare,
)

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SQLiteStore"]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

# Columns in dataclass order, so rows map straight onto the dataclasses.
_ROBOTS_COLUMNS = ", ".join(f.name for f in fields(RobotsEntry))
_ROBOTS_MARKS = ", ".join("?" for _ in fields(RobotsEntry))
_HOSTS_COLUMNS = ", ".join(f.name for f in fields(HostState))
_HOSTS_MARKS = ", ".join("?" for _ in fields(HostState))
# Field values in column order: a plain getter, as dataclasses.astuple deep-copies
# every field, which cost more than the write itself (on the event loop's thread).
_robots_row: Callable[[RobotsEntry], tuple[Any, ...]] = operator.attrgetter(
    *(f.name for f in fields(RobotsEntry))
)
_host_row: Callable[[HostState], tuple[Any, ...]] = operator.attrgetter(
    *(f.name for f in fields(HostState))
)
# Host states per INSERT when flushing: every statement step hands the GIL to the
# worker thread and back, which costs the busy event loop far more than the write,
# so a batch goes in a few multi-row statements, not one step per row.  Within
# the oldest SQLite limit of 999 parameters per statement.
_FLUSH_ROWS = 999 // len(fields(HostState))


@functools.lru_cache(maxsize=8)
def _upsert_hosts(rows: int) -> str:
    values = ", ".join([f"({_HOSTS_MARKS})"] * rows)
    return (
        f"INSERT INTO hosts ({_HOSTS_COLUMNS}) VALUES {values}"
        " ON CONFLICT (origin) DO UPDATE SET"
        " visits = excluded.visits,"
        " last_visit = excluded.last_visit,"
        " next_allowed = max(hosts.next_allowed, excluded.next_allowed),"
        " visits_since_check = excluded.visits_since_check,"
        " backoff = excluded.backoff,"
        " backoff_peak = excluded.backoff_peak"
    )

# wait_robots polls with a backoff between these bounds (seconds).
_POLL_MIN = 0.05
_POLL_MAX = 0.5

# A session row whose process seems alive (its pid reused by another) but that has not
# written for this long counts as ended: wrongly so costs each server one interval.
_SESSION_SILENCE = 3600.0
# The sessions of this process's open stores: a row with this pid and another id was left
# by an earlier process that had the same pid (a container's pid 1, restarted).
_OUR_SESSIONS: set[str] = set()


def _pid_alive(pid: int) -> bool:
    if os.name == "nt":
        return True  # os.kill would end the process there: the silence decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0
    return True


def _session_ended(session: str, pid: object, heartbeat: object, now: float) -> bool:
    """Whether the process of a ``sessions`` row ended without closing the file."""
    if session in _OUR_SESSIONS:
        return False
    if not isinstance(pid, int) or not isinstance(heartbeat, (int, float)):
        return True  # damage: as ended, which costs an interval per server at most
    if pid == os.getpid():
        return True
    return not _pid_alive(pid) or not now - _SESSION_SILENCE < heartbeat


def _lock_owner_gone(conn: sqlite3.Connection, token: object, now: float) -> bool:
    """Whether the fetch lock ``token`` (``<session>.<random>``) belongs to an ended process."""
    session, dot, _ = str(token).partition(".")
    if not dot:
        return False  # a token of another kind: its expiry decides
    row = conn.execute("SELECT pid, heartbeat FROM sessions WHERE id = ?", (session,)).fetchone()
    return row is None or _session_ended(session, row[0], row[1], now)


# SQLite's own wait for a lock cannot be interrupted: it waits in slices, and _run_job goes
# on up to the busy timeout, or stops soon once close() has begun (not to sit out the rest).
_BUSY_SLICE, _CLOSE_PATIENCE = 0.1, 0.25  # close() lets jobs wait on, for one slice at least


def _busy(exc: sqlite3.OperationalError) -> bool:  # SQLITE_BUSY (5) or an extended code
    code = getattr(exc, "sqlite_errorcode", None)  # from Python 3.11
    return str(exc).startswith("database is locked") if code is None else code & 0xFF == 5


# -- reading rows: any value may sit in any column (text in a REAL column, written by another
# tool, say); rows are checked first, so that damage raises StoreError, not a later TypeError.
_SQL_NAMES = {str: "text", bytes: "a blob", int: "an integer", float: "a real"}


def _columns(cls: type) -> tuple[tuple[str, tuple[type, ...], bool], ...]:
    kinds = [(name, get_args(t) or (t,)) for name, t in get_type_hints(cls).items()]
    # (name, allowed types, is a time): float fields are Unix times, and ints will do.
    return tuple((n, (*k, int) if float in k else k, float in k) for n, k in kinds)


# The body may be NULL even on an "ok" entry: the robots cache copes.
_TYPES = {"robots": _columns(RobotsEntry), "hosts": _columns(HostState)}


def _checked(row: tuple[Any, ...], table: str, path: str) -> tuple[Any, ...]:
    """``row``; raises StoreError naming file, table, key and column if it is not as written."""
    for value, (name, kinds, is_time) in zip(row, _TYPES[table], strict=True):
        # An infinite time would pause a host or keep an entry for ever.
        if type(value) in kinds and (not is_time or value is None or math.isfinite(value)):
            continue
        shown = "NULL" if value is None else f"{_SQL_NAMES.get(type(value))} {reprlib.repr(value)}"
        wanted = "a finite time" if is_time else _SQL_NAMES[kinds[0]]
        raise StoreError(
            f"{path} has a damaged {table} row for {row[0]!r}: {name} holds {shown}, not {wanted}"
            f"{' or NULL' if type(None) in kinds else ''}. Nothing was changed. Delete that row to"
            f" have it rebuilt, or open the store with SQLiteStore({path!r}, fresh=True), which"
            f" moves the file aside."
        )
    return row


class SQLiteStore(Store, Fleet, Crawls):
    """Robots.txt entries and host state in an SQLite file.

    ``path``: the database file (created if missing).
    ``flush_interval``: seconds a saved host state may wait in memory.
    ``flush_batch``: this many pending host states are written at once.
    ``fresh``: move an existing file at ``path`` aside (to
    ``path + ".corrupt-<timestamp>"``, with its ``-wal``/``-shm`` files) and
    start an empty store.  This applies to a healthy file too; nothing is
    ever deleted.  The new name is kept in :attr:`moved_aside`.

    A file that is not SQLite, belongs to another application, or has a newer
    schema than this code knows raises :class:`StoreError` naming the path.
    Older robotgate files are upgraded in place, in one transaction.

    Across processes: robots entries are last-writer-wins; a host's
    ``next_allowed`` only moves forward (a pause written by another process is
    never undone by a batched write); the other host counters are
    last-writer-wins.  Pacing stays local (its fleet hands out no :meth:`slots`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        flush_interval: float = 1.0,
        flush_batch: int = 500,
        fresh: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        # Host states saved but not yet written (and being written), newest per key.
        self._hosts = HostBatcher(
            self._write_hosts, interval=flush_interval, batch=flush_batch, label=self.path
        )
        self.flush_interval = flush_interval
        self.flush_batch = flush_batch
        #: Where ``fresh=True`` moved the old file, once it has.
        self.moved_aside: str | None = None
        self._fresh = fresh
        self._busy_timeout = 30.0
        self._close_by = math.inf  # while close() runs: when jobs stop waiting for locks
        # This store's row in the sessions table, from its first use to close().
        self._session = secrets.token_hex(8)
        # The named crawls this store's states run (let go of at close at the latest).
        self._crawl_locks = CrawlLocks(self.path)
        # Touched only on the worker thread.
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # -- lifecycle ---------------------------------------------------------

    async def open(self) -> None:
        """Open (creating or upgrading) the file now rather than on first use."""
        try:
            await self._call(lambda conn: None)
        except BaseException:
            # Leave no worker thread behind a file that cannot be used.
            with contextlib.suppress(Exception):
                await self.close()
            raise

    async def close(self) -> None:
        """Write pending host states, close the file and stop the worker thread.

        Idempotent; the store may be used again afterwards (it reopens).  Jobs waiting for
        another connection's lock (the last flush too) soon give up, with :class:`StoreError`.
        """
        close_by = self._close_by = time.monotonic() + _CLOSE_PATIENCE
        written = False
        try:
            await self._hosts.close()
            written = True
        finally:
            executor, self._executor = self._executor, None
            try:
                if executor is not None:
                    await asyncio.get_running_loop().run_in_executor(
                        executor, self._close_sync, written)
            finally:
                if executor is not None:
                    executor.shutdown(wait=True)  # the worker is idle now: returns at once
                if self._close_by == close_by:  # no other close() begun since
                    self._close_by = math.inf

    # -- robots entries (write-through) --------------------------------------

    async def load_robots(self, origin: str) -> RobotsEntry | None:
        def job(conn: sqlite3.Connection) -> RobotsEntry | None:
            row = conn.execute(
                f"SELECT {_ROBOTS_COLUMNS} FROM robots WHERE origin = ?", (origin,)
            ).fetchone()
            return None if row is None else RobotsEntry(*_checked(row, "robots", self.path))

        return await self._call(job)

    async def save_robots(self, entry: RobotsEntry) -> None:
        # Snapshot now: the caller may change the entry while the job waits.
        values = _robots_row(entry)

        def job(conn: sqlite3.Connection) -> None:
            # A single statement in autocommit mode is its own transaction.
            conn.execute(
                f"INSERT OR REPLACE INTO robots ({_ROBOTS_COLUMNS}) VALUES ({_ROBOTS_MARKS})",
                values,
            )

        await self._call(job)

    # -- host state (batched) ------------------------------------------------

    async def load_host(self, origin: str) -> HostState | None:
        """The host state stored under ``origin`` (a politeness-group key, opaque here)."""
        pending = self._hosts.get(origin)
        if pending is not None:
            return pending

        def job(conn: sqlite3.Connection) -> HostState | None:
            row = conn.execute(
                f"SELECT {_HOSTS_COLUMNS} FROM hosts WHERE origin = ?", (origin,)
            ).fetchone()
            return None if row is None else HostState(*_checked(row, "hosts", self.path))

        return await self._call(job)

    async def save_host(self, state: HostState) -> None:
        await self._hosts.save(state)

    async def flush(self) -> None:
        """Write all pending host states in one transaction."""
        await self._hosts.flush()

    async def _write_hosts(self, states: list[HostState]) -> None:
        rows = [_host_row(state) for state in states]

        def job(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                for start in range(0, len(rows), _FLUSH_ROWS):
                    chunk = rows[start : start + _FLUSH_ROWS]
                    conn.execute(_upsert_hosts(len(chunk)), [v for row in chunk for v in row])
                self._heartbeat(conn)

        await self._call(job)

    # -- the fleet: processes sharing the file --------------------------------

    def fleet(self) -> Fleet:
        return self

    def crawls(self) -> Crawls:
        return self

    async def lock_fetch(self, origin: str, ttl: float) -> str | None:
        """As :meth:`Fleet.lock_fetch`; a lock whose process has ended (killed during the
        fetch) is taken over at once rather than after ``ttl``."""
        token = f"{self._session}.{secrets.token_hex(12)}"

        def job(conn: sqlite3.Connection) -> str | None:
            now = time.time()
            with immediate(conn):
                row = conn.execute(
                    "SELECT expires_at, token FROM locks WHERE origin = ?", (origin,)
                ).fetchone()
                # Damage counts as expired: an expiry that is no number, or past any ttl.
                expires = None if row is None else row[0]
                if (isinstance(expires, (float, int)) and now < expires <= now + max(ttl, 3600)
                        and not _lock_owner_gone(conn, row[1], now)):
                    return None
                conn.execute(
                    "INSERT OR REPLACE INTO locks (origin, token, expires_at) VALUES (?, ?, ?)",
                    (origin, token, now + ttl),
                )
            return token

        return await self._call(job)

    async def unlock_fetch(self, origin: str, token: str) -> None:
        def job(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM locks WHERE origin = ? AND token = ?", (origin, token))

        await self._call(job)

    async def renew_fetch(self, origin: str, token: str, ttl: float) -> bool:
        def job(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "UPDATE locks SET expires_at = ? WHERE origin = ? AND token = ?",
                (time.time() + ttl, origin, token),
            )
            return cursor.rowcount == 1

        return await self._call(job)

    async def wait_robots(self, origin: str, timeout: float) -> RobotsEntry | None:
        """Wait for another worker to store ``origin``'s entry.

        Returns the entry as soon as a fresh one is stored (or one fetched
        after this call began, however short its freshness), and ``None`` when
        none appears within ``timeout`` seconds.
        """
        started = time.time()
        deadline = time.monotonic() + max(0.0, timeout)
        delay = _POLL_MIN
        while True:
            entry = await self.load_robots(origin)
            if entry is not None and (entry.fetched_at >= started or entry.is_fresh(time.time())):
                return entry
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            # Jitter so that waiting workers do not poll in lockstep.
            await asyncio.sleep(min(remaining, delay * random.uniform(0.5, 1.0)))
            delay = min(delay * 2, _POLL_MAX)

    async def pause(self, origin: str, until: float) -> None:
        """Hold ``origin`` until ``until`` for every process using this file."""
        self._hosts.pause(origin, until)

        def job(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO hosts (origin, next_allowed) VALUES (?, ?)"
                " ON CONFLICT (origin) DO UPDATE SET"
                " next_allowed = max(hosts.next_allowed, excluded.next_allowed)",
                (origin, until),
            )

        await self._call(job)

    # -- named crawls (store/sqlite_crawl.py) --------------------------------

    def crawl_state(self, name: str) -> SQLiteCrawlState:
        """The crawl ``name``: one process runs it at a time (its ``open`` raises
        :class:`~robotgate.store.base.CrawlInUse` while another does)."""
        return SQLiteCrawlState(self._call, name, self._crawl_locks)

    async def crawl_names(self) -> list[str]:
        return await self._call(crawl_names)

    async def drop_crawl(self, name: str) -> bool:
        """Forget the crawl ``name``; :class:`~robotgate.store.base.CrawlInUse` while a
        process runs it."""
        return await self._call(functools.partial(drop_crawl, name=name, locks=self._crawl_locks))

    # -- the worker thread ---------------------------------------------------

    def _submit(self, fn: Callable[[], _T]) -> asyncio.Future[_T]:
        if self._executor is None:
            # One thread: it owns the connection and runs jobs in order, so a
            # load queued after a flush sees what the flush wrote.
            self._executor = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="robotgate-sqlite"
            )
        return asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def _call(self, job: Callable[[sqlite3.Connection], _T]) -> _T:
        return await self._submit(functools.partial(self._run_job, job))

    def _run_job(self, job: Callable[[sqlite3.Connection], _T]) -> _T:
        deadline = time.monotonic() + self._busy_timeout
        while True:
            try:
                return job(self._connect(deadline))
            except sqlite3.OperationalError as exc:
                # Each job is one transaction or a read: a busy one did nothing, and runs again.
                if _busy(exc) and time.monotonic() < min(deadline, self._close_by):
                    continue
                closing = self._close_by < math.inf and _busy(exc)
                why = " (closed while waiting for another connection's lock)" if closing else ""
                raise StoreError(f"robotgate store {self.path}: {exc}{why}") from exc
            except sqlite3.DatabaseError as exc:
                raise StoreError(
                    f"robotgate store {self.path} is damaged ({exc}). {fresh_hint(self.path)}"
                ) from exc

    def _close_sync(self, written: bool) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                if written:  # a clean end: nothing of this process's is left unwritten
                    conn.execute("DELETE FROM sessions WHERE id = ?", (self._session,))
            except sqlite3.Error:
                pass  # the row stays: the next opener holds each server one interval
            finally:
                _OUR_SESSIONS.discard(self._session)
                conn.close()
        self._crawl_locks.detach()  # after the connection: see CrawlLocks

    def _heartbeat(self, conn: sqlite3.Connection) -> None:
        """Renew this store's sessions row (in the caller's transaction)."""
        conn.execute(
            "INSERT INTO sessions (id, pid, started, heartbeat) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET heartbeat = excluded.heartbeat",
            (self._session, os.getpid(), time.time(), time.time()),
        )

    def _begin_session(self, conn: sqlite3.Connection, emptied: bool) -> None:
        """Find the processes that ended without closing the file, and start ours.

        Their last requests may be missing from ``hosts`` (batched, unwritten), and
        a truncated (0-byte) file lost them all: every server may have been asked
        until now.  That moment is kept in ``meta`` (``unrecorded_until``) for the
        processes that open the file after this one.
        """
        now = time.time()
        with immediate(conn):
            ended = [
                (row[0], row[1], row[3])
                for row in conn.execute("SELECT id, pid, started, heartbeat FROM sessions")
                if _session_ended(str(row[0]), row[1], row[3], now)
            ]
            conn.executemany("DELETE FROM sessions WHERE id = ?", [(e[0],) for e in ended])
            row = conn.execute(
                "SELECT value FROM meta WHERE key = 'unrecorded_until'"
            ).fetchone()
            try:
                stored = float(row[0]) if row is not None else 0.0
            except (TypeError, ValueError):
                stored = now  # damage: the worst is assumed
            unrecorded = now if ended or emptied else stored
            if not math.isfinite(unrecorded) or unrecorded > now:
                unrecorded = now
            if unrecorded != stored:
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('unrecorded_until', ?)",
                    (repr(unrecorded),),
                )
            _OUR_SESSIONS.add(self._session)
            self._heartbeat(conn)
        self.unrecorded_until = unrecorded
        for _, pid, heartbeat in ended:
            last = f"{now - heartbeat:.1f} s ago" if isinstance(heartbeat, (int, float)) else "?"
            _log.warning(
                "robotgate: process %s ended without closing %s (last write %s): its last"
                " requests may be unrecorded, so each server waits its interval from now",
                pid, self.path, last,
            )

    def _connect(self, deadline: float) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        if self._fresh:
            self.moved_aside = move_aside(self.path) or self.moved_aside
            self._fresh = False
        # A store this call made is whole when it appears: no 0-byte moment for another
        # process to take for a truncated store.
        created = create_new(self.path)
        check_one_name(self.path)  # before SQLite writes a log beside a second name
        emptied = not created and _empty_file(self.path)
        if not created and self.path not in ("", ":memory:") and not os.path.lexists(self.path):
            # No store linked into place (no links here): made in place, owner only.
            with contextlib.suppress(OSError):  # sqlite3 says why it cannot
                create_owner_only(self.path)
        try:
            conn = sqlite3.connect(self.path, timeout=_BUSY_SLICE, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open robotgate store {self.path}: {exc}") from exc
        try:
            prepare(conn, self.path, lambda: min(deadline, self._close_by))
            if not (created or emptied):  # damage a run before left unnoticed is told now
                check_sound(conn, self.path)
            self._begin_session(conn, emptied)
        except BaseException as exc:
            conn.close()
            if isinstance(exc, sqlite3.OperationalError):
                if _busy(exc):
                    raise  # another process creates or upgrades the file: _run_job waits
                raise StoreError(f"cannot open robotgate store {self.path}: {exc}") from exc
            if isinstance(exc, sqlite3.DatabaseError):
                raise StoreError(
                    f"{self.path} is not a readable robotgate store ({exc})."
                    f" {fresh_hint(self.path)}"
                ) from exc
            raise
        self._conn = conn
        self._crawl_locks.attach()
        if emptied:
            _log.warning(
                "robotgate: %s was an empty (0-byte) file: a new store was made in it. If it"
                " held a store, that was truncated and its pacing lost: each server waits its"
                " interval from now", self.path,
            )
        return conn


def _empty_file(path: str) -> bool:
    """Whether ``path`` is an existing 0-byte file with no write-ahead log to recover.

    sqlite3 leaves such a file when it creates one, and so does a truncated store."""
    try:
        if os.path.getsize(path) != 0:
            return False
    except OSError:
        return False  # none yet (sqlite3 creates it), or not a plain path
    try:
        return os.path.getsize(path + "-wal") == 0
    except OSError:
        return True
