"""A named crawl's rows in the SQLite file (store/sqlite_crawl.py)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import socket
import sqlite3
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from robotgate.policy.provenance import INPUT, pointer_of
from robotgate.store.base import CrawlInUse, StoreError
from robotgate.store.crawl_state import DONE, FAILED, SKIPPED, CrawlCounts, Entry
from robotgate.store.sqlite import SQLiteStore
from robotgate.store.sqlite_schema import _MIGRATIONS, _create_v1, immediate
from testbed.children import child_env


def entry(n: int, depth: int = 0) -> Entry:
    return Entry(f"http://h.example/{n}", f"http://h.example/{n}", depth, depth > 0)


async def test_a_page_and_its_links_are_written_together_or_not_at_all(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "c.sqlite3") as store:
        state = store.crawl_state("c")
        await state.open()
        await state.add([entry(0)])
        (page,) = await state.take(1)
        bad = Entry("http://h.example/bad", object())  # type: ignore[arg-type]
        with pytest.raises(StoreError):
            await state.finish(page, DONE, [entry(1, 1), bad])
        # Neither the link before the bad one nor the page's outcome was kept.
        assert await state.counts() == CrawlCounts(in_flight=1)
        added = await state.finish(page, DONE, [entry(1, 1), entry(1, 1), entry(0, 1)])
        assert (added.new, added.known) == (1, 2)
        assert await state.counts() == CrawlCounts(queued=1, done=1)
        assert state.pending == 1


async def test_rows_in_flight_return_to_the_queue_when_the_crawl_reopens(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    async with SQLiteStore(path) as store:
        state = store.crawl_state("c")
        await state.open()
        await state.add([entry(n) for n in range(5)])
        taken = await state.take(3)
        assert [e.url for e in taken] == [entry(n).url for n in range(3)]
        await state.finish(taken[0], SKIPPED, ())
        await state.finish(taken[1], FAILED, ())
        assert state.pending == 2
    async with SQLiteStore(path) as store:
        state = store.crawl_state("c")
        assert await state.open() == CrawlCounts(queued=3, skipped=1, failed=1)
        assert state.pending == 3
        again = await state.take(10)
        # Oldest first; the one taken before is now on its second attempt.
        assert [e.url for e in again] == [entry(n).url for n in (2, 3, 4)]
        assert [e.attempts for e in again] == [1, 0, 0]
        await state.release(again[1:])
        assert await state.counts() == CrawlCounts(queued=2, in_flight=1, skipped=1, failed=1)


async def test_crawls_are_kept_apart_and_dropped_by_name(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "c.sqlite3") as store:
        a, b = store.crawl_state("a"), store.crawl_state("b")
        await a.open()
        await b.open()
        assert (await a.add([entry(1)])).new == 1
        assert (await b.add([entry(1)])).new == 1  # the same URL, another crawl
        assert await store.crawl_names() == ["a", "b"]
        with pytest.raises(CrawlInUse, match=r"'a'.* is run by this process"):
            await store.drop_crawl("a")  # a crawl being run is not dropped under it
        await a.close()
        assert await store.drop_crawl("a")
        assert await store.crawl_names() == ["b"]
        assert await b.counts() == CrawlCounts(queued=1)
        with pytest.raises(ValueError, match="outcome"):
            await b.finish(entry(1), 9, ())


async def test_a_crawl_is_run_by_one_store_at_a_time_and_let_go_at_its_close(
        tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    async with SQLiteStore(path) as first, SQLiteStore(path) as second:
        running = first.crawl_state("c")
        await running.open()
        await running.add([entry(n) for n in range(3)])
        await running.take(2)
        with pytest.raises(CrawlInUse) as caught:
            await second.crawl_state("c").open()
        refusal = caught.value
        assert (refusal.name, refusal.pid, refusal.host) == ("c", os.getpid(), socket.gethostname())
        assert refusal.since is not None and time.time() - 60 < refusal.since <= time.time()
        # Refused before it changed anything: what the holder has in flight stays so.
        assert await running.counts() == CrawlCounts(queued=1, in_flight=2)
        assert str(path) in str(refusal) and "lock file" not in str(refusal)
        await running.close()
        taken = second.crawl_state("c")
        assert await taken.open() == CrawlCounts(queued=3)  # let go: taken, its flights queued
        await second.crawl_state("other").open()  # another name is another crawl
    # Nothing but the store and SQLite's own files beside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite3"]
    async with SQLiteStore(path) as again:  # a store's close let go of its crawls
        await again.crawl_state("c").open()
        await again.crawl_state("other").open()


# -- one owner, whatever is done beside the store -------------------------------------

_HOLDER = r"""
import asyncio, os, sys, time
from robotgate.store.sqlite import SQLiteStore

async def main():
    store = SQLiteStore(sys.argv[1])
    state = store.crawl_state("c")
    await state.open()
    if sys.argv[2] == "fork":
        if os.fork() == 0:  # outlives its parent, holding what it inherited
            print(os.getpid(), flush=True)  # once forked all through
            time.sleep(120)
            os._exit(0)
        sys.stdin.readline()  # until the test read the child's pid: it has run since
    print(os.getpid(), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await state.close()
    await store.close()

asyncio.run(main())
"""


@asynccontextmanager
async def holder(path: Path, fork: bool = False) -> AsyncIterator[list[int]]:
    """Another process running the crawl ``c`` of the store at ``path``: its pid (after
    the pid of the child it forked, with ``fork``), until the block ends."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLDER, str(path), "fork" if fork else "-",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=child_env())
    assert proc.stdout is not None
    assert proc.stdin is not None
    pids: list[int] = []
    try:
        if fork:
            pids.append(int(await asyncio.wait_for(proc.stdout.readline(), 60)))
            proc.stdin.write(b"go on\n")
        pids.append(int(await asyncio.wait_for(proc.stdout.readline(), 60)))
        yield pids
    finally:
        for pid in pids[:-1]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await asyncio.wait_for(proc.communicate(), 30)  # its pipes closed too


async def refused_by(path: Path) -> CrawlInUse:
    async with SQLiteStore(path) as store:
        with pytest.raises(CrawlInUse) as caught:
            await store.crawl_state("c").open()
        with pytest.raises(CrawlInUse):
            await store.drop_crawl("c")
    return caught.value


@pytest.mark.slow
async def test_the_crawl_stays_its_owner_s_when_every_file_beside_the_store_is_removed(
        tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    async with holder(path) as (pid,):
        for other in tmp_path.iterdir():  # a tmp cleaner, `rm *.lock`
            if other.name not in ("c.sqlite3", "c.sqlite3-wal", "c.sqlite3-shm"):
                other.unlink()
        refusal = await refused_by(path)
        assert refusal.pid == pid and f"pid {pid} on host {socket.gethostname()}" in str(refusal)
        assert f"kill {pid}" in str(refusal)


@pytest.mark.slow
async def test_a_store_is_opened_by_one_name_and_its_crawl_by_one_process(
        tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    path, link = tmp_path / "a" / "c.sqlite3", tmp_path / "b" / "c.sqlite3"
    async with holder(path) as (pid,):
        os.link(path, link)  # a hard link in another folder
        with pytest.raises(StoreError, match=r"has 2 names \(hard links.*Nothing was changed"):
            await SQLiteStore(link).open()
        assert not (tmp_path / "b" / "c.sqlite3-wal").exists()  # nothing written by it
        os.unlink(link)
        # A symbolic link in another folder is the same file, by its one name.
        (tmp_path / "b" / "c.sqlite3").symlink_to(path)
        assert (await refused_by(link)).pid == pid
    async with SQLiteStore(link) as store:  # free once the holder ended
        await store.crawl_state("c").open()
        assert await store.crawl_names() == ["c"]


async def test_a_symlink_planted_beside_the_store_is_never_written_through(
        tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    # Where a lock file beside the store was looked for (by crawl name), and any name.
    digest = hashlib.sha256(b"c").hexdigest()[:12]
    planted = [tmp_path / f"c.sqlite3-crawl-c-{digest}.lock", tmp_path / "c.sqlite3.lock"]
    for name in planted:
        name.symlink_to(victim)
    async with SQLiteStore(path) as store:
        state = store.crawl_state("c")
        await state.open()
        await state.add([entry(1)])
        await state.close()
        assert await store.drop_crawl("c")
    assert victim.read_text() == "precious"
    assert all(name.is_symlink() for name in planted)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["c.sqlite3", "victim.txt", *(p.name for p in planted)])


@pytest.mark.slow
async def test_a_forked_child_that_outlives_a_killed_owner_does_not_keep_the_crawl(
        tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    async with holder(path, fork=True) as (child, owner):
        refusal = await refused_by(path)
        assert refusal.pid == owner  # the holder, not its child
        os.kill(owner, signal.SIGKILL)
        for _ in range(400):  # until it is gone (10 s)
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(owner, os.WNOHANG) != (0, 0):
                    break
            if not os.path.exists(f"/proc/{owner}"):
                break
            await asyncio.sleep(0.025)
        os.kill(child, 0)  # the child lives on
        async with SQLiteStore(path) as store:
            state = store.crawl_state("c")
            await state.open()  # free: the child holds nothing of its parent's
            await state.close()


# -- provenance kept, and files of schema 6 --------------------------------------------

KINDS = [INPUT, pointer_of("http://a.example/page"), pointer_of("http://10.0.0.1/", False),
         pointer_of("http://93.184.216.34/", True), pointer_of("")]


async def test_each_url_keeps_who_pointed_at_it(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    entries = [Entry(f"http://h.example/{n}", f"http://h.example/{n}", 1, n > 0, 0, kind)
               for n, kind in enumerate(KINDS)]
    async with SQLiteStore(path) as store:
        state = store.crawl_state("c")
        await state.open()
        await state.add(entries[:2])
        (page,) = await state.take(1)
        await state.finish(page, DONE, entries[2:])
    async with SQLiteStore(path) as store:
        state = store.crawl_state("c")
        await state.open()
        taken = await state.take(10)
    assert [(e.url, e.provenance) for e in taken] == [(e.url, e.provenance) for e in entries[1:]]


def schema_6_file(path: Path) -> None:
    """A store as robotgate left it at schema 6, with a crawl: an input URL done, its
    link and a second input URL queued, a link in flight."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        with immediate(conn):
            _create_v1(conn)
            for step in _MIGRATIONS[:5]:
                step(conn)
            conn.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
            conn.execute("INSERT INTO crawls (name, created) VALUES ('old', 1.0)")
            conn.executemany(
                "INSERT INTO crawl_urls (crawl, key, url, state, depth, discovered)"
                " VALUES ('old', ?, ?, ?, ?, ?)",
                [("http://h.example/", "http://h.example/", DONE, 0, 0),
                 ("http://h.example/a", "http://h.example/a", 0, 1, 1),
                 ("http://h.example/in", "http://h.example/in", 0, 0, 0),
                 ("http://h.example/b", "http://h.example/b", 1, 1, 1)])
    finally:
        conn.close()


async def test_a_schema_6_crawl_is_upgraded_its_links_pages_not_known(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    schema_6_file(path)
    async with SQLiteStore(path) as store:
        state = store.crawl_state("old")
        assert await state.open() == CrawlCounts(queued=3, done=1)
        taken = {e.url: e.provenance for e in await state.take(10)}
        # Its input is input; a link's page was never kept: not known (None), not a guess.
        assert taken == {"http://h.example/a": None, "http://h.example/in": INPUT,
                         "http://h.example/b": None}
        await state.close()
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                            ).fetchone() == ("7",)


async def test_a_provenance_robotgate_never_writes_is_refused_not_read_as_input(
        tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    async with SQLiteStore(path) as store:
        state = store.crawl_state("c")
        await state.open()
        await state.add([Entry("http://h.example/1", "http://h.example/1", 1, True, 0,
                               pointer_of("http://93.184.216.34/"))])
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute("UPDATE crawl_urls SET page = X'00ff'")  # a blob, not a URL
            conn.commit()
        with pytest.raises(StoreError, match=r"crawl_urls row 'http://h.example/1' holds a"
                                             r" provenance robotgate never writes"):
            await state.take(10)
        assert await state.counts() == CrawlCounts(queued=1)  # nothing taken
