"""The gate that never forgets: restarts on a SQLite store, end to end on loopback.

Every test runs a real server on 127.0.X.Y (``testbed/server.py``, or a
small aiohttp app where custom robots.txt bodies are needed) and opens a new
gate *and a new store object* on the same file for each "restart", as a new
process would.  The storage interface itself is covered per backend in
``test_store_contract.py``; the file format in ``test_sqlite_schema.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from robotgate import FetchPolicy, RobotGate
from robotgate.store.base import HostState, Outcome, StoreError
from robotgate.store.sqlite import SQLiteStore
from testbed.children import child_env
from testbed.server import BenchServer, HostPlan
from tests.support import CHILDREN

AGENT = "TestBot/1.0 (+https://example.com/bot)"
SRC = Path(__file__).resolve().parents[2] / "src"
PARTIAL = b"User-agent: *\nDisallow: /private/\n"


def open_store(path: Path) -> SQLiteStore:
    # A short flush interval: host state reaches the file within the tests.
    return SQLiteStore(path, flush_interval=0.05)


@contextlib.contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection, as another tool would open the file."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def robots_rows(path: Path) -> dict[str, dict[str, Any]]:
    """The robots table as stored, column by column, per origin."""
    with raw(path) as conn:
        cursor = conn.execute("SELECT * FROM robots")
        names = [d[0] for d in cursor.description]
        return {row[0]: dict(zip(names, row, strict=True)) for row in cursor.fetchall()}


def host_rows(path: Path) -> dict[str, tuple[int, float | None, float]]:
    with raw(path) as conn:
        rows = conn.execute("SELECT origin, visits, last_visit, next_allowed FROM hosts").fetchall()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def host_key(srv: BenchServer, index: int) -> str:
    """The gate's politeness key of a host (``pace_by="host"``, the default)."""
    return f"host:{srv.hosts[index]}"


def sqlite_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("robotgate-sqlite")]


# -- restart: fresh entries, host state, pacing ----------------------------------


@pytest.mark.slow
async def test_restart_serves_fresh_entries_and_keeps_host_state_and_pacing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gate.sqlite3"
    n = 12
    delay = 1.0  # long enough that the restart itself takes a fraction of it
    async with BenchServer([HostPlan("partial")] * n) as srv:
        pages = [srv.url(i, "/page/0") for i in range(n)]
        async with RobotGate(AGENT, delay=delay, store=open_store(path)) as gate1:

            async def crawl(i: int) -> None:
                await gate1.fetch(srv.url(i, "/page/0"))
                await gate1.fetch(srv.url(i, "/page/1"))

            before_private = [await gate1.allowed(srv.url(i, "/private/1")) for i in range(n)]
            await asyncio.gather(*(crawl(i) for i in range(n)))
            states = [gate1.host_state(u) for u in pages]
        assert [s.robots_requests for s in srv.stats().values()] == [1] * n
        assert all(s is not None and s.visits == 2 for s in states)

        # A new process: new gate, new store object, same file.
        async with RobotGate(AGENT, delay=delay, store=open_store(path)) as gate2:
            verdicts = [await gate2.allowed(u) for u in pages]
            private = [await gate2.allowed(srv.url(i, "/private/1")) for i in range(n)]
            assert verdicts == [True] * n
            assert private == before_private == [False] * n
            assert gate2.stats["robots_requests"] == 0
            for url, old in zip(pages, states, strict=True):
                new = gate2.host_state(url)
                assert old is not None and new is not None
                assert (new.visits, new.last_visit) == (old.visits, old.last_visit)
                assert new.next_allowed == old.next_allowed
            # The pacing position survived: the stored next-allowed time still holds.
            wait = gate2.host_wait(pages[0])
            assert 0 < wait <= delay
            await gate2.fetch(srv.url(0, "/page/2"))
            visits = gate2.host_state(pages[0])
            assert visits is not None and visits.visits == 3
        stats = srv.stats()
    assert [s.robots_requests for s in stats.values()] == [1] * n
    times = stats[srv.hosts[0]].page_times
    assert len(times) == 3
    # The first request after the restart waited for the stored next allowed time:
    # without it, it would follow the last one by little more than the restart takes.
    # (Slack: the stored time counts from when a request was let go, the server's
    # times from when it arrived.)
    assert times[2] - times[1] >= delay - 0.1
    # Host state is kept per politeness group: per host name by default.
    rows = host_rows(path)
    assert rows[host_key(srv, 0)][0] == 3
    assert all(rows[host_key(srv, i)][0] == 2 for i in range(1, n))


@pytest.mark.slow
async def test_restart_keeps_a_servers_back_off(tmp_path: Path) -> None:
    # A 429 without Retry-After widened the interval to 0.5 s (the base); after a
    # restart the server is not asked at the plain 0.05 s again.
    path = tmp_path / "gate.sqlite3"
    plan = HostPlan("allow", page_status=429, page_status_times=1)
    async with BenchServer([plan]) as srv:
        gate1 = RobotGate(AGENT, delay=0.05, store=open_store(path))
        async with gate1, gate1.fetch(srv.url(0, "/page/0")) as resp:
            assert resp.status == 429
        async with RobotGate(AGENT, delay=0.05, store=open_store(path)) as gate2:
            for i in range(1, 4):
                async with gate2.fetch(srv.url(0, f"/page/{i}")) as resp:
                    assert resp.status == 200
            after = gate2.host_state(srv.url(0, "/"))
        times = srv.stats()[srv.hosts[0]].page_times
    assert len(times) == 4 and min(b - a for a, b in itertools.pairwise(times[1:])) >= 0.4
    # Restored at 0.5 s, and each success took a twentieth of that peak off
    # (Pacing.backoff_recovery).
    assert after is not None and after.backoff_peak == 0.5
    assert after.backoff == pytest.approx(0.5 - 3 * 0.5 / 20)


# -- stale entries: conditional revalidation ---------------------------------------


@pytest.mark.slow
async def test_stale_entries_are_revalidated_with_304_after_restart(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    # Hosts 0-4 say max-age=1 (stale after a second); hosts 5-9 stay fresh for a day.
    plans = [HostPlan("partial", max_age=1)] * 5 + [HostPlan("partial")] * 5
    async with BenchServer(plans) as srv:
        urls = [srv.url(i, "/page/3") for i in range(10)]
        private = [srv.url(i, "/private/4") for i in range(10)]
        policy = FetchPolicy(min_freshness=0)
        async with RobotGate(AGENT, delay=0, policy=policy, store=open_store(path)) as gate1:
            first = [await gate1.allowed(u) for u in urls + private]
        stored = robots_rows(path)
        await asyncio.sleep(1.1)

        restarted = time.time()
        async with RobotGate(AGENT, delay=0, policy=policy, store=open_store(path)) as gate2:
            again = [await gate2.allowed(u) for u in urls + private]
            entries = [await gate2.robots_entry(u) for u in urls]
            assert gate2.stats["robots_requests"] == 5
        stats = list(srv.stats().values())
        renewed = robots_rows(path)
    assert again == first == [True] * 10 + [False] * 10
    for i, s in enumerate(stats):
        origin = srv.base_url(i)
        if i < 5:
            # One full fetch, then one conditional request answered 304: no second body.
            assert (s.robots_requests, s.robots_304) == (2, 1)
            revalidation = s.robots_log[-1]
            assert revalidation.status == 304
            assert revalidation.if_none_match == stored[origin]["etag"]
            assert revalidation.if_modified_since is not None
            assert "304" in entries[i].detail
            assert entries[i].fresh_until > restarted
            # The renewed freshness and fetch time reached the file; the body is unchanged.
            assert renewed[origin]["fetched_at"] > stored[origin]["fetched_at"]
            assert renewed[origin]["fresh_until"] > restarted
            assert renewed[origin]["body"] == stored[origin]["body"] == PARTIAL
        else:
            assert (s.robots_requests, s.robots_304) == (1, 0)
            assert renewed[origin] == stored[origin]


# -- recheck after N visits ------------------------------------------------------


async def test_recheck_after_n_visits_survives_restart(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    async with BenchServer([HostPlan("partial")]) as srv:
        url = srv.url(0, "/page/9")

        def robots() -> tuple[int, int]:
            s = srv.host_stats(0)
            return s.robots_requests, s.robots_304

        async with RobotGate(AGENT, delay=0, policy=FetchPolicy(recheck_visits=3),
                             store=open_store(path)) as gate:
            for i in range(3):
                await gate.fetch(srv.url(0, f"/page/{i}"))
            assert robots() == (1, 0)
            # The fourth ask comes after 3 visits: a conditional recheck first.
            assert await gate.allowed(url)
            assert robots() == (2, 1)
            for i in range(3, 6):
                await gate.fetch(srv.url(0, f"/page/{i}"))
            assert robots() == (2, 1)
        # The count of visits since the last check is stored: 3 visits, then a
        # restart, and the first ask of the new gate rechecks.
        async with RobotGate(AGENT, delay=0, policy=FetchPolicy(recheck_visits=3),
                             store=open_store(path)) as gate:
            assert await gate.allowed(url)
            assert robots() == (3, 2)
            log = srv.host_stats(0).robots_log
            assert log[-1].status == 304 and log[-1].if_none_match is not None
        # The recheck reset the count, in the file too: no recheck after this restart.
        async with RobotGate(AGENT, delay=0, policy=FetchPolicy(recheck_visits=3),
                             store=open_store(path)) as gate:
            assert await gate.allowed(url)
            await gate.fetch(srv.url(0, "/page/6"))
            assert robots() == (3, 2)
        assert srv.host_stats(0).page_requests == 7


async def test_a_large_batch_of_host_states_survives_restart(tmp_path: Path) -> None:
    """More host states than one INSERT statement takes, in one flush, with an
    earlier pause in the file that the batch must not undo."""
    path = tmp_path / "gate.sqlite3"
    origins = [f"http://127.0.{i // 250 + 1}.{i % 250 + 1}:8080" for i in range(1000)]
    far = time.time() + 3600
    async with SQLiteStore(path) as store:
        await store.pause(origins[777], far)
    async with SQLiteStore(path, flush_interval=60, flush_batch=10_000) as store:
        for i, origin in enumerate(origins):
            await store.save_host(HostState(origin, visits=i + 1, last_visit=i + 0.5,
                                            next_allowed=float(i), visits_since_check=i % 7))
    async with SQLiteStore(path) as store:
        loaded = [await store.load_host(o) for o in origins]
    for i, (origin, state) in enumerate(zip(origins, loaded, strict=True)):
        assert state == HostState(origin, i + 1, i + 0.5, far if i == 777 else float(i), i % 7)


# -- two robots, one store ---------------------------------------------------------

TWO_AGENTS_ROBOTS = b"""\
User-agent: alphabot
Disallow: /a/

User-agent: betabot
Disallow: /b/

User-agent: *
Disallow: /
"""


@contextlib.asynccontextmanager
async def robots_app(body: bytes) -> AsyncIterator[tuple[str, list[str]]]:
    """A one-origin server on 127.0.0.1 serving ``body``; yields its origin and a log."""
    log: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        log.append(request.path)
        if request.path == "/robots.txt":
            return web.Response(body=body, content_type="text/plain", headers={"ETag": '"v1"'})
        return web.Response(text="page")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        yield f"http://127.0.0.1:{port}", log
    finally:
        await runner.cleanup()


async def test_robots_with_different_names_share_one_store(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    async with robots_app(TWO_AGENTS_ROBOTS) as (origin, log):
        paths = ["/a/1", "/b/1", "/c/1"]
        alpha = RobotGate("AlphaBot/2.0", delay=0, store=open_store(path))
        beta = RobotGate("BetaBot/0.9 (+https://beta.example)", delay=0, store=open_store(path))
        async with alpha, beta:  # both open on the file at once
            assert [await alpha.allowed(origin + p) for p in paths] == [False, True, True]
            assert log == ["/robots.txt"]
            # The other robot reads the same stored body and applies its own group.
            assert [await beta.allowed(origin + p) for p in paths] == [True, False, True]
            assert log == ["/robots.txt"]
            assert (await beta.decide(origin + "/b/1")).rule is not None
        # After a restart, a third robot (no group of its own) gets the * group.
        async with RobotGate("GammaBot", delay=0, store=open_store(path)) as gamma:
            assert [await gamma.allowed(origin + p) for p in paths] == [False] * 3
        assert log == ["/robots.txt"]
    rows = robots_rows(path)
    assert list(rows) == [origin]
    assert rows[origin]["body"] == TWO_AGENTS_ROBOTS  # stored once, raw, not per agent


# -- fetch outcomes ------------------------------------------------------------------


@pytest.mark.slow
async def test_fetch_outcomes_are_remembered_with_their_retry_time(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    policy = FetchPolicy(retry_base=1.0)
    plans = [HostPlan("404"), HostPlan("500"), HostPlan("redirect_chain"), HostPlan("reset")]
    async with BenchServer(plans) as srv:
        urls = [srv.url(i, "/page/1") for i in range(4)]
        async with RobotGate(AGENT, delay=0, policy=policy, store=open_store(path)) as gate1:
            first = [await gate1.allowed(u) for u in urls]
            entries1 = [await gate1.robots_entry(u) for u in urls]
        assert first == [True, False, True, False]

        def requests() -> list[tuple[int, int]]:
            return [(s.robots_requests, s.redirect_hops) for s in srv.stats().values()]

        seen = requests()
        assert seen == [(1, 0), (1, 0), (1, 3), (1, 0)]
        async with RobotGate(AGENT, delay=0, policy=policy, store=open_store(path)) as gate2:
            again = [await gate2.allowed(u) for u in urls]
            entries2 = [await gate2.robots_entry(u) for u in urls]
            reasons = [(await gate2.decide(u)).reason for u in urls]
        assert requests() == seen  # nothing asked while the outcomes are fresh
        assert again == first
        assert entries2 == entries1
        assert [e.outcome for e in entries2] == [
            Outcome.UNAVAILABLE, Outcome.UNREACHABLE, Outcome.OK, Outcome.UNREACHABLE,
        ]
        assert entries2[0].status == 404 and "404" in reasons[0]
        assert entries2[1].status == 500 and entries2[1].failures == 1 and "500" in reasons[1]
        assert entries2[2].final_url is not None and entries2[2].final_url.endswith("/r/3")
        assert entries2[3].failures == 1 and "could not be fetched" in reasons[3]
        # The retry time is stored too: once it passes, the retry counts on from
        # the stored failures (the back-off doubles).
        retry_at = max(entries2[1].fresh_until, entries2[3].fresh_until)
        assert entries2[1].fresh_until - entries2[1].fetched_at == pytest.approx(1.0)
        await asyncio.sleep(max(0.0, retry_at - time.time()) + 0.05)
        async with RobotGate(AGENT, delay=0, policy=policy, store=open_store(path)) as gate3:
            entries3 = [await gate3.robots_entry(u) for u in urls]
        assert requests() == [(1, 0), (2, 0), (1, 3), (2, 0)]
    assert entries3[0] == entries1[0] and entries3[2] == entries1[2]
    for e in (entries3[1], entries3[3]):
        assert e.failures == 2
        assert e.fresh_until - e.fetched_at == pytest.approx(2.0)


# -- two processes on one file -----------------------------------------------------


@pytest.mark.slow
async def test_two_processes_crawl_with_one_file(tmp_path: Path) -> None:
    path = tmp_path / "gate.sqlite3"
    n = 20
    async with BenchServer([HostPlan("allow")] * n) as srv:
        # Process A: hosts 0-14, pages 0-1; process B: hosts 5-19, pages 2-3.
        work = {
            "a": [srv.url(i, f"/page/{p}") for i in range(0, 15) for p in (0, 1)],
            "b": [srv.url(i, f"/page/{p}") for i in range(5, 20) for p in (2, 3)],
        }
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable, "-W", "error", str(CHILDREN / "sqlite_crawl_worker.py"), str(path),
                *urls,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env=child_env(),
            )
            for urls in work.values()
        ]
        try:
            outputs = await asyncio.wait_for(
                asyncio.gather(*(p.communicate() for p in procs)), 30
            )
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
        stats = list(srv.stats().values())
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()
        assert err == b""
        assert json.loads(out)["pages"] == 30
    assert [s.page_requests for s in stats] == [2] * 5 + [4] * 10 + [2] * 5
    # Each origin's robots.txt once in all: for the hosts both crawled, one process
    # fetched it and the other used what it stored.
    assert [s.robots_requests for s in stats] == [1] * n
    robots = robots_rows(path)
    hosts = host_rows(path)
    assert set(robots) == {srv.base_url(i) for i in range(n)}
    assert set(hosts) == {host_key(srv, i) for i in range(n)}
    assert all(row["outcome"] == Outcome.OK and row["body"] == b"User-agent: *\nDisallow:\n"
               for row in robots.values())
    for i in range(n):
        visits = hosts[host_key(srv, i)][0]
        # Counters are last-writer-wins across processes: at least one process's count.
        assert visits == 2 if (i < 5 or i >= 15) else 2 <= visits <= 4
    with raw(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


# -- a corrupt file ------------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _garbage(path: Path) -> None:
    path.write_bytes(bytes((i * 131 + 7) % 256 for i in range(16384)))


def _foreign(path: Path) -> None:
    with raw(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        conn.execute("INSERT INTO invoices (total) VALUES (12.5)")


@pytest.mark.parametrize("make", [_garbage, _foreign], ids=["garbage", "foreign"])
async def test_corrupt_store_raises_store_error_naming_the_file(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    path = tmp_path / "crawl.sqlite3"
    make(path)
    before = _digest(path)
    listing = sorted(os.listdir(tmp_path))
    threads = sqlite_threads()
    gate = RobotGate(AGENT, store=SQLiteStore(path))
    with pytest.raises(StoreError) as caught:
        async with gate:
            pytest.fail("the gate opened a corrupt store")
    message = str(caught.value)
    assert str(path) in message and "fresh=True" in message
    # Nothing deleted, moved or written; no worker thread left behind.
    assert _digest(path) == before
    assert sorted(os.listdir(tmp_path)) == listing
    assert sqlite_threads() == threads
    await gate.close()

