"""Worker processes sharing one named crawl through Redis, against the loopback server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from robotgate.store.redis.crawl import LINGER
from testbed.fleet import pacing_violations
from testbed.fleet_crawl import spawn
from testbed.server import BenchServer, HostPlan

DELAY = 0.1


def requests_by_page(srv: BenchServer) -> Counter[tuple[str, str]]:
    return Counter((host, rec.path) for host, stats in srv.stats().items()
                   for rec in stats.page_log)


def unwritten_bound(srv: BenchServer, stopped: float) -> int:
    """Pages a worker stopped at ``stopped`` (``time.monotonic()``) may have fetched and
    not yet written (a write waits up to ``LINGER`` for others): at most those the server
    received in that time, from any worker."""
    since = stopped - LINGER - 0.1
    return sum(1 for stats in srv.stats().values() for rec in stats.page_log
               if since <= rec.time <= stopped)


def short_gaps(srv: BenchServer, interval: float) -> list[tuple[str, float | None]]:
    """Hosts asked sooner than ``interval`` after their request before, robots.txt
    requests counted in (each is a request to the server)."""
    out = []
    for host, stats in srv.stats().items():
        short, least = pacing_violations([*stats.page_times, *stats.robots_times], interval)
        if short:
            out.append((host, least))
    return out


async def finish(proc: asyncio.subprocess.Process, timeout: float = 60) -> dict[str, Any]:
    out, _ = await asyncio.wait_for(proc.communicate(b"go\n"), timeout)
    assert proc.returncode == 0, out
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


@pytest.mark.slow
@pytest.mark.parametrize("where", ["server", "cluster"])
async def test_four_workers_fetch_every_url_of_one_crawl_once(
        where: str, prefix: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    redis_url = request.getfixturevalue("redis_url" if where == "server" else "redis_cluster")
    cluster = ["--cluster"] if where == "cluster" else []
    hosts, pages = 16, 25
    async with BenchServer([HostPlan("allow", pages=pages)] * hosts) as srv:
        seeds = [srv.url(h, "/page/0") for h in range(hosts)]
        procs = []
        try:
            for w in range(4):  # three seed a third each, one seeds nothing
                procs.append(await spawn(w, tmp_path, seeds[w::3] if w < 3 else [], redis_url,
                                         prefix, "--delay", str(DELAY), "--pages", str(pages),
                                         "--concurrency", "4", *cluster))
            runs = [asyncio.ensure_future(finish(p)) for p in procs[:3]]
            await asyncio.sleep(0.5)  # a worker with no input ends if it finds no crawl
            results = await asyncio.gather(*runs, finish(procs[3]))
        finally:
            for p in procs:
                if p.returncode is None:
                    p.kill()
                    await p.wait()
        fetched = requests_by_page(srv)
        assert len(fetched) == hosts * pages
        assert set(fetched.values()) == {1}
        assert short_gaps(srv, DELAY) == []
        assert sum(r["pages"] for r in results) == hosts * pages
        assert {r["fleet_done"] for r in results} == {hosts * pages}
        assert all(r["pages"] for r in results)  # each leased servers of its own
        trips = sum(r["round_trips"] for r in results)
        # No slot asked per page (the leases pace the servers here), outcomes written in
        # batches of 50 ms, idle workers asking less often: 0.59 a page here on a busy
        # machine.
        assert trips / (hosts * pages) < 0.8, (trips, results)


@pytest.mark.slow
async def test_a_worker_killed_mid_crawl_loses_nothing(
        redis_url: str, prefix: str, tmp_path: Path) -> None:
    hosts, pages, lease_ceiling = 10, 15, 6.0
    async with BenchServer([HostPlan("allow", pages=pages)] * hosts) as srv:
        seeds = [srv.url(h, "/page/0") for h in range(hosts)]
        procs = []
        try:
            for w in range(3):
                procs.append(await spawn(w, tmp_path, seeds if w == 0 else [], redis_url,
                                         prefix, "--delay", str(DELAY), "--pages", str(pages),
                                         "--concurrency", "4"))
            victim = procs[0]
            runs = [asyncio.ensure_future(finish(procs[0], 120))]
            await asyncio.sleep(0.5)  # the seeds are in: the others do not find it empty
            runs += [asyncio.ensure_future(finish(p, 120)) for p in procs[1:]]
            # Kill the seeding worker once a third of the pages were asked for.
            for _ in range(600):
                if sum(requests_by_page(srv).values()) >= hosts * pages // 3:
                    break
                await asyncio.sleep(0.05)
            os.kill(victim.pid, signal.SIGKILL)
            killed = time.monotonic()
            killed_at = asyncio.get_running_loop().time()
            results = await asyncio.gather(*runs[1:])
            took = asyncio.get_running_loop().time() - killed_at
            with contextlib.suppress(Exception):
                await runs[0]
        finally:
            for p in procs:
                if p.returncode is None:
                    p.kill()
                    await p.wait()
        fetched = requests_by_page(srv)
        assert len(fetched) == hosts * pages  # nothing lost
        duplicates = sum(n - 1 for n in fetched.values())
        # At most the killed worker's pages in flight (concurrency), and those whose
        # outcome waited for its write.
        assert duplicates <= 4 + unwritten_bound(srv, killed), duplicates
        assert short_gaps(srv, DELAY) == []
        assert {r["fleet_done"] for r in results} == {hosts * pages}
        assert took < lease_ceiling + pages * DELAY * 2 + 10
