"""A Redis restarted without its data: no server is asked by any worker sooner than
its interval after the last request made before the restart.

Two workers (two gates, each with its own RedisStore) crawl the same loopback
hosts; the redis-server of the test is stopped and started again empty
(``testbed/redis_server.py`` keeps nothing on disk) between their requests.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sys
import time
from pathlib import Path

import pytest

from robotgate import RobotGate
from robotgate.store.base import SlotAhead
from robotgate.store.redis import RedisStore
from testbed.redis_server import RedisServer
from testbed.server import BenchServer, HostPlan

AGENT = "TestBot/1.0"
# Long enough that the restart and the reconnection (0.64 s seen under load) fit in half of
# it, so that the requests after them would come too soon if the loss were not noticed.
DELAY = 2.0


def requests_of(srv: BenchServer, i: int) -> list[float]:
    stats = srv.host_stats(i)
    return sorted(stats.robots_times + stats.page_times)


@pytest.mark.soak
@pytest.mark.slow
async def test_workers_keep_intervals_across_a_redis_restarted_empty(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture,
) -> None:
    n = 3
    caplog.set_level(logging.WARNING, "robotgate.store.redis.store")
    stores = [RedisStore(own_redis.url, prefix="w") for _ in range(2)]
    async with BenchServer([HostPlan("allow")] * n) as srv, RobotGate(
        AGENT, delay=DELAY, store=stores[0]
    ) as one, RobotGate(AGENT, delay=DELAY, store=stores[1]) as two:
        # Worker one asks each host; worker two has asked host 0 (it knows its group).
        await asyncio.gather(*(one.fetch(srv.url(i, "/page/0")) for i in range(n)),
                             two.fetch(srv.url(0, "/page/1")))
        asked = time.monotonic()
        await asyncio.to_thread(own_redis.restart)  # back empty: no tat, no robots.txt
        for store in stores:
            await store.load_robots("https://warm.example")  # connected again
        assert time.monotonic() - asked < DELAY / 2  # the next requests would be too soon
        # Both ask every host again at once, then once more.  By design this takes about
        # 12 s (no slot before the 6 s horizon, then robots.txt and two pages 2 s apart);
        # the bound only ends a hang (15 s was passed under CI's load: no speed is asserted).
        await asyncio.wait_for(asyncio.gather(
            *(gate.fetch(srv.url(i, f"/page/{p}"))
              for i in range(n) for gate, p in ((two, 2), (one, 3)))), 90)
        for i in range(n):
            times = requests_of(srv, i)
            gaps = [b - a for a, b in itertools.pairwise(times)]
            assert min(gaps) >= DELAY, (i, gaps)
    assert "lost its data" in caplog.text


async def test_a_worker_that_opens_after_the_restart_does_not_hide_it(
    own_redis: RedisServer,
) -> None:
    # A new worker makes a new epoch at once; a worker of before still notices.
    async with RedisStore(own_redis.url, prefix="w") as old:
        assert await old.reserve("host:a", 5.0) == 0
        await asyncio.to_thread(own_redis.restart)
        async with RedisStore(own_redis.url, prefix="w") as new:
            assert await new.reserve("host:b", 5.0) == 0  # it knows of nothing lost
            assert old.unrecorded_until == 0.0
            # No slot before the horizon (6 s: slots and leases handed out before the
            # loss end within it) and the interval have passed since the loss was found:
            # none is granted now, it is due in 11 s, within the horizon in 5 s.
            slot = await old.reserve_slot("host:a", 5.0)
            assert not slot.granted and 4.5 < slot.wait <= 5.0
            assert old.unrecorded_until > 0
            # From then on every worker holds any server it had no slot for.
            with pytest.raises(SlotAhead) as held:
                await new.reserve("host:c", 0.5)
            assert 0.0 < held.value.retry_in <= 0.5


# -- the robots.txt fetch lock of a killed worker ------------------------------------

SRC = Path(__file__).resolve().parents[2] / "src"

# A worker with a short lock lease (the module's constant, set low for the test) that
# starts a robots.txt fetch and is killed during it.
FETCHER = r"""
import asyncio, sys
import robotgate.politeness.robots_cache as robots_cache
from robotgate import RobotGate
from robotgate.store.redis import RedisStore

robots_cache._LOCK_LEASE = 1.0

async def main(url, page):
    async with RobotGate("TestBot/1.0", delay=0, store=RedisStore(url, prefix="k")) as gate:
        await gate.fetch(page)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@pytest.mark.slow
async def test_lock_of_a_worker_killed_mid_fetch_lapses_with_its_lease(
    own_redis: RedisServer,
) -> None:
    # The lock lasts one short lease, renewed while the fetch goes on: a killed
    # worker's lock holds the next one up no longer (not 2 x timeout + 5 = 65 s).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    async with BenchServer([HostPlan("slow", slow_seconds=30)]) as srv:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", FETCHER, own_redis.url, srv.url(0, "/page/0"),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env)
        try:
            deadline = time.monotonic() + 15
            while not srv.host_stats(0).robots_requests:
                assert time.monotonic() < deadline, "the worker did not start its fetch"
                await asyncio.sleep(0.02)
            await asyncio.sleep(1.5)  # past one lease: the worker renewed its lock
            async with RedisStore(own_redis.url, prefix="k") as probe:
                assert await probe.lock_fetch(srv.base_url(0), 65) is None
        finally:
            proc.kill()
            await proc.wait()
        killed = time.monotonic()
        srv.set_plan(0, "allow")
        async with RobotGate(AGENT, delay=0, store=RedisStore(own_redis.url, prefix="k")) as gate:
            resp = await asyncio.wait_for(gate.fetch(srv.url(0, "/page/1")), 10)
            assert resp.status == 200
        times = srv.host_stats(0).robots_times
    assert len(times) == 2 and times[1] - killed < 3.0
