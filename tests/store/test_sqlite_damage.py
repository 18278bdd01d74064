"""SQLiteStore: rows that robotgate did not write as they are (another tool, damage).

The file itself is sound, so it opens; a damaged row raises StoreError from the
call that reads it, naming the file, table, key and column, instead of a
TypeError somewhere in the gate.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import time
from pathlib import Path

import pytest

from robotgate import RobotGate
from robotgate.store.base import HostState, Outcome, RobotsEntry, StoreError
from robotgate.store.crawl_state import Entry
from robotgate.store.sqlite import SQLiteStore

ORIGIN = "http://127.0.0.1:9"  # never asked: the damage is met before any request
HOST = "host:127.0.0.1"


def damage(path: Path, sql: str) -> None:
    """Change the file as another tool would."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(sql)
        # Fold the WAL into the file, so that its digest shows any later change.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def seeded(path: Path) -> None:
    now = time.time()
    async with SQLiteStore(path) as store:
        await store.save_robots(RobotsEntry(
            ORIGIN, Outcome.OK, now, now + 3600, 200, b"User-agent: *\nDisallow: /p/\n",
            content_type="text/plain", etag='"e"', good_at=now))
        await store.save_host(HostState(HOST, visits=3, last_visit=now, next_allowed=now))


ROBOTS_DAMAGE = [
    ("body", "CAST(body AS TEXT)"),
    ("body", "42"),
    ("fetched_at", "'yesterday'"),
    ("fresh_until", "'tomorrow'"),
    ("fresh_until", "X'0102'"),
    ("fresh_until", "9e999"),  # SQLite's infinity
    ("good_at", "-9e999"),
    ("status", "'two hundred'"),
    ("content_type", "X'ff00'"),
    ("etag", "X'ff00'"),
    ("failures", "'many'"),
    ("failures", "1.5"),
    ("detail", "X'00'"),
]
HOSTS_DAMAGE = [
    ("visits", "'lots'"),
    ("visits", "X'00'"),
    ("last_visit", "'x'"),
    ("next_allowed", "'later'"),
    ("next_allowed", "9e999"),
    ("visits_since_check", "'x'"),
]


DAMAGE = [("robots", *d) for d in ROBOTS_DAMAGE] + [("hosts", *d) for d in HOSTS_DAMAGE]


@pytest.mark.parametrize(("table", "column", "value"), DAMAGE)
async def test_a_damaged_row_raises_store_error(
    tmp_path: Path, table: str, column: str, value: str
) -> None:
    path = tmp_path / "gate.sqlite3"
    await seeded(path)
    damage(path, f"UPDATE {table} SET {column} = {value}")
    before = digest(path)
    key = ORIGIN if table == "robots" else HOST
    async with SQLiteStore(path) as store:
        load = store.load_robots if table == "robots" else store.load_host
        with pytest.raises(StoreError) as caught:
            await load(key)
        message = str(caught.value)
        assert str(path) in message and repr(key) in message
        assert f"{table} row" in message and f" {column} holds " in message
        if table == "robots":
            with pytest.raises(StoreError):
                await store.wait_robots(ORIGIN, 1)
    assert digest(path) == before


@pytest.mark.parametrize(
    ("table", "sql"),
    [
        ("robots", "UPDATE robots SET fresh_until = 'tomorrow'"),
        ("robots", "UPDATE robots SET body = CAST(body AS TEXT)"),
        ("hosts", "UPDATE hosts SET next_allowed = 'later'"),
    ],
)
async def test_gate_raises_store_error_for_a_damaged_row(
    tmp_path: Path, table: str, sql: str
) -> None:
    path = tmp_path / "gate.sqlite3"
    await seeded(path)
    damage(path, sql)
    async with RobotGate("TestBot/1.0", store=SQLiteStore(path)) as gate:
        with pytest.raises(StoreError, match=f"damaged {table} row"):
            await gate.decide(f"{ORIGIN}/p/x")


async def test_unusual_but_sound_values_load(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    await seeded(path)
    # Left to the layers above: an "ok" entry without a body, times far ahead,
    # a negative count; integers in REAL columns are times like any other.
    damage(path, "UPDATE robots SET body = NULL, fresh_until = 1e308, fetched_at = 5")
    damage(path, "UPDATE hosts SET next_allowed = 1e12, visits_since_check = -5, last_visit = NULL")
    async with SQLiteStore(path) as store:
        loaded = await store.load_robots(ORIGIN)
        assert loaded is not None
        assert loaded.body is None and loaded.fresh_until == 1e308 and loaded.fetched_at == 5
        host = await store.load_host(HOST)
        assert host == HostState(HOST, visits=3, next_allowed=1e12, visits_since_check=-5)


@pytest.mark.slow
@pytest.mark.parametrize("expires", ["'zzz'", "X'00'", "9e999", "1e12"])
async def test_unreadable_fetch_lock_counts_as_expired(tmp_path: Path, expires: str) -> None:
    path = tmp_path / "gate.sqlite3"
    await seeded(path)
    damage(path, f"INSERT INTO locks VALUES ('{ORIGIN}', 'a-dead-token', {expires})")
    async with SQLiteStore(path) as store:
        token = await store.lock_fetch(ORIGIN, 60)
        assert token is not None
        # Replaced by a sound lock, which holds.
        assert await store.lock_fetch(ORIGIN, 60) is None
        await store.unlock_fetch(ORIGIN, token)
        assert await store.lock_fetch(ORIGIN, 60) is not None


# -- a write-ahead log damaged under a live store ------------------------------------


def damage_wal(path: Path) -> int:
    """Overwrite the b-tree page header of the pages the live ``-wal`` file holds past
    every table's first page (here, pages of the crawl's URLs: nothing reads them when
    a store opens), as a stray write would; how many frames."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        (roots,) = conn.execute("SELECT max(rootpage) FROM sqlite_master").fetchone()
    wal = Path(f"{path}-wal")
    data = bytearray(wal.read_bytes())
    page_size = int.from_bytes(data[8:12], "big")
    frames = 0
    for at in range(32, len(data) - 24 - page_size + 1, 24 + page_size):
        if int.from_bytes(data[at:at + 4], "big") > roots:
            data[at + 24:at + 24 + 16] = b"\xa5" * 16
            frames += 1
    wal.write_bytes(bytes(data))
    return frames


async def test_a_wal_damaged_under_a_live_crawl_is_said_at_the_next_open(
        tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    store = SQLiteStore(path)
    state = store.crawl_state("c")
    await state.open()
    await state.add([Entry(f"http://h.example/{n}", f"http://h.example/{n}")
                     for n in range(2000)])
    assert damage_wal(path) > 0
    # The run goes on as far as it can, and ends: its last connection folds the log,
    # damage and all, into the file.
    with contextlib.suppress(StoreError):
        for page in await state.take(50):
            await state.finish(page, 2, ())
    with contextlib.suppress(StoreError):
        await state.close()
        await store.close()
    assert not Path(f"{path}-wal").exists()
    with pytest.raises(StoreError) as caught:
        async with SQLiteStore(path):
            pytest.fail("a damaged file opened without a word")
    message = str(caught.value)
    assert f"{path} is damaged" in message and "quick_check" in message
    assert "fresh=True" in message and ".recover" in message
