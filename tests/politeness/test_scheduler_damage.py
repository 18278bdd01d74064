"""The scheduler given a HostState a store damaged: no slot lost, no endless wait."""

from __future__ import annotations

import math
import time

import pytest

from robotgate import MemoryStore, RobotGate, RobotsEntry
from robotgate.policy.pacing import Pacing
from robotgate.politeness.scheduler import Scheduler
from robotgate.records import HostState, Outcome
from tests.support.clock import Clock


def make(clock: Clock, **kwargs: object) -> Scheduler:
    return Scheduler(Pacing(delay=1.0), clock=clock, wall=clock.now_wall,
                     **kwargs)  # type: ignore[arg-type]


def test_a_failing_visit_count_gives_the_slots_back() -> None:
    clock = Clock()
    s = make(clock, max_concurrency=1)
    state = HostState("host:a.example")
    state.visits = "lots"  # type: ignore[assignment]  # what a damaged row held
    group = s.add(state.origin, state)
    with pytest.raises(TypeError):
        s.try_start(group, 1.0)
    # Nothing counts as started: the next try on a mended state goes through.
    assert (group.free, group.active, s.pages) == (1, 0, 0)
    assert s.global_slots is not None and s.global_slots.busy == 0
    state.visits = 3
    assert s.try_start(group, 1.0)
    assert (group.active, state.visits, s.pages) == (1, 4, 1)


async def test_a_failing_visit_count_in_start_leaves_the_group_idle() -> None:
    clock = Clock()
    s = make(clock)
    state = HostState("host:a.example")
    state.visits_since_check = "x"  # type: ignore[assignment]
    group = s.add(state.origin, state)
    with pytest.raises(TypeError):
        await s.start(group, 1.0)
    assert group.idle() and group.free == 1


@pytest.mark.parametrize("stored", [math.inf, 1e12])
def test_a_stored_wait_beyond_the_policy_is_cut_to_its_longest(stored: float) -> None:
    clock = Clock()
    s = make(clock)
    assert s.longest_wait == 3600.0  # max_backoff, above delay and max_crawl_delay
    state = HostState("host:a.example", next_allowed=stored)
    group = s.add(state.origin, state)
    assert s.wait_seconds(group) == pytest.approx(3600.0)
    clock.advance(3600.0)
    assert s.try_start(group, 1.0)


def test_a_stored_wait_within_the_policy_is_kept() -> None:
    clock = Clock()
    s = make(clock)
    state = HostState("host:a.example", next_allowed=clock.now_wall() + 120.0)
    group = s.add(state.origin, state)
    assert s.wait_seconds(group) == pytest.approx(120.0)
    assert not s.try_start(group, 1.0)


async def test_the_gate_reports_the_cut_wait_for_a_stored_far_future() -> None:
    store = MemoryStore()
    now = time.time()
    await store.save_robots(RobotsEntry("http://127.0.0.1:9", Outcome.OK, now, now + 3600, 200,
                                        b"User-agent: *\nAllow: /\n", "text/plain"))
    await store.save_host(HostState("host:127.0.0.1", next_allowed=1e12))  # year 33658
    async with RobotGate("T/1", store=store, delay=0) as gate:
        assert (await gate.decide("http://127.0.0.1:9/x")).allowed
        assert 3500 < gate.host_wait("http://127.0.0.1:9/x") <= 3600
