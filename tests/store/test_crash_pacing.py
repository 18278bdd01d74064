"""A crawler killed with SIGKILL and started again on its SQLite file keeps each
server's interval: no server is asked sooner than its interval after the last
request the killed process may have sent.

The crawling process is a child (``python -c CRAWLER``); the next one is started
before the kill and waits on its stdin, so that it is ready at once (a slow
interpreter start-up must not hide a request sent too soon).  The loopback
server (``testbed/server.py``) records every request's arrival per host.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from robotgate.store.base import HostState
from robotgate.store.sqlite import SQLiteStore
from testbed.server import BenchServer, HostPlan, HostStats

SRC = Path(__file__).resolve().parents[2] / "src"
DELAY = 1.0
CRAWL_DELAY = 2.0  # the "crawl_delay" hosts ask more than the gate's delay

# Crawls every base URL given, page after page, until killed.  Waits for a line on
# stdin first (to start at a moment the test chooses) and says "ready" before it.
CRAWLER = r"""
import asyncio, itertools, sys
from robotgate import RobotGate, SQLiteStore

async def main(path, delay, bases):
    store = SQLiteStore(path)  # the default flush interval: host rows are batched
    async with RobotGate("TestBot/1.0", delay=delay, store=store) as gate:
        async def crawl(base):
            for n in itertools.count():
                await gate.fetch(f"{base}/page/{n}")
        await asyncio.gather(*(crawl(b) for b in bases))

print("ready", flush=True)
sys.stdin.readline()
asyncio.run(main(sys.argv[1], float(sys.argv[2]), sys.argv[3:]))
"""


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


class Crawler:
    """One crawling child process."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def spawn(cls, path: Path, bases: list[str]) -> Crawler:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CRAWLER, str(path), str(DELAY), *bases,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=child_env(),
        )
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 20)
        if line != b"ready\n":
            assert proc.stderr is not None
            err = await asyncio.wait_for(proc.stderr.read(), 20)
            raise AssertionError(f"the crawler did not start: {err.decode()}")
        return cls(proc)

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()  # SIGKILL: no close, no flush
        await self.proc.wait()  # reaped: its pid is gone


def stored_origins(path: Path) -> set[str]:
    """The origins whose robots.txt entry is in the file."""
    conn = sqlite3.connect(path)
    try:
        return {row[0] for row in conn.execute("SELECT origin FROM robots")}
    except sqlite3.OperationalError:
        return set()  # killed before the file was made
    finally:
        conn.close()


def requests_of(stats: HostStats) -> list[float]:
    """Arrival times of every request the host saw: robots.txt and pages."""
    return sorted(stats.robots_times + stats.page_times)


async def until(srv: BenchServer, ready: Callable[[list[HostStats]], bool],
                timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready(list(srv.stats().values())):
        assert time.monotonic() < deadline, "the crawl did not get there in time"
        await asyncio.sleep(0.01)


def every_host_has(pages: int) -> Callable[[list[HostStats]], bool]:
    return lambda stats: all(s.page_requests >= pages for s in stats)


def every_robots_asked(stats: list[HostStats]) -> bool:
    return all(s.robots_requests for s in stats)


# (name, when to kill, extra seconds after that): during the robots.txt fetches,
# after the first page of each host (its row not written yet), and mid-crawl
# (after flushes, with the last pages unwritten).
MOMENTS = {
    "robots": (every_robots_asked, 0.0),
    "first_pages": (every_host_has(1), 0.0),
    "mid_crawl": (every_host_has(2), 0.3),
}


@pytest.mark.slow
@pytest.mark.parametrize("moment", [
    "robots", "first_pages",
    pytest.param("mid_crawl", marks=pytest.mark.soak),  # the longest: CI runs it every time
])
async def test_sigkill_then_restart_keeps_every_interval(tmp_path: Path, moment: str) -> None:
    path = tmp_path / "crawl.sqlite3"
    plans = [HostPlan("allow")] * 4 + [HostPlan("crawl_delay", crawl_delay=CRAWL_DELAY)] * 2
    intervals = [DELAY] * 4 + [CRAWL_DELAY] * 2
    ready, extra = MOMENTS[moment]
    async with BenchServer(plans) as srv:
        bases = [srv.base_url(i) for i in range(len(plans))]
        first = await Crawler.spawn(path, bases)
        second = await Crawler.spawn(path, bases)
        try:
            first.go()
            await until(srv, ready, 15)
            await asyncio.sleep(extra)
            await first.kill()
            killed = time.monotonic()
            before = {host: requests_of(s) for host, s in srv.stats().items()}
            stored = stored_origins(path)
            second.go()
            # Every server's next request, however long its interval.
            await until(srv, lambda stats: all(
                [t for t in requests_of(s) if t > killed] for s in stats), 15)
        finally:
            await first.kill()
            await second.kill()
        after = {host: requests_of(s) for host, s in srv.stats().items()}
    assert first.proc.returncode == -9
    for i, ((host, old), interval) in enumerate(zip(before.items(), intervals, strict=True)):
        if bases[i] not in stored:
            # Killed before its robots.txt was stored: its Crawl-delay is known to no
            # one, and the gate's delay is kept (a fetch from scratch does the same).
            interval = DELAY
        new = [t for t in after[host] if t > killed]
        assert new, host
        if not old:
            continue  # never asked before the kill: nothing to keep
        gap = new[0] - old[-1]
        assert gap >= interval, (host, gap, interval)


async def test_a_session_that_ended_uncleanly_is_noticed_once_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "crawl.sqlite3"
    async with SQLiteStore(path) as store:
        assert store.unrecorded_until == 0.0
    # A row left by a process that is gone (no process has pid 2**22 + 1 here).
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO sessions VALUES ('dead', ?, 1.0, ?)",
                     (2**22 + 1, time.time() - 5))
    conn.close()
    caplog.set_level(logging.WARNING, "robotgate.store.sqlite")
    before = time.time()
    async with SQLiteStore(path) as store:
        assert before <= store.unrecorded_until <= time.time()
        seen = store.unrecorded_until
    assert "ended without closing" in caplog.text and str(2**22 + 1) in caplog.text
    caplog.clear()
    # Later stores on the file keep that moment (it stays the same), with no warning.
    async with SQLiteStore(path) as store:
        assert store.unrecorded_until == seen
    assert "ended without closing" not in caplog.text
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
    conn.close()


async def test_live_stores_of_one_file_do_not_take_each_other_for_dead(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    async with SQLiteStore(path) as one, SQLiteStore(path) as two:
        await one.save_host(HostState("host:a.example", visits=1))
        await one.flush()
        await two.load_host("host:a.example")
        assert one.unrecorded_until == two.unrecorded_until == 0.0


async def test_a_row_with_our_pid_from_an_earlier_process_counts_as_ended(
    tmp_path: Path,
) -> None:
    # A container restarts its crawler with the same pid: that pid is alive, but the
    # row is not one of this process's stores.
    path = tmp_path / "crawl.sqlite3"
    async with SQLiteStore(path):
        pass
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO sessions VALUES ('earlier', ?, 1.0, ?)",
                     (os.getpid(), time.time()))
    conn.close()
    async with SQLiteStore(path) as store:
        assert store.unrecorded_until > 0


# -- the robots.txt fetch lock of a killed process ----------------------------------

LOCKER = r"""
import asyncio, sys
from robotgate import SQLiteStore

async def main(path):
    store = SQLiteStore(path)
    token = await store.lock_fetch("https://a.example", 73.0)
    print("locked" if token else "refused", flush=True)
    await asyncio.sleep(60)  # killed meanwhile, as during a slow robots.txt fetch

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.slow
async def test_fetch_lock_of_a_killed_process_is_taken_at_once(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", LOCKER, str(path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=child_env(),
    )
    try:
        assert proc.stdout is not None
        assert await asyncio.wait_for(proc.stdout.readline(), 20) == b"locked\n"
        async with SQLiteStore(path) as alive:
            # While its process lives, the lock holds.
            assert await alive.lock_fetch("https://a.example", 73.0) is None
    finally:
        proc.kill()
        await proc.wait()
    async with SQLiteStore(path) as store:
        token = await store.lock_fetch("https://a.example", 73.0)
        assert token is not None
        # And it is ours now: another live store is refused.
        async with SQLiteStore(path) as other:
            assert await other.lock_fetch("https://a.example", 73.0) is None
        await store.unlock_fetch("https://a.example", token)


# -- a 0-byte file -------------------------------------------------------------------


async def test_zero_byte_file_becomes_a_store_with_a_warning_and_held_servers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    # It may be a store that was truncated: its pacing is gone, so every server
    # waits its interval, and the log says why.  A missing file is simply new.
    caplog.set_level(logging.WARNING, "robotgate.store.sqlite")
    new = tmp_path / "new.sqlite3"
    async with SQLiteStore(new) as store:
        assert store.unrecorded_until == 0.0
    assert "empty (0-byte)" not in caplog.text
    empty = tmp_path / "empty.sqlite3"
    empty.write_bytes(b"")
    before = time.time()
    async with SQLiteStore(empty) as store:
        assert before <= store.unrecorded_until <= time.time()
        await store.save_host(HostState("host:a.example", visits=1))
    assert "empty (0-byte)" in caplog.text and str(empty) in caplog.text
    async with SQLiteStore(empty) as store:
        state = await store.load_host("host:a.example")
        assert state is not None and state.visits == 1
