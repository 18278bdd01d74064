"""In a fleet, the first page after robots.txt waits the interval robots.txt just gave
(its Crawl-delay), as on one machine: judged by the server's kernel receive times."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from robotgate import Pacing, RobotGate
from robotgate.store.redis import RedisStore
from testbed.server import BenchServer, HostPlan

DELAY = 0.5
CRAWL_DELAY = 1.0


@pytest.mark.slow
async def test_the_first_page_after_robots_txt_waits_its_crawl_delay(
        redis_url: str, prefix: str) -> None:
    workers = 3
    async with BenchServer([HostPlan("crawl_delay", crawl_delay=CRAWL_DELAY, pages=8)]) as srv:
        stores = [RedisStore(redis_url, prefix=prefix) for _ in range(workers)]
        gates = [RobotGate("FenceBot/1.0", delay=DELAY, store=store,
                           pacing=Pacing(delay=DELAY, margin=0.01)) for store in stores]
        try:
            for gate in gates:
                await gate.open()

            async def get(gate: RobotGate, page: int) -> None:
                async with gate.fetch(srv.url(0, f"/page/{page}")) as resp:
                    await resp.read()

            await asyncio.gather(*(get(gates[w], w) for w in range(workers)))
        finally:
            for gate in gates:
                await gate.close()
        stats = srv.host_stats(0)
        assert len(stats.robots_times) == 1 and len(stats.page_times) == workers
        times = sorted(stats.robots_times + stats.page_times)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert min(gaps) >= CRAWL_DELAY, gaps
