"""The SQLite store's file (store/sqlite_schema.py): damaged, foreign, newer and older files."""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path

import pytest

from robotgate.store.base import HostState, RobotsEntry, StoreError
from robotgate.store.sqlite import SQLiteStore
from robotgate.store.sqlite_schema import APPLICATION_ID, SCHEMA_VERSION
from tests.store.test_sqlite_store import digest, entry, raw

# -- damaged and foreign files -------------------------------------------------


def assert_names_path_and_remedy(exc: StoreError, path: Path) -> None:
    message = str(exc)
    assert str(path) in message
    assert "fresh=True" in message


@pytest.mark.parametrize("damage", ["garbage", "bad-schema-page"])
async def test_corrupt_file_is_refused_then_moved_aside(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "gate.sqlite3"
    rng = random.Random(damage)
    if damage == "garbage":
        path.write_bytes(bytes(rng.randrange(256) for _ in range(8192)))
    else:
        async with SQLiteStore(path) as store:
            for i in range(20):
                await store.save_robots(entry(f"https://h{i}.example", b"x" * 2000))
        data = bytearray(path.read_bytes())
        # Keep the 100-byte header, wreck the rest of page 1 (the schema).
        data[100:4096] = bytes(rng.randrange(256) for _ in range(3996))
        path.write_bytes(bytes(data))
    before = digest(path)

    store = SQLiteStore(path)
    with pytest.raises(StoreError) as caught:
        await store.open()
    await store.close()
    assert_names_path_and_remedy(caught.value, path)
    assert digest(path) == before

    async with SQLiteStore(path, fresh=True) as fresh:
        assert fresh.moved_aside is not None
        moved = Path(fresh.moved_aside)
        assert moved.name.startswith("gate.sqlite3.corrupt-")
        assert digest(moved) == before
        await fresh.save_robots(entry("https://new.example"))
        assert await fresh.load_robots("https://new.example") is not None


async def test_fresh_moves_a_healthy_file_aside_once(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    async with SQLiteStore(path) as store:
        await store.save_robots(entry("https://old.example"))
    store = SQLiteStore(path, fresh=True)
    assert await store.load_robots("https://old.example") is None
    await store.save_robots(entry("https://new.example"))
    await store.close()
    # Reopening the same object does not move the new file aside again.
    assert await store.load_robots("https://new.example") is not None
    await store.close()
    assert store.moved_aside is not None
    async with SQLiteStore(store.moved_aside) as old:
        assert await old.load_robots("https://old.example") is not None


def _places_db(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
    conn.execute("INSERT INTO moz_places (url) VALUES ('https://example.com/')")


def _other_meta(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta VALUES ('app', 'someone-else'), ('schema_version', '1')")


def _other_app_id(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA application_id = 1234")
    conn.execute("CREATE TABLE robots (origin TEXT)")


@pytest.mark.parametrize("make", [_places_db, _other_meta, _other_app_id])
async def test_foreign_sqlite_file_is_refused(tmp_path: Path, make: object) -> None:
    path = tmp_path / "other.db"
    with raw(path) as conn:
        make(conn)  # type: ignore[operator]
    before = digest(path)
    store = SQLiteStore(path)
    with pytest.raises(StoreError, match="another application") as caught:
        await store.load_robots("https://a.example")
    await store.close()
    assert_names_path_and_remedy(caught.value, path)
    assert digest(path) == before


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    async with SQLiteStore(path) as store:
        await store.save_robots(entry("https://a.example"))
    with raw(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(99),))
    before = digest(path)
    store = SQLiteStore(path)
    with pytest.raises(StoreError, match="newer") as caught:
        await store.open()
    await store.close()
    assert_names_path_and_remedy(caught.value, path)
    assert digest(path) == before


# -- migration ---------------------------------------------------------------

# The version 1 layout as an older robotgate wrote it (no robots.good_at).
V1_LAYOUT = f"""
PRAGMA application_id = {APPLICATION_ID};
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('app', 'robotgate'), ('schema_version', '1');
CREATE TABLE robots (
    origin TEXT PRIMARY KEY, outcome TEXT NOT NULL, fetched_at REAL NOT NULL,
    fresh_until REAL NOT NULL, status INTEGER, body BLOB, content_type TEXT,
    etag TEXT, last_modified TEXT, failures INTEGER NOT NULL DEFAULT 0,
    final_url TEXT, detail TEXT NOT NULL DEFAULT ''
);
CREATE TABLE hosts (
    origin TEXT PRIMARY KEY, visits INTEGER NOT NULL DEFAULT 0, last_visit REAL,
    next_allowed REAL NOT NULL DEFAULT 0, visits_since_check INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE locks (origin TEXT PRIMARY KEY, token TEXT NOT NULL, expires_at REAL NOT NULL);
INSERT INTO robots VALUES
    ('https://good.example', 'ok', 100.0, 200.0, 200, X'6869', 'text/plain',
     '"e"', NULL, 0, NULL, ''),
    ('https://flaky.example', 'ok', 150.0, 250.0, 503, X'00ff', NULL,
     NULL, NULL, 2, NULL, 'kept the last good copy');
INSERT INTO hosts VALUES ('https://good.example', 12, 99.0, 101.0, 4);
"""


#: V1_LAYOUT's host row, as every later version reads it.
OLD_HOST = HostState("https://good.example", 12, 99.0, 101.0, 4)


def old_file(path: Path, version: int) -> None:
    """A file as the robotgate of schema ``version`` (1 to 5) left it, with V1_LAYOUT's rows."""
    with raw(path) as conn:
        conn.executescript(V1_LAYOUT)
        if version >= 2:
            conn.execute("ALTER TABLE robots ADD COLUMN good_at REAL")
        if version >= 3:
            conn.execute("INSERT INTO meta VALUES ('host_key', 'politeness group')")
        if version >= 4:
            conn.execute("ALTER TABLE hosts ADD COLUMN backoff REAL NOT NULL DEFAULT 0")
            conn.execute("ALTER TABLE hosts ADD COLUMN backoff_peak REAL NOT NULL DEFAULT 0")
        if version >= 5:
            conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, pid INTEGER NOT NULL,"
                         " started REAL NOT NULL, heartbeat REAL NOT NULL)")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))


async def test_migrates_version_1_file(tmp_path: Path) -> None:
    assert SCHEMA_VERSION == 7
    path = tmp_path / "old.sqlite3"
    old_file(path, 1)
    async with SQLiteStore(path) as store:
        good = await store.load_robots("https://good.example")
        assert good == RobotsEntry(
            origin="https://good.example",
            outcome="ok",
            fetched_at=100.0,
            fresh_until=200.0,
            status=200,
            body=b"hi",
            content_type="text/plain",
            etag='"e"',
            good_at=100.0,
        )
        flaky = await store.load_robots("https://flaky.example")
        assert flaky is not None
        assert flaky.body == b"\x00\xff" and flaky.failures == 2
        assert flaky.good_at is None  # not known from a version 1 file
        assert await store.load_host("https://good.example") == OLD_HOST
        # The upgraded file takes new entries with every field.
        await store.save_robots(entry("https://new.example"))
    with raw(path) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        assert meta["schema_version"] == str(SCHEMA_VERSION)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.slow
async def test_migrates_version_2_file_keeping_origin_keyed_host_rows(tmp_path: Path) -> None:
    # Version 2 keyed host state by origin; version 3 by politeness group.  The
    # old rows stay: under pace_by="origin" the origin is the group key.
    path = tmp_path / "v2.sqlite3"
    old_file(path, 2)
    async with SQLiteStore(path) as store:
        assert await store.load_host("https://good.example") == OLD_HOST
        # Group keys are opaque strings beside them.
        await store.save_host(HostState("host:good.example", visits=1, next_allowed=5.0))
        await store.pause("ip:127.0.0.1", 7.0)
        await store.flush()
        assert await store.load_host("host:good.example") == HostState(
            "host:good.example", visits=1, next_allowed=5.0
        )
        ip = await store.load_host("ip:127.0.0.1")
        assert ip is not None and ip.next_allowed == 7.0
        good = await store.load_robots("https://good.example")
        assert good is not None and good.body == b"hi"
    with raw(path) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        assert meta["schema_version"] == str(SCHEMA_VERSION)
        assert meta["host_key"] == "politeness group"
        assert conn.execute("SELECT count(*) FROM hosts").fetchone()[0] == 3


@pytest.mark.slow
async def test_migrates_version_3_file_and_keeps_back_off(tmp_path: Path) -> None:
    # Version 3 had no back-off columns: its rows load as never backed off, and a
    # server's back-off, once saved, comes back after a restart.
    path = tmp_path / "v3.sqlite3"
    old_file(path, 3)
    async with SQLiteStore(path) as store:
        assert await store.load_host("https://good.example") == OLD_HOST
        await store.save_host(HostState("host:slow.example", visits=3, backoff=2.5,
                                        backoff_peak=4.0))
    async with SQLiteStore(path) as store:
        slow = await store.load_host("host:slow.example")
        assert slow is not None and (slow.backoff, slow.backoff_peak) == (2.5, 4.0)
        await store.save_host(HostState("host:slow.example", visits=4, backoff=2.0,
                                        backoff_peak=4.0))
        await store.flush()
        slow = await store.load_host("host:slow.example")
        assert slow is not None and (slow.visits, slow.backoff) == (4, 2.0)
    with raw(path) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        assert meta["schema_version"] == str(SCHEMA_VERSION)


@pytest.mark.slow
async def test_migrates_version_4_file_and_records_its_session(tmp_path: Path) -> None:
    # Version 4 had no sessions table: an open store keeps a row there, and a clean
    # close removes it (a row left behind is a process that died with the file open).
    path = tmp_path / "v4.sqlite3"
    old_file(path, 4)
    async with SQLiteStore(path) as store:
        assert await store.load_host("https://good.example") == OLD_HOST
        assert store.unrecorded_until == 0.0  # an upgrade is no crash
        with raw(path) as conn:
            rows = conn.execute("SELECT pid FROM sessions").fetchall()
        assert rows == [(os.getpid(),)]
    with raw(path) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        assert meta["schema_version"] == str(SCHEMA_VERSION) == "7"
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


@pytest.mark.slow
async def test_migrates_version_5_file_and_keeps_named_crawls(tmp_path: Path) -> None:
    # Version 5 had no crawl tables: a named crawl starts in the upgraded file, and
    # its URLs, where they stand, come back when the file is opened again.
    from robotgate.store.crawl_state import DONE, CrawlCounts, Entry

    path = tmp_path / "v5.sqlite3"
    old_file(path, 5)
    async with SQLiteStore(path) as store:
        assert await store.load_host("https://good.example") == OLD_HOST
        state = store.crawl_state("news")
        assert await state.open() == CrawlCounts()
        added = await state.add([Entry("http://a.example/", "http://a.example/"),
                                 Entry("http://b.example/", "HTTP://B.example")])
        assert added.new == 2
        (first,) = await state.take(1)
        await state.finish(first, DONE, [Entry("http://a.example/x", "http://a.example/x", 1,
                                               True)])
        assert len(await state.take(1)) == 1  # in flight when the file is closed
    with raw(path) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        assert meta["schema_version"] == str(SCHEMA_VERSION)
    async with SQLiteStore(path) as store:
        state = store.crawl_state("news")
        assert await state.open() == CrawlCounts(queued=2, done=1)
        assert [e.url for e in await state.take(5)] == ["HTTP://B.example", "http://a.example/x"]
        assert await store.crawl_names() == ["news"]
