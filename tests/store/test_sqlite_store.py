"""SQLiteStore specifics: restarts, WAL, crashes, processes.

The storage interface itself is covered for every backend in
``test_store_contract.py``; damaged, foreign and older files in
``test_sqlite_schema.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from robotgate import GateClosed, RobotGate
from robotgate.store.base import HostState, StoreError
from robotgate.store.sqlite import APPLICATION_ID, SCHEMA_VERSION, SQLiteStore
from testbed.children import child_env
from tests.support import CHILDREN
from tests.support.entries import ok_entry as entry

SRC = Path(__file__).resolve().parents[2] / "src"

async def spawn_writer(
    path: Path, tag: str, batches: int, per_batch: int
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILDREN / "sqlite_writer.py"),
        str(path),
        tag,
        str(batches),
        str(per_batch),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(),
    )


@contextlib.contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection, as another tool would open the file."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- persistence and settings -----------------------------------------------


async def test_survives_restart(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    saved = entry("https://a.example", b"\x00binary\xff")
    async with SQLiteStore(path, flush_interval=60) as store:
        await store.save_robots(saved)
        await store.save_host(HostState("https://a.example", visits=3, last_visit=5.0))
        # No flush: close must write the batch.
    async with SQLiteStore(path) as store:
        assert await store.load_robots("https://a.example") == saved
        assert await store.load_host("https://a.example") == HostState(
            "https://a.example", visits=3, last_visit=5.0
        )


async def test_reopens_after_close(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "gate.sqlite3")
    await store.save_robots(entry("https://a.example"))
    await store.close()
    assert await store.load_robots("https://a.example") is not None
    await store.close()


async def test_opens_lazily(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    store = SQLiteStore(path)
    assert not path.exists()
    assert await store.load_robots("https://a.example") is None
    assert path.exists()
    await store.close()


async def test_file_layout(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    async with SQLiteStore(path) as store:
        await store.save_robots(entry("https://a.example"))
        await store.save_robots(entry("https://b.example"))
        with raw(path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
            meta = dict(conn.execute("SELECT key, value FROM meta"))
            assert meta == {
                "app": "robotgate",
                "schema_version": str(SCHEMA_VERSION),
                "host_key": "politeness group",
            }
            # One row per origin, whatever robots read it.
            assert conn.execute("SELECT count(*) FROM robots").fetchone()[0] == 2
            assert conn.execute("SELECT typeof(body) FROM robots").fetchone()[0] == "blob"


def test_rejects_bad_settings(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SQLiteStore(tmp_path / "x", flush_batch=0)
    with pytest.raises(ValueError):
        SQLiteStore(tmp_path / "x", flush_interval=-1)


async def test_full_batch_is_written_at_once(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    async with SQLiteStore(path, flush_interval=60, flush_batch=3) as store:
        for i in range(3):
            await store.save_host(HostState(f"https://h{i}.example", visits=i))
        with raw(path) as conn:
            assert conn.execute("SELECT count(*) FROM hosts").fetchone()[0] == 3


async def test_close_leaves_no_tasks(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "gate.sqlite3", flush_interval=60)
    await store.save_host(HostState("https://a.example", visits=1))
    await store.close()
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_next_allowed_never_moves_back(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    async with SQLiteStore(path) as pauser, SQLiteStore(path) as visitor:
        until = time.time() + 300
        await pauser.pause("https://h.example", until)
        # The visitor did not see the pause and writes an earlier slot.
        await visitor.save_host(HostState("https://h.example", visits=1, next_allowed=until - 200))
        await visitor.flush()
        state = await pauser.load_host("https://h.example")
        assert state == HostState("https://h.example", visits=1, next_allowed=until)


@pytest.mark.slow
async def test_event_loop_keeps_running_during_writes(tmp_path: Path) -> None:
    ticks: list[float] = []
    writing = True

    async def ticker() -> None:
        while writing:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.005)

    # A full collection of the test process's own heap (the whole suite's objects:
    # 0.7 s over 5 million) is no stall of the store's: set that heap aside.
    gc.collect()
    gc.freeze()
    task = asyncio.create_task(ticker())
    store = SQLiteStore(tmp_path / "gate.sqlite3", flush_batch=100)
    loop_cpu, all_cpu = time.thread_time(), time.process_time()
    try:
        for i in range(1000):
            origin = f"https://h{i}.example"
            await store.save_robots(entry(origin, origin.encode() * 50))
            await store.save_host(HostState(origin, visits=i))
        await store.flush()
        loop_cpu, all_cpu = time.thread_time() - loop_cpu, time.process_time() - all_cpu
    finally:
        writing = False
        await task
        await store.close()
        gc.unfreeze()
    assert len(ticks) >= 5, "the ticker never ran while writing"
    # The writes run in the store's thread, not the loop's: the loop's thread spent well
    # under the process's CPU (0.38 of it measured; all of it if SQLite ran on the loop).
    # CPU time, not the ticker's gaps, which a loaded machine stretches however it writes.
    assert loop_cpu < 0.7 * all_cpu, (loop_cpu, all_cpu)


# -- another connection holding the write lock -------------------------------------


@contextlib.contextmanager
def write_locked(path: Path) -> Iterator[sqlite3.Connection]:
    """Hold the file's write lock, as another process in a long transaction would."""
    with raw(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")


def worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("robotgate-sqlite")]


@pytest.mark.slow
async def test_close_does_not_wait_out_another_connections_lock(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    store = SQLiteStore(path)
    await store.save_robots(entry("https://kept.example"))
    with write_locked(path):
        # Waits for the lock (up to the 30 s busy timeout), on the worker thread.
        waiting = asyncio.ensure_future(store.lock_fetch("https://new.example", 60))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        started = time.monotonic()
        await store.close()
        # It took 29 s, the rest of SQLite's busy timeout: "did not hang".
        assert time.monotonic() - started < 5
        with pytest.raises(StoreError, match="closed while waiting"):
            await waiting
        assert worker_threads() == []
    # What was committed stays, and the store reopens.
    assert await store.load_robots("https://kept.example") is not None
    assert await store.lock_fetch("https://new.example", 60) is not None
    await store.close()


@pytest.mark.slow
async def test_close_keeps_host_states_it_could_not_write(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    store = SQLiteStore(path, flush_interval=60)
    await store.open()
    await store.save_host(HostState("host:a.example", visits=7))
    with write_locked(path):
        started = time.monotonic()
        with pytest.raises(StoreError, match="closed while waiting"):
            await store.close()
        assert time.monotonic() - started < 5
        assert worker_threads() == []
    # Still pending: the next close writes it.
    await store.close()
    async with SQLiteStore(path) as again:
        assert await again.load_host("host:a.example") == HostState("host:a.example", visits=7)


@pytest.mark.slow
async def test_gate_close_ends_a_robots_lookup_waiting_for_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    gate = RobotGate("TestBot/1.0", store=SQLiteStore(path))
    await gate.open()
    with write_locked(path):
        # Stuck in lock_fetch before any request: the port need not answer.
        asking = asyncio.ensure_future(gate.decide("http://127.0.0.1:9/page"))
        await asyncio.sleep(0.3)
        assert not asking.done()
        started = time.monotonic()
        await gate.close()
        assert time.monotonic() - started < 5
        with pytest.raises(GateClosed):
            await asking
        assert worker_threads() == []


@pytest.mark.slow
async def test_waits_for_the_lock_longer_than_one_slice(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    async with SQLiteStore(path) as store:
        with write_locked(path) as holder:
            waiting = asyncio.ensure_future(store.lock_fetch("https://a.example", 60))
            await asyncio.sleep(0.5)  # several of SQLite's short waits
            assert not waiting.done()
            holder.execute("ROLLBACK")
            assert await asyncio.wait_for(waiting, 10) is not None


@pytest.mark.slow
async def test_gives_up_on_the_lock_after_the_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    store = SQLiteStore(path)
    store._busy_timeout = 0.5
    await store.open()
    with write_locked(path):
        started = time.monotonic()
        with pytest.raises(StoreError, match="locked"):
            await store.lock_fetch("https://a.example", 60)
        assert time.monotonic() - started < 5
    await store.close()


# -- crashes ---------------------------------------------------------------


@pytest.mark.slow
async def test_kill_9_loses_at_most_the_unflushed_batch(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    per_batch = 20
    proc = await spawn_writer(path, "k", batches=100_000, per_batch=per_batch)
    assert proc.stdout is not None
    flushed = -1
    try:
        while flushed < 4:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout=20)
            assert line, "writer exited early"
            if line.startswith(b"flushed "):
                flushed = int(line.split()[1])
    finally:
        # Mid-write: the child is already busy with the next batch.
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        _, err = await proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err.decode()

    async with SQLiteStore(path) as store:
        for b in range(flushed + 1):
            for i in range(per_batch):
                origin = f"https://k-{b}-{i}.example"
                loaded = await store.load_robots(origin)
                assert loaded is not None and loaded.body == origin.encode() * 20
                state = await store.load_host(origin)
                assert state is not None and state.visits == b + 1
        with raw(path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


@pytest.mark.slow
async def test_two_processes_share_one_file(tmp_path: Path) -> None:
    # Neither finds the file: they also race to create it.
    path = tmp_path / "gate.sqlite3"
    batches, per_batch = 15, 20
    procs = [await spawn_writer(path, tag, batches, per_batch) for tag in ("a", "b")]
    results = await asyncio.wait_for(asyncio.gather(*(p.communicate() for p in procs)), 60)
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err.decode()
        assert b"locked" not in err
        assert out.splitlines()[-1] == b"done"
    with raw(path) as conn:
        assert conn.execute("SELECT count(*) FROM robots").fetchone()[0] == 2 * batches * per_batch
        assert conn.execute("SELECT count(*) FROM hosts").fetchone()[0] == 2 * batches * per_batch
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
