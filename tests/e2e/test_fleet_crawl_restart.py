"""Worker processes sharing one named crawl while Redis restarts empty under them: each
says the crawl is gone and starts it again from its input, and no host is asked sooner
than the delay after the request before, across the restart."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from testbed.fleet_crawl import worker_processes
from testbed.redis_server import RedisServer
from testbed.server import BenchServer, HostPlan
from tests.e2e.test_fleet_crawl import finish, pages_asked, requests_by_page

DELAY = 0.5


@pytest.mark.soak
@pytest.mark.slow
async def test_workers_say_redis_lost_the_crawl_and_keep_every_interval(
        own_redis: RedisServer, tmp_path: Path) -> None:
    hosts, pages, workers = 6, 6, 3
    async with BenchServer([HostPlan("allow", pages=pages)] * hosts) as srv:
        seeds = [srv.url(h, "/page/0") for h in range(hosts)]
        async with worker_processes([seeds[w::workers] for w in range(workers)], tmp_path,
                                    own_redis.url, "r", "--delay", str(DELAY), "--pages",
                                    str(pages), "--concurrency", "4", "--again") as procs:
            runs = [asyncio.ensure_future(finish(p, 120)) for p in procs]
            await pages_asked(srv, hosts * pages // 3)
            await asyncio.to_thread(own_redis.restart)  # back empty
            results = await asyncio.gather(*runs)
        # Every worker said what happened, and what to do.
        for w, result in enumerate(results):
            assert "gone from Redis" in result["lost"] and "start it again" in result["lost"]
            said = (tmp_path / f"crawler{w}.stderr").read_text()
            assert "lost its data" in said, said
        # Every URL was asked for (those done before the restart again, after it) ...
        assert len(requests_by_page(srv)) == hosts * pages
        # ... and no host sooner than the delay after its request before, robots.txt
        # included, whichever worker sent them.
        for h in range(hosts):
            stats = srv.host_stats(h)
            times = sorted(stats.robots_times + stats.page_times)
            gaps = [b - a for a, b in itertools.pairwise(times)]
            assert min(gaps) >= DELAY, (h, gaps)
