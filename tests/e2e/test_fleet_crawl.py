"""Worker processes sharing one named crawl through Redis, against the loopback server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from testbed.fleet import pacing_violations
from testbed.fleet_crawl import worker_processes
from testbed.server import BenchServer, HostPlan

DELAY = 0.1


def requests_by_page(srv: BenchServer) -> Counter[tuple[str, str]]:
    return Counter((host, rec.path) for host, stats in srv.stats().items()
                   for rec in stats.page_log)


def short_gaps(srv: BenchServer, interval: float) -> list[tuple[str, float | None]]:
    """Hosts asked sooner than ``interval`` after their request before, robots.txt
    requests counted in (each is a request to the server)."""
    out = []
    for host, stats in srv.stats().items():
        short, least = pacing_violations([*stats.page_times, *stats.robots_times], interval)
        if short:
            out.append((host, least))
    return out


async def pages_asked(srv: BenchServer, count: int) -> None:
    """Wait until the server was asked for ``count`` pages (30 s at most)."""
    for _ in range(1500):
        if sum(requests_by_page(srv).values()) >= count:
            return
        await asyncio.sleep(0.02)


async def finish(proc: asyncio.subprocess.Process, timeout: float = 60) -> dict[str, Any]:
    out, _ = await asyncio.wait_for(proc.communicate(b"go\n"), timeout)
    assert proc.returncode == 0, out
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@pytest.mark.slow
@pytest.mark.parametrize("where", ["server", "cluster"])
async def test_four_workersfetch_every_url_of_one_crawl_once(
        where: str, prefix: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    redis_url = request.getfixturevalue("redis_url" if where == "server" else "redis_cluster")
    cluster = ["--cluster"] if where == "cluster" else []
    hosts, pages = 16, 25
    async with BenchServer([HostPlan("allow", pages=pages)] * hosts) as srv:
        seeds = [srv.url(h, "/page/0") for h in range(hosts)]
        # Three seed a third each, one seeds nothing.
        async with worker_processes([seeds[0::3], seeds[1::3], seeds[2::3], []], tmp_path,
                                    redis_url, prefix, "--delay", str(DELAY), "--pages",
                                    str(pages), "--concurrency", "4", *cluster) as procs:
            runs = [asyncio.ensure_future(finish(p)) for p in procs[:3]]
            await asyncio.sleep(0.5)  # a worker with no input ends if it finds no crawl
            results = await asyncio.gather(*runs, finish(procs[3]))
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


@pytest.mark.soak
@pytest.mark.slow
async def test_a_worker_killed_mid_crawl_loses_nothing(
        redis_url: str, prefix: str, tmp_path: Path) -> None:
    hosts, pages, lease_ceiling = 10, 15, 6.0
    async with BenchServer([HostPlan("allow", pages=pages)] * hosts) as srv:
        seeds = [srv.url(h, "/page/0") for h in range(hosts)]
        async with worker_processes([seeds, [], []], tmp_path, redis_url, prefix, "--delay",
                                    str(DELAY), "--pages", str(pages),
                                    "--concurrency", "4") as procs:
            victim = procs[0]
            runs = [asyncio.ensure_future(finish(procs[0], 120))]
            await asyncio.sleep(0.5)  # the seeds are in: the others do not find it empty
            runs += [asyncio.ensure_future(finish(p, 120)) for p in procs[1:]]
            # Kill the seeding worker once a third of the pages were asked for.
            await pages_asked(srv, hosts * pages // 3)
            os.kill(victim.pid, signal.SIGKILL)
            killed_at = asyncio.get_running_loop().time()
            results = await asyncio.gather(*runs[1:])
            took = asyncio.get_running_loop().time() - killed_at
            with contextlib.suppress(Exception):
                await runs[0]
        fetched = requests_by_page(srv)
        assert len(fetched) == hosts * pages  # nothing lost
        duplicates = sum(n - 1 for n in fetched.values())
        # At most the killed worker's pages in flight: sent, or fetched and waiting for
        # their write (a visit keeps its place in `concurrency` until it is written).
        assert duplicates <= 4, duplicates
        assert short_gaps(srv, DELAY) == []
        assert {r["fleet_done"] for r in results} == {hosts * pages}
        assert took < lease_ceiling + pages * DELAY * 2 + 10
