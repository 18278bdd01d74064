"""The SQLite store's file: how a robotgate file is told apart, created and upgraded.

A file is ours when its ``application_id`` and ``meta`` table say so; anything
else is refused untouched.  Version 1 is created from scratch and every later
version is reached through the migrations, in one ``IMMEDIATE`` transaction
(:func:`immediate`, which the store's writes use too).  A damaged file is
moved aside only when asked (:func:`move_aside`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import Any

from .base import StoreError

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "check_one_name", "check_sound", "create_new",
           "fresh_hint", "immediate", "move_aside", "prepare"]

_log = logging.getLogger("robotgate.store.sqlite")

#: ``PRAGMA application_id`` of robotgate files: "RBTG" in ASCII.
APPLICATION_ID = 0x52425447
_APP_NAME = "robotgate"


# -- schema -----------------------------------------------------------------
#
# Version 1 is created from scratch; every later version is reached through
# the migrations below, so new files and upgraded files take the same path.


def _create_v1(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('app', ?), ('schema_version', '1')",
        (_APP_NAME,),
    )
    # One row per origin: the raw body is interpreted per user agent on load.
    conn.execute(
        """CREATE TABLE robots (
            origin TEXT PRIMARY KEY,
            outcome TEXT NOT NULL,
            fetched_at REAL NOT NULL,
            fresh_until REAL NOT NULL,
            status INTEGER,
            body BLOB,
            content_type TEXT,
            etag TEXT,
            last_modified TEXT,
            failures INTEGER NOT NULL DEFAULT 0,
            final_url TEXT,
            detail TEXT NOT NULL DEFAULT ''
        )"""
    )
    conn.execute(
        """CREATE TABLE hosts (
            origin TEXT PRIMARY KEY,
            visits INTEGER NOT NULL DEFAULT 0,
            last_visit REAL,
            next_allowed REAL NOT NULL DEFAULT 0,
            visits_since_check INTEGER NOT NULL DEFAULT 0
        )"""
    )
    conn.execute(
        """CREATE TABLE locks (
            origin TEXT PRIMARY KEY,
            token TEXT NOT NULL,
            expires_at REAL NOT NULL
        )"""
    )


def _migrate_1_to_2(conn: sqlite3.Connection) -> None:
    """Version 2 records when the stored body was last known good."""
    conn.execute("ALTER TABLE robots ADD COLUMN good_at REAL")
    # A clean "ok" fetch was good when it was fetched; otherwise we do not know.
    conn.execute("UPDATE robots SET good_at = fetched_at WHERE outcome = 'ok' AND failures = 0")


def _migrate_2_to_3(conn: sqlite3.Connection) -> None:
    """Version 3 keys host state by politeness group (``host:example.com``), not origin.

    The rows written before are kept as they are: they are keyed by origin,
    which is the group key under ``pace_by="origin"``, so they still apply
    there; under the other ``pace_by`` values nothing reads them again (they
    are only pacing hints, and small).  The ``hosts.origin`` column keeps its
    name, holding the group key.  Robots.txt entries stay keyed by origin.
    """
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('host_key', 'politeness group')"
    )


def _migrate_3_to_4(conn: sqlite3.Connection) -> None:
    """Version 4 keeps each server's adaptive back-off (none for the rows before)."""
    conn.execute("ALTER TABLE hosts ADD COLUMN backoff REAL NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE hosts ADD COLUMN backoff_peak REAL NOT NULL DEFAULT 0")


def _migrate_4_to_5(conn: sqlite3.Connection) -> None:
    """Version 5 records the processes using the file (a row each, removed on a clean
    close), so that one that died with host state unwritten is noticed."""
    conn.execute(
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            pid INTEGER NOT NULL,
            started REAL NOT NULL,
            heartbeat REAL NOT NULL
        )"""
    )


def _migrate_5_to_6(conn: sqlite3.Connection) -> None:
    """Version 6 keeps named crawls: each URL by its resource key, where it stands
    (0 queued, 1 in flight, 2 done, 3 skipped, 4 failed), queued in ``id`` order."""
    conn.execute(
        """CREATE TABLE crawls (
            name TEXT PRIMARY KEY,
            created REAL NOT NULL
        )"""
    )
    conn.execute(
        """CREATE TABLE crawl_urls (
            id INTEGER PRIMARY KEY,
            crawl TEXT NOT NULL,
            key TEXT NOT NULL,
            url TEXT NOT NULL,
            state INTEGER NOT NULL DEFAULT 0,
            depth INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            discovered INTEGER NOT NULL DEFAULT 0,
            UNIQUE (crawl, key)
        )"""
    )
    conn.execute("CREATE INDEX crawl_urls_by_state ON crawl_urls (crawl, state, id)")


def _migrate_6_to_7(conn: sqlite3.Connection) -> None:
    """Version 7 keeps who pointed at each URL of a named crawl (its provenance): the
    page (NULL: the caller's input), whether that page was public (NULL: looked up when
    the URL is asked), and ``page_kept`` (0 on the rows before: a link whose page no
    one kept, see docs/crawl.md); and each crawl's holder (process id, host, since),
    which a process refused the crawl quotes."""
    conn.execute("ALTER TABLE crawl_urls ADD COLUMN page TEXT")
    conn.execute("ALTER TABLE crawl_urls ADD COLUMN page_public INTEGER")
    conn.execute("ALTER TABLE crawl_urls ADD COLUMN page_kept INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE crawls ADD COLUMN owner_pid INTEGER")
    conn.execute("ALTER TABLE crawls ADD COLUMN owner_host TEXT")
    conn.execute("ALTER TABLE crawls ADD COLUMN owner_since REAL")


#: ``_MIGRATIONS[i]`` upgrades a file from version ``i + 1`` to ``i + 2``.
_MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migrate_1_to_2,
    _migrate_2_to_3,
    _migrate_3_to_4,
    _migrate_4_to_5,
    _migrate_5_to_6,
    _migrate_6_to_7,
)

#: The schema version this code writes.
SCHEMA_VERSION = 1 + len(_MIGRATIONS)


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction that takes the write lock up front.

    ``BEGIN IMMEDIATE`` waits (busy timeout) for other writers; a deferred
    transaction that upgrades from read to write can fail at once instead.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        # Inside: a failed COMMIT is rolled back too, so the job can be retried.
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def fresh_hint(path: str) -> str:
    return (
        f"Nothing was changed. To start afresh, open it with SQLiteStore({path!r}, fresh=True),"
        f" which moves the old file aside to {path}.corrupt-<timestamp>."
    )


# -- opening a file ---------------------------------------------------------


def prepare(conn: sqlite3.Connection, path: str, deadline: Callable[[], float]) -> None:
    """Check the file is ours, switch to WAL, create or upgrade the schema."""
    # Identify before writing anything: a foreign file must stay untouched.
    version = _inspect(conn, path)
    _enable_wal(conn, path, deadline)
    # Safe against a killed process in WAL mode; only power loss may drop
    # the last commits.
    conn.execute("PRAGMA synchronous = NORMAL")
    if version == SCHEMA_VERSION:
        return
    with immediate(conn):
        # Another process may have created or upgraded it meanwhile.
        found = _inspect(conn, path)
        _build(conn, found)
    if 0 < found < SCHEMA_VERSION:
        _log.info(
            "robotgate: upgraded %s from schema %d to %d", path, found, SCHEMA_VERSION
        )


def check_sound(conn: sqlite3.Connection, path: str) -> None:
    """Raise :class:`StoreError` when the file's pages are damaged (a stray write to the
    live write-ahead log ends up in the file without SQLite noticing, until a query
    reads that page): ``PRAGMA quick_check`` reads every page once (about a quarter
    of a second per million crawl URLs)."""
    found = [str(row[0]) for row in conn.execute("PRAGMA quick_check(5)")]
    if found == ["ok"]:
        return
    problems = "; ".join(
        line for text in found for line in text.splitlines() if not line.startswith("***"))
    raise StoreError(
        f"{path} is damaged: SQLite's quick_check finds {problems[:600]}."
        f" {fresh_hint(path)} To save what is readable first:"
        f" sqlite3 {path} .recover | sqlite3 {path}.recovered"
    )


def _build(conn: sqlite3.Connection, found: int) -> None:
    """Bring a file of version ``found`` (0: empty) to this version, in the caller's
    transaction."""
    if found == 0:
        _create_v1(conn)
    for step in _MIGRATIONS[max(found, 1) - 1 :]:
        step(conn)
    conn.execute(
        "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
    )


def create_new(path: str) -> bool:
    """Make a new store at ``path`` if nothing is there; whether this call made it.

    The store is built beside ``path`` under a temporary name and linked into place
    (a link never replaces a file), so a second process opening ``path`` at the same
    moment finds either nothing or a whole store: never the 0-byte file that
    ``sqlite3`` leaves while it creates one, which looks like a truncated store.
    False also where the directory cannot take the temporary file or links none:
    ``sqlite3`` then creates the file in place, as before.
    """
    if path in ("", ":memory:") or os.path.lexists(path):
        return False
    folder, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(folder, f".{name}.new-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        create_owner_only(temporary)
        conn = sqlite3.connect(temporary, isolation_level=None)
        try:
            # Kept in the file's header: every opener finds it in WAL mode already.
            conn.execute("PRAGMA journal_mode = WAL")
            with immediate(conn):
                _build(conn, 0)
        finally:
            conn.close()  # the last connection: the log goes into the file, and away
        os.link(temporary, path)
    except (OSError, sqlite3.Error):
        return False  # there already (another process linked its own first), or no links
    finally:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.remove(temporary + suffix)
    return True


def create_owner_only(path: str) -> bool:
    """Make an empty file at ``path``, readable and writable by its owner only (0600),
    for SQLite to build a store in; whether this call made it (False: one is there).

    A store holds the URLs it was given as given (a password, a token in a query), so
    no other user may read it; SQLite gives the write-ahead log and its index (``-wal``,
    ``-shm``) the mode of the file they belong to.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o600)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def check_one_name(path: str) -> None:
    """Raise :class:`StoreError` when the file at ``path`` has other names (hard links).

    SQLite keeps a store's write-ahead log and its index beside the name the file is
    opened by, so processes that open one file by two names do not see each other's
    writes and can damage it; a store is opened by one name.  :func:`create_new` links
    a new store into place and removes its temporary name at once: that moment passes.
    """
    links = 1
    for _ in range(_LINKED_CHECKS):
        try:
            links = os.stat(path).st_nlink
        except OSError:
            return  # none yet: sqlite3 makes it
        if links <= 1:
            return
        time.sleep(0.05)
    raise StoreError(
        f"{path} has {links} names (hard links to one file). SQLite keeps a store's"
        " write-ahead log beside the name it is opened by, so processes opening it by"
        " different names lose each other's writes and can damage it. Nothing was changed."
        f" Open it by one name: remove the other links (`find / -samefile {path}` lists"
        " them), or copy the file instead of linking it."
    )


#: Looks at a file's names before it counts as linked (0.05 s apart).
_LINKED_CHECKS = 20


def _inspect(conn: sqlite3.Connection, path: str) -> int:
    """The file's schema version, 0 for an empty file; raises if it is not ours."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]
    if app_id == 0 and not tables:
        return 0
    meta: dict[str, Any] = {}
    if "meta" in tables:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    # Our meta table with application_id still 0: another process is creating
    # the file at this moment (seen when two open a new file at once).
    if app_id not in (APPLICATION_ID, 0) or meta.get("app") != _APP_NAME:
        shown = ", ".join(sorted(tables)[:8]) or "none"
        raise StoreError(
            f"{path} is an SQLite database of another application"
            f" (application_id {app_id}, tables: {shown}), not a robotgate store."
            f" {fresh_hint(path)}"
        )
    try:
        version = int(meta["schema_version"])
    except (KeyError, ValueError, TypeError):
        raise StoreError(
            f"{path} is a robotgate store without a valid schema version."
            f" {fresh_hint(path)}"
        ) from None
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has robotgate schema version {version}, newer than this"
            f" robotgate understands ({SCHEMA_VERSION}). Upgrade robotgate to use it."
            f" {fresh_hint(path)}"
        )
    if version < 1:
        raise StoreError(
            f"{path} has an invalid robotgate schema version {version}."
            f" {fresh_hint(path)}"
        )
    return version


def _enable_wal(conn: sqlite3.Connection, path: str, deadline: Callable[[], float]) -> None:
    # Switching to WAL needs a moment alone with the file, which another
    # process opening it at the same time may deny: retry, bounded.
    while True:
        try:
            mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
        except sqlite3.OperationalError:
            if time.monotonic() > deadline():
                raise
            mode = ""
        if mode in ("wal", "memory"):
            return
        if time.monotonic() > deadline():
            raise StoreError(f"cannot switch {path} to WAL mode (still {mode!r})")
        time.sleep(0.05)


def move_aside(path: str) -> str | None:
    """Move the file at ``path`` (and its -wal/-shm files) aside; the new name, if moved."""
    if not os.path.exists(path):
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = f"{path}.corrupt-{stamp}"
    n = 0
    while any(os.path.exists(target + s) for s in ("", "-wal", "-shm")):
        n += 1
        target = f"{path}.corrupt-{stamp}-{n}"
    # The -wal file may hold committed data: keep it beside its database.
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.replace(path + suffix, target + suffix)
    _log.warning("robotgate: moved %s aside to %s and started afresh", path, target)
    return target
