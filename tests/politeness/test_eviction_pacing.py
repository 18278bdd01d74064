"""More servers than ``max_origins`` inside one interval: a server whose group (and
host state, and robots.txt entry) was evicted is still not asked before its
interval has passed, on loopback, end to end, and in the scheduler alone."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from robotgate import Network, RobotGate
from robotgate.policy.pacing import Pacing
from robotgate.politeness.scheduler import Scheduler
from robotgate.records import HostState
from testbed.server import BenchServer, HostPlan

AGENT = "TestBot/1.0"
CRAWL_DELAY = 1.5
DELAY = 0.2


def all_requests(srv: BenchServer, i: int) -> list[float]:
    stats = srv.host_stats(i)
    return sorted(stats.robots_times + stats.page_times)


@pytest.mark.slow
async def test_evicted_servers_keep_their_crawl_delay() -> None:
    n, kept = 6, 2
    plans = [HostPlan("crawl_delay", crawl_delay=CRAWL_DELAY)] * n
    async with BenchServer(plans) as srv, RobotGate(
        AGENT, delay=DELAY, network=Network(max_origins=kept)
    ) as gate:

        async def fetch(i: int, page: int) -> None:
            await gate.fetch(srv.url(i, f"/page/{page}"))

        # Hosts 0-2 first; then 3-5 come, whose groups push those of 0-2 out (and
        # their host state and robots.txt entries out of the memory store) while
        # their Crawl-delay is pending, and 0-2 are asked again meanwhile.
        await asyncio.wait_for(asyncio.gather(*(fetch(i, 0) for i in range(3))), 10)
        await asyncio.wait_for(asyncio.gather(
            *(fetch(i, 0) for i in range(3, n)), *(fetch(i, 1) for i in range(3))), 10)
        for i in range(n):
            times = all_requests(srv, i)
            gaps = [b - a for a, b in itertools.pairwise(times)]
            assert gaps and min(gaps) >= CRAWL_DELAY, (i, gaps)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_scheduler_keeps_an_evicted_groups_last_request_and_interval() -> None:
    clock = Clock()
    scheduler = Scheduler(Pacing(delay=1.0), max_groups=2, clock=clock,
                          wall=lambda: clock.now + 1e6)
    a = scheduler.add("host:a", HostState("host:a"))
    assert scheduler.try_start(a, 10.0)  # a page with Crawl-delay 10
    scheduler.answered(a, 200, None)
    scheduler.done(a)
    clock.now += 1
    # A robots.txt request only: no interval of its own yet (its Crawl-delay unknown).
    b = scheduler.add("host:b", HostState("host:b"))
    assert scheduler.try_start(b, 1.0, page=False)
    scheduler.done(b)
    clock.now += 1
    c = scheduler.add("host:c", HostState("host:c"))
    assert scheduler.try_start(c, 1.0)  # pending too: a and b go first
    scheduler.done(c)
    scheduler.add("host:d", HostState("host:d"))
    assert scheduler.get("host:a") is None and scheduler.get("host:b") is None
    # Made again from a state that knows nothing (the store dropped it too).
    a2 = scheduler.add("host:a", HostState("host:a"))
    b2 = scheduler.add("host:b", HostState("host:b"))
    assert scheduler.wait_seconds(a2, 10.0) == 8.0
    assert not scheduler.try_start(a2, 10.0)
    assert scheduler.wait_seconds(b2, 5.0) == 4.0  # its Crawl-delay, once known, holds
    clock.now += 8
    assert scheduler.try_start(a2, 10.0)


def test_evicted_groups_are_forgotten_once_no_wait_is_pending() -> None:
    clock = Clock()
    scheduler = Scheduler(Pacing(delay=1.0, max_crawl_delay=5.0), max_groups=1,
                          clock=clock)
    for i in range(100):
        group = scheduler.add(f"host:{i}", HostState(f"host:{i}"))
        assert scheduler.try_start(group, 1.0)
        scheduler.done(group)
        clock.now += 0.5
    # Only the evictions of the last interval or so are kept aside: bounded memory.
    assert len(scheduler._evicted) <= 4
