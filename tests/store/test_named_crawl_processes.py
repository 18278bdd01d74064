"""Processes on one named crawl, each a real child process against the loopback server.

An SQLite crawl has one live owner (store/sqlite_crawl.py): a second process is refused
with :class:`CrawlInUse` naming the holder, whether it starts late or at the same moment,
and takes over at once from one that was killed, queueing again only what that one had in
flight.  A Redis crawl is shared by design (each server leased to one worker): a second
process joins it, and one started after a worker was killed takes over its servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sqlite3
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from testbed.children import child_env
from testbed.server import BenchServer, HostPlan
from tests.support import CHILDREN

pytestmark = pytest.mark.slow

NAME = "news"
HOSTS, PAGES, DELAY, CONCURRENCY = 4, 40, 0.05, 4
TOTAL = HOSTS * PAGES
REFUSED = 3


class Crawls:
    """Starts crawl processes on one store; kills those left at the end."""

    def __init__(self, srv: BenchServer, store: list[str]) -> None:
        self.srv = srv
        self.store = store
        self.procs: list[asyncio.subprocess.Process] = []

    async def start(self) -> asyncio.subprocess.Process:
        """A process with its gate open, waiting for :meth:`go`."""
        urls = [self.srv.url(h, f"/page/{p}") for p in range(PAGES) for h in range(HOSTS)]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-W", "error", str(CHILDREN / "named_crawl.py"), *self.store,
            "--name", NAME, "--delay", str(DELAY), "--concurrency", str(CONCURRENCY),
            "--wait", *urls,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=child_env())
        self.procs.append(proc)
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        assert line.startswith(b'{"ready"'), line
        return proc

    @staticmethod
    def go(*procs: asyncio.subprocess.Process) -> None:
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")

    @staticmethod
    async def result(proc: asyncio.subprocess.Process) -> tuple[int, dict[str, Any], str]:
        """Exit status, the JSON line, stderr."""
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode is not None
        lines = out.decode().strip().splitlines()
        assert lines, err.decode()
        return proc.returncode, json.loads(lines[-1]), err.decode()

    async def requested(self, pages: int) -> None:
        """Until the server has been asked for ``pages`` pages."""
        for _ in range(1200):
            if sum(requests_by_page(self.srv).values()) >= pages:
                return
            await asyncio.sleep(0.025)
        pytest.fail(f"fewer than {pages} pages were asked for in 30 s")

    async def end(self) -> None:
        for proc in self.procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


@contextlib.asynccontextmanager
async def crawls(store: list[str]) -> AsyncIterator[Crawls]:
    async with BenchServer([HostPlan("allow", pages=PAGES)] * HOSTS) as srv:
        runner = Crawls(srv, store)
        try:
            yield runner
        finally:
            await runner.end()


def requests_by_page(srv: BenchServer) -> Counter[tuple[str, str]]:
    return Counter((host, rec.path) for host, stats in srv.stats().items()
                   for rec in stats.page_log)


def store_args(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> list[str]:
    if kind == "sqlite":
        return ["--sqlite", str(tmp_path / "crawl.sqlite3")]
    return ["--redis", request.getfixturevalue("redis_url"),
            "--prefix", request.getfixturevalue("prefix")]


def rows(path: Path) -> Counter[int]:
    """The crawl's URLs by state (0 queued, 1 in flight, 2 done), as the file holds them."""
    conn = sqlite3.connect(path)
    try:
        return Counter(dict(conn.execute(
            "SELECT state, count(*) FROM crawl_urls WHERE crawl = ? GROUP BY state", (NAME,))))
    finally:
        conn.close()


def assert_names_holder(refusal: str, holder_pid: int) -> None:
    assert f"crawl {NAME!r} in " in refusal and "crawl.sqlite3" in refusal
    assert f"pid {holder_pid} on host {socket.gethostname()} since " in refusal
    assert f"kill {holder_pid}" in refusal and "take it over" in refusal


@pytest.mark.soak
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_a_process_started_late_is_refused_on_sqlite_and_joins_on_redis(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    async with crawls(store_args(kind, tmp_path, request)) as runner:
        first = await runner.start()
        second = await runner.start()
        runner.go(first)
        await runner.requested(30)  # the first is well into the crawl
        runner.go(second)
        (code_a, a, err_a), (code_b, b, _) = await asyncio.gather(
            runner.result(first), runner.result(second))
        fetched = requests_by_page(runner.srv)
    assert code_a == 0, err_a
    assert len(fetched) == TOTAL and max(fetched.values()) == 1  # no page asked twice
    if kind == "sqlite":
        assert code_b == REFUSED and a["pages"] == TOTAL  # the first was unaffected
        assert_names_holder(b["refused"], first.pid)
        assert rows(tmp_path / "crawl.sqlite3") == {2: TOTAL}
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".lock")] == []
    else:
        # Joined: each server is leased to one of them (here all to the first, which
        # leased the four before the second came), each page fetched by one.
        assert code_b == 0 and a["pages"] + b["pages"] == TOTAL


async def test_of_two_processes_started_together_one_runs_the_other_is_refused(
        tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    async with crawls(["--sqlite", str(path)]) as runner:
        both = [await runner.start(), await runner.start()]
        runner.go(*both)
        results = await asyncio.gather(*(runner.result(p) for p in both))
        fetched = requests_by_page(runner.srv)
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, REFUSED], results
    (_, ran_json, _), = [r for r in results if r[0] == 0]
    (_, refused_json, _), = [r for r in results if r[0] == REFUSED]
    assert ran_json["pages"] == TOTAL
    assert_names_holder(refused_json["refused"], ran_json["pid"])
    assert len(fetched) == TOTAL and max(fetched.values()) == 1
    assert rows(path) == {2: TOTAL}


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_a_process_started_after_the_owner_was_killed_takes_the_crawl_over(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    path = tmp_path / "crawl.sqlite3"
    async with crawls(store_args(kind, tmp_path, request)) as runner:
        first = await runner.start()
        runner.go(first)
        await runner.requested(TOTAL // 3)
        os.kill(first.pid, signal.SIGKILL)
        await first.wait()
        at_kill = rows(path) if kind == "sqlite" else Counter[int]()
        second = await runner.start()
        runner.go(second)
        code, b, err = await runner.result(second)
        fetched = requests_by_page(runner.srv)
    assert code == 0, err
    assert len(fetched) == TOTAL, (b, err)  # nothing lost
    # Asked twice: at most the pages whose request the killed process had begun.
    assert sum(n - 1 for n in fetched.values()) <= CONCURRENCY
    assert b["pages"] + b["done_before"] == TOTAL
    if kind == "sqlite":
        # Left in flight by the killed owner, queued again and done by the second.
        assert at_kill[1] > 0 and b["done_before"] == at_kill[2]
        assert rows(path) == {2: TOTAL}
        assert f"process {first.pid} ended without closing" in err
