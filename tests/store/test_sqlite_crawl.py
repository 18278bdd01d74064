"""A named crawl's rows in the SQLite file (store/sqlite_crawl.py)."""

from __future__ import annotations

import asyncio
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

from robotgate.policy.provenance import INPUT, Provenance, pointer_of
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
