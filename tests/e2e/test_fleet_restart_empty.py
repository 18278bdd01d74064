"""Redis restarts empty under a fleet pacing by slots (``testbed/fleet.py``), delay 2 s:
slots granted before the loss may still be used after it, so no slot is granted after
it until those surely ended; a worker started after the restart fetches robots.txt
anew (Redis has no entry), and that request keeps the delay too.  Judged by the loopback
server's kernel receive times."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from testbed.fleet import Fleet, split_urls
from testbed.redis_server import RedisServer
from testbed.server import BenchServer, HostPlan, page_paths

DELAY = 2.0


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@pytest.mark.slow
async def test_no_host_is_asked_sooner_than_the_delay_across_an_empty_restart(
        own_redis: RedisServer, tmp_path: Path) -> None:
    hosts, pages, workers = 3, 8, 3
    async with BenchServer([HostPlan("allow", pages=pages)] * hosts) as srv:
        per_host = [[srv.url(h, p) for p in page_paths(pages)] for h in range(hosts)]
        # Every worker queues for every host: slots are granted a few intervals ahead.
        lists = split_urls(per_host, workers)
        first, late = tmp_path / "first", tmp_path / "late"
        first.mkdir()
        late.mkdir()
        async with Fleet(own_redis.url, "r", lists, first, tasks=50, delay=DELAY,
                         options=("--pacing-margin", "0.01")) as fleet:
            fleet.go()
            for _ in range(1500):  # two pages of each host asked for
                if sum(len(srv.host_stats(h).page_times) for h in range(hosts)) >= hosts * 2:
                    break
                await asyncio.sleep(0.02)
            await asyncio.to_thread(own_redis.restart)  # back empty
            # A worker of before finds the loss first (one started before that knows of
            # none: see docs/fleet.md).
            async with aioredis.Redis.from_url(own_redis.url) as raw:
                for _ in range(1500):
                    if await raw.exists("r:lost"):
                        break
                    await asyncio.sleep(0.02)
            # A worker new to the hosts: robots.txt is in no cache, its own or Redis's.
            async with Fleet(own_redis.url, "r", [[srv.url(h, f"/page/{pages}")
                                                   for h in range(hosts)]],
                             late, tasks=50, delay=DELAY,
                             options=("--pacing-margin", "0.01")) as newcomer:
                newcomer.go()
                joined = await newcomer.results(timeout=200)
            results = await fleet.results(timeout=200)
    assert all(r["answered"] == r["urls"] and r["errors"] == 0 for r in results), results
    assert joined[0]["robots_requests"] == hosts, joined
    for h in range(hosts):
        stats = srv.host_stats(h)
        assert len(stats.robots_times) == 2  # the first, and the newcomer's after the loss
        times = sorted(stats.robots_times + stats.page_times)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert min(gaps) >= DELAY, (h, [round(t - times[0], 3) for t in times])
