"""The scheduler (politeness/scheduler.py) on a fake clock: pacing, caps, back-off, eviction.

The synchronous parts (``try_start``, ``answered``, ``wait_seconds``, eviction)
run on the fake clock alone.  ``start`` sleeps on the real loop, so the async
tests only check *that* a request waits until the fake clock says it may go
(a wait never ends while the fake clock stands still), never how long it took.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time

import pytest

from robotgate.errors import GateClosed
from robotgate.policy.pacing import Pacing
from robotgate.politeness import scheduler as scheduler_module
from robotgate.politeness.fleet_slots import Slot
from robotgate.politeness.scheduler import Group, Scheduler, Slots
from robotgate.records import HostState
from tests.support.clock import WALL0, Clock


def make(clock: Clock, **kwargs: object) -> Scheduler:
    policy = kwargs.pop("policy", None) or Pacing(delay=1.0)
    return Scheduler(policy, clock=clock, wall=clock.now_wall, **kwargs)  # type: ignore[arg-type]


def group_of(s: Scheduler, key: str = "host:a.example") -> Group:
    return s.add(key, HostState(key))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


# -- Slots ----------------------------------------------------------------------------------


async def test_the_scheduler_reads_the_loops_own_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    # asyncio's loop.time() is time.monotonic(), read directly; a loop whose clock was
    # replaced (a time-travelling test loop) is read through that clock.
    plain = Scheduler(Pacing())
    before = time.monotonic()
    assert before <= plain.now() <= time.monotonic()
    monkeypatch.setattr(asyncio.BaseEventLoop, "time", lambda self: 2e9)
    assert Scheduler(Pacing()).now() == 2e9
    monkeypatch.setattr(asyncio.get_running_loop(), "time", lambda: 1e9)
    assert Scheduler(Pacing()).now() == 1e9


def test_slots_count() -> None:
    slots = Slots(2)
    assert slots.try_take() and slots.try_take() and not slots.try_take()
    assert slots.busy == 2
    slots.give()
    assert slots.busy == 1 and slots.try_take()


async def test_slots_hand_off_in_order() -> None:
    slots = Slots(1)
    assert slots.try_take()
    order: list[int] = []

    async def taker(i: int) -> None:
        await slots.take()
        order.append(i)

    tasks = [asyncio.ensure_future(taker(i)) for i in range(3)]
    await settle()
    assert order == [] and len(slots.waiters) == 3
    assert not slots.try_take()  # no overtaking the waiters
    for expected in ([0], [0, 1], [0, 1, 2]):
        slots.give()
        await settle()
        assert order == expected
    assert slots.free == 0
    await asyncio.gather(*tasks)


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    slots = Slots(1)
    assert slots.try_take()
    task = asyncio.ensure_future(slots.take())
    await settle()
    task.cancel()
    await settle()
    assert task.cancelled() and not slots.waiters
    slots.give()
    assert slots.free == 1


async def test_a_slot_handed_to_a_cancelled_waiter_is_passed_on() -> None:
    slots = Slots(1)
    assert slots.try_take()
    first = asyncio.ensure_future(slots.take())
    second = asyncio.ensure_future(slots.take())
    await settle()
    slots.give()  # handed to `first`...
    first.cancel()  # ...which is cancelled before it resumes
    await settle()
    assert first.cancelled()
    assert second.done() and not second.cancelled()  # the slot went on
    assert slots.free == 0
    slots.give()
    assert slots.free == 1


async def test_a_slot_handed_to_the_last_cancelled_waiter_is_freed() -> None:
    slots = Slots(1)
    assert slots.try_take()
    only = asyncio.ensure_future(slots.take())
    await settle()
    slots.give()
    only.cancel()
    await settle()
    assert only.cancelled() and slots.free == 1 and not slots.waiters


async def test_a_waiter_cancelled_in_the_turn_its_slot_is_given_ends_cancelled() -> None:
    slots = Slots(1)
    assert slots.try_take()
    task = asyncio.ensure_future(slots.take())
    await settle()
    task.cancel()  # a timeout firing...
    slots.give()  # ...in the same turn as the holder lets go: give() drops the waiter
    with pytest.raises(asyncio.CancelledError):
        await task
    assert slots.free == 1 and not slots.waiters


# -- pacing on the fake clock ------------------------------------------------------------


def test_first_request_starts_at_once_then_waits_the_interval() -> None:
    clock = Clock()
    s = make(clock)
    g = group_of(s)
    assert s.try_start(g, 1.0)
    assert g.active == 1 and s.stats["pages"] == 1
    s.done(g)
    assert not s.try_start(g, 1.0)
    assert s.wait_seconds(g, 1.0) == 1.0
    clock.advance(0.6)
    assert s.wait_seconds(g, 1.0) == pytest.approx(0.4)
    assert not s.try_start(g, 1.0)
    clock.advance(0.4)
    assert s.wait_seconds(g, 1.0) == 0.0
    assert s.try_start(g, 1.0)


def test_pacing_counts_from_the_answer_s_arrival() -> None:
    clock = Clock()
    s = make(clock)
    g = group_of(s)
    assert s.try_start(g, 1.0)
    clock.advance(5.0)  # the server took 5 s to answer
    assert s.answered(g, 200, None) is None
    s.done(g)
    assert s.wait_seconds(g, 1.0) == 1.0  # a full interval from the answer, not 0
    clock.advance(0.5)
    assert not s.try_start(g, 1.0)
    clock.advance(0.5)
    assert s.try_start(g, 1.0)


def test_an_early_answer_does_not_move_last_back() -> None:
    clock = Clock()
    s = make(clock)
    g = group_of(s)
    assert s.try_start(g, 1.0)
    started = g.last
    clock.t -= 1.0  # a clock that went back (another task's view)
    s.answered(g, 200, None)
    assert g.last == started


def test_interval_of_each_request_is_its_own() -> None:
    # Crawl-delay is per origin; the group keeps the last request's interval.
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.5))
    g = group_of(s)
    assert s.try_start(g, 5.0)
    s.answered(g, 200, None)
    s.done(g)
    clock.advance(1.0)
    assert s.try_start(g, 0.5)  # the other origin's interval is 0.5
    assert g.interval == 0.5
    s.done(g)
    assert s.wait_seconds(g) == 0.5


def test_state_records_visits_and_next_allowed() -> None:
    clock = Clock()
    s = make(clock)
    g = group_of(s)
    assert s.try_start(g, 2.0)
    assert g.state.visits == 1 and g.state.visits_since_check == 1
    assert g.state.last_visit == WALL0
    assert g.state.next_allowed == WALL0 + 2.0
    clock.advance(3.0)
    s.answered(g, 200, None)
    assert g.state.next_allowed == WALL0 + 3.0 + 2.0


def test_margin_is_added_to_the_gap() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=1.0, margin=0.25))
    g = group_of(s)
    assert s.try_start(g, 1.0)
    s.done(g)
    assert s.wait_seconds(g, 1.0) == 1.25


def test_zero_interval_lets_requests_start_back_to_back() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.0), max_per_group=3)
    g = group_of(s)
    assert s.try_start(g, 0.0) and s.try_start(g, 0.0) and s.try_start(g, 0.0)
    assert not s.try_start(g, 0.0)  # the cap
    assert g.active == 3 and g.busy == 3


# -- caps ------------------------------------------------------------------------------------


def test_per_group_cap() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.0), max_per_group=2)
    g = group_of(s)
    assert s.try_start(g, 0.0) and s.try_start(g, 0.0)
    assert not s.try_start(g, 0.0)
    s.done(g)
    assert s.try_start(g, 0.0)
    other = group_of(s, "host:b.example")
    assert s.try_start(other, 0.0)  # caps are per group


def test_global_cap_across_groups() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.0), max_per_group=5, max_concurrency=2)
    a, b, c = (group_of(s, f"host:{n}.example") for n in "abc")
    assert s.try_start(a, 0.0) and s.try_start(b, 0.0)
    assert not s.try_start(c, 0.0)
    assert c.busy == 0  # the group slot taken for the try was given back
    s.done(a)
    assert s.try_start(c, 0.0)
    assert s.global_slots is not None and s.global_slots.busy == 2


def test_a_request_that_is_not_due_takes_no_slot() -> None:
    clock = Clock()
    s = make(clock, max_concurrency=1)
    g = group_of(s)
    assert s.try_start(g, 1.0)
    s.done(g)
    assert not s.try_start(g, 1.0)
    assert g.busy == 0 and s.global_slots is not None and s.global_slots.busy == 0


def test_try_start_does_not_overtake_a_waiting_request() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.0))
    g = group_of(s)
    g.waiting = 1
    assert not s.try_start(g, 0.0)


# -- back-off --------------------------------------------------------------------------------


def test_429_without_retry_after_widens_and_successes_narrow() -> None:
    clock = Clock()
    policy = Pacing(delay=0.1, backoff_base=0.5, backoff_recovery=4)
    s = make(clock, policy=policy)
    g = group_of(s)
    gaps = []
    for code in (429, 429, 200, 200, 200, 200, 200):
        clock.advance(100.0)
        assert s.try_start(g, 0.1)
        until = s.answered(g, code, None)
        s.done(g)
        gaps.append(s.gap(g, 0.1))
        if code == 429:
            assert until == clock.wall + g.backoff.extra
            assert g.state.next_allowed >= until
        else:
            assert until is None
    assert gaps == [0.5, 1.0, 0.75, 0.5, 0.25, 0.1, 0.1]
    assert s.stats["backoffs"] == 2


def test_429_holds_the_group_for_the_widened_gap() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=1.0))
    g = group_of(s)
    assert s.try_start(g, 1.0)
    s.answered(g, 429, None)
    s.done(g)
    wait = s.wait_seconds(g)
    assert wait > 1.0  # wider than the configured interval
    clock.advance(wait - 0.01)
    assert not s.try_start(g, 1.0)
    clock.advance(0.01)
    assert s.try_start(g, 1.0)


def test_503_without_retry_after_widens_but_500_does_not() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.1))
    g = group_of(s)
    assert s.try_start(g, 0.1)
    assert s.answered(g, 500, None) is None
    assert g.backoff.extra == 0.0
    assert s.answered(g, 503, None) is not None
    assert g.backoff.extra > 0.1


def test_one_servers_back_off_leaves_the_others_alone() -> None:
    # Groups share one calm Backoff until they need their own: it must never change.
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.1))
    hot, calm = group_of(s, "host:hot"), group_of(s, "host:calm")
    s.answered(hot, 429, None)
    s.answered(hot, 503, None)
    assert hot.backoff.extra > 0.1 and hot.backoff is not calm.backoff
    assert calm.backoff.extra == 0.0 and s.gap(calm, 0.1) == 0.1
    assert group_of(s, "host:new").backoff.extra == 0.0


def test_back_off_is_capped_by_max_backoff() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=1.0, max_backoff=5.0))
    g = group_of(s)
    for _ in range(10):
        s.answered(g, 429, None)
    assert g.backoff.extra == 5.0 and s.gap(g, 1.0) == 5.0


def test_back_off_settles_against_a_rate_limited_server() -> None:
    # A server that takes one request per 0.2 s and answers 429 to anything faster;
    # the requester asks as soon as the scheduler lets it (issue 14: was 50% 429s).
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.05))
    g = group_of(s)
    last_ok = -1e9
    codes = []
    for _ in range(400):
        clock.advance(max(s.wait_seconds(g, 0.05), 0.001))
        assert s.try_start(g, 0.05)
        code = 200 if clock.t - last_ok >= 0.2 else 429
        if code == 200:
            last_ok = clock.t
        codes.append(code)
        s.answered(g, code, None)
        s.done(g)
    share = codes[100:].count(429) / len(codes[100:])
    assert share <= 0.2


@pytest.mark.parametrize("code", [429, 503])
def test_retry_after_pauses_and_wins(code: int) -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=1.0))
    g = group_of(s)
    assert s.try_start(g, 1.0)
    until = s.answered(g, code, "30")
    s.done(g)
    assert until == clock.wall + 30.0
    assert g.backoff.extra == 0.0  # the server said when: no guessing
    assert g.paused_until == clock.t + 30.0
    assert s.wait_seconds(g) == 30.0
    assert g.state.next_allowed == clock.wall + 30.0
    clock.advance(29.9)
    assert not s.try_start(g, 1.0)
    clock.advance(0.1)
    assert s.try_start(g, 1.0)


def test_retry_after_as_a_date() -> None:
    clock = Clock()
    clock.wall = 1445412470.0
    s = make(clock)
    g = group_of(s)
    s.answered(g, 503, "Wed, 21 Oct 2015 07:28:00 GMT")
    assert s.wait_seconds(g) == pytest.approx(10.0)


def test_retry_after_is_capped_by_max_backoff() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=1.0, max_backoff=60.0))
    g = group_of(s)
    assert s.answered(g, 429, "86400") == clock.wall + 60.0
    assert s.wait_seconds(g) == 60.0


@pytest.mark.parametrize("value", ["²", "soon", "-5", "1.5",
                                   "Mon, 01 Jan 99999999999999999999 00:00:00 GMT"])
def test_unparseable_retry_after_backs_off_instead(value: str) -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.1))
    g = group_of(s)
    until = s.answered(g, 429, value)
    assert until is not None and g.backoff.extra > 0.1 and g.paused_until == -float("inf")


def test_a_short_retry_after_does_not_shorten_the_interval() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=5.0))
    g = group_of(s)
    assert s.try_start(g, 5.0)
    s.answered(g, 429, "1")
    s.done(g)
    assert s.wait_seconds(g) == 5.0


def test_pause() -> None:
    clock = Clock()
    s = make(clock)
    g = group_of(s)
    s.pause(g, 7.0)
    s.pause(g, 3.0)  # never shortens a pause
    assert s.wait_seconds(g) == 7.0
    assert not s.try_start(g, 0.0)


@pytest.mark.parametrize(("factor", "wait"), [(3.0, 6.0), (None, 0.1)],
                         ids=["k times the response time", "ignored unless asked"])
def test_latency_factor(factor: float | None, wait: float) -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.1, latency_factor=factor))
    g = group_of(s)
    sent = clock.t
    assert s.try_start(g, 0.1)
    clock.advance(2.0)
    s.answered(g, 200, None, sent_at=sent)
    s.done(g)
    assert s.wait_seconds(g, 0.1) == pytest.approx(wait)


# -- groups from stored state and eviction -------------------------------------------------


def test_a_stored_next_allowed_is_honoured() -> None:
    clock = Clock()
    s = make(clock)
    g = s.add("host:a.example", HostState("host:a.example", next_allowed=WALL0 + 12.0))
    assert s.wait_seconds(g, 1.0) == 12.0
    assert not s.try_start(g, 1.0)
    past = s.add("host:b.example", HostState("host:b.example", next_allowed=WALL0 - 50.0))
    assert s.try_start(past, 1.0)


def test_add_returns_the_existing_group() -> None:
    clock = Clock()
    s = make(clock)
    g = group_of(s)
    assert s.add(g.key, HostState(g.key)) is g and len(s) == 1


def test_add_with_last_paces_from_it() -> None:
    clock = Clock()
    s = make(clock)
    g = s.add("host:a.example", HostState("host:a.example"), last=clock.t - 0.25)
    assert s.wait_seconds(g, 1.0) == pytest.approx(0.75)


def test_groups_stay_bounded_and_busy_groups_are_never_evicted() -> None:
    clock = Clock()
    s = make(clock, max_groups=10)
    busy = group_of(s, "host:busy.example")
    assert s.try_start(busy, 1.0)
    waiting = group_of(s, "host:waiting.example")
    waiting.waiting = 1
    for i in range(1000):
        g = group_of(s, f"host:h{i}.example")
        assert s.try_start(g, 1.0)
        s.answered(g, 200, None)
        s.done(g)
        assert len(s) <= 10
    assert s.get("host:busy.example") is busy
    assert s.get("host:waiting.example") is waiting
    assert s.get("host:h0.example") is None


def test_an_evicted_group_keeps_its_pacing_through_its_state() -> None:
    clock = Clock()
    s = make(clock, max_groups=1)
    a = group_of(s, "host:a.example")
    assert s.try_start(a, 30.0)  # Crawl-delay 30 pending
    s.answered(a, 200, None)
    s.done(a)
    group_of(s, "host:b.example")  # evicts a
    assert s.get("host:a.example") is None
    again = s.add("host:a.example", a.state)  # the store gives the state back
    assert not s.try_start(again, 30.0)
    assert s.wait_seconds(again, 30.0) == pytest.approx(30.0)


def test_eviction_prefers_a_group_with_no_wait_pending() -> None:
    clock = Clock()
    s = make(clock, max_groups=3)
    pending = group_of(s, "host:pending.example")
    assert s.try_start(pending, 60.0)
    s.done(pending)
    group_of(s, "host:due1.example")
    group_of(s, "host:due2.example")
    group_of(s, "host:new.example")
    assert len(s) == 3 and s.get("host:pending.example") is pending


def test_an_evicted_groups_back_off_survives_in_its_host_state() -> None:
    # Its wait is over, so it may be evicted; made again from its HostState (the
    # memory store keeps that object), it must not ask at the plain interval again.
    clock = Clock()
    s = make(clock, max_groups=1)
    state = HostState("host:limited.example")
    limited = s.add(state.origin, state)
    assert s.try_start(limited, 1.0)
    s.answered(limited, 429, None)
    s.done(limited)
    settled = limited.backoff.extra
    assert settled > 1.0 and (state.backoff, state.backoff_peak) == (settled, settled)
    clock.advance(settled + 5.0)  # its wait is over, the back-off is not
    group_of(s, "host:other.example")
    assert s.get(state.origin) is None
    again = s.add(state.origin, state)
    assert again is not limited and s.gap(again, 1.0) == settled
    assert s.try_start(again, 1.0)
    s.answered(again, 200, None)  # a success narrows the restored back-off
    s.done(again)
    assert 1.0 < again.backoff.extra < settled and state.backoff == again.backoff.extra


def test_stored_back_off_is_restored_within_this_policy() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=1.0, max_backoff=10.0))
    kept = s.add("host:kept", HostState("host:kept", backoff=4.0, backoff_peak=8.0))
    assert (kept.backoff.extra, kept.backoff.peak) == (4.0, 8.0) and s.gap(kept, 1.0) == 4.0
    huge = s.add("host:huge", HostState("host:huge", backoff=1e300, backoff_peak=1e300))
    assert s.gap(huge, 1.0) == 10.0  # damage or another policy: never past max_backoff
    nan = s.add("host:nan", HostState("host:nan", backoff=float("nan"), backoff_peak=-1.0))
    assert s.gap(nan, 1.0) == 1.0
    calm = s.add("host:calm", HostState("host:calm"))
    assert calm.backoff.extra == 0.0 and s.gap(calm, 1.0) == 1.0


@pytest.mark.slow
def test_eviction_work_per_add_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 12 item 11: 20,000 origins, each with a Crawl-delay pending, must not
    make every new origin cost a sweep of the table."""
    looked_at = [0]

    class CountingGroup(Group):
        def idle(self) -> bool:
            looked_at[0] += 1
            return super().idle()

    monkeypatch.setattr(scheduler_module, "Group", CountingGroup)
    clock = Clock()
    s = make(clock, max_groups=1000)
    busy = [group_of(s, f"host:busy{i}.example") for i in range(5)]
    for g in busy:
        assert s.try_start(g, 60.0)  # in flight the whole time
    adds = 20_000
    worst = 0
    for i in range(adds):
        before = looked_at[0]
        g = group_of(s, f"host:h{i}.example")
        worst = max(worst, looked_at[0] - before)
        assert s.try_start(g, 60.0)  # Crawl-delay 60: pending for the whole test
        s.answered(g, 200, None)
        s.done(g)
        clock.advance(0.001)
        assert len(s) <= 1000
    assert all(s.get(g.key) is g for g in busy)
    # A few groups looked at per add, however large the table (1,000 here).
    assert worst <= 32
    assert looked_at[0] <= 16 * adds


# -- async waits (real sleeps, fake clock decides) ------------------------------------------


def after_one_request(clock: Clock, delay: float, **kwargs: object) -> tuple[Scheduler, Group]:
    """A scheduler whose group has just had a request: the next waits ``delay``."""
    s = make(clock, policy=Pacing(delay=delay), **kwargs)
    g = group_of(s)
    assert s.try_start(g, delay)
    s.done(g)
    return s, g


async def test_start_waits_until_the_clock_says_so() -> None:
    clock = Clock()
    s, g = after_one_request(clock, 0.02)
    task = asyncio.ensure_future(s.start(g, 0.02))
    await asyncio.sleep(0.1)  # several real intervals: the fake clock stood still
    assert not task.done() and g.waiting == 1
    assert not s.try_start(g, 0.02)  # no overtaking the waiter
    clock.advance(0.02)
    await asyncio.wait_for(task, 10)
    assert g.active == 1 and g.waiting == 0 and s.stats["pages"] == 2


async def test_start_waits_for_the_group_slot() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.0))
    g = group_of(s)
    assert s.try_start(g, 0.0)
    task = asyncio.ensure_future(s.start(g, 0.0))
    await settle()
    assert not task.done()
    s.done(g)
    await asyncio.wait_for(task, 10)
    assert g.active == 1 and g.busy == 1


async def test_start_waits_for_the_global_slot() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.0), max_concurrency=1)
    a, b = group_of(s, "host:a.example"), group_of(s, "host:b.example")
    assert s.try_start(a, 0.0)
    task = asyncio.ensure_future(s.start(b, 0.0))
    await settle()
    assert not task.done() and b.busy == 1
    s.done(a)
    await asyncio.wait_for(task, 10)
    assert b.active == 1 and s.global_slots is not None and s.global_slots.busy == 1


async def test_start_honours_a_pause() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.0))
    g = group_of(s)
    s.pause(g, 0.02)
    task = asyncio.ensure_future(s.start(g, 0.0))
    await asyncio.sleep(0.1)
    assert not task.done()
    clock.advance(0.02)
    await asyncio.wait_for(task, 10)


async def test_a_cancelled_start_gives_its_slots_back() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.02), max_concurrency=3)
    g = group_of(s)
    assert s.try_start(g, 0.02)
    s.done(g)
    task = asyncio.ensure_future(s.start(g, 0.02))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert g.waiting == 0 and g.active == 0 and g.busy == 0
    assert s.global_slots is not None and s.global_slots.busy == 0
    assert g.idle()


async def test_waiters_start_one_interval_apart() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.01))
    g = group_of(s)
    starts: list[float] = []

    async def one() -> None:
        await s.start(g, 0.01)
        starts.append(clock.t)
        s.answered(g, 200, None)
        s.done(g)

    tasks = [asyncio.ensure_future(one()) for _ in range(3)]
    for _ in range(200):
        if len(starts) == 3:
            break
        await asyncio.sleep(0.005)
        clock.advance(0.005)
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(gap >= 0.01 - 1e-9 for gap in gaps)


async def test_fleet_reserve_replaces_the_local_wait() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=5.0))
    g = group_of(s)
    assert s.try_start(g, 5.0)
    s.done(g)
    asked: list[tuple[str, float]] = []

    granted = Slot()  # the fleet's slot is now

    async def reserve(key: str, gap: float) -> Slot | None:
        asked.append((key, gap))
        return granted

    assert await asyncio.wait_for(s.start(g, 5.0, reserve), 10) is granted  # the request's
    assert asked == [(g.key, 5.0)] and g.active == 1


async def test_fleet_reserve_none_falls_back_to_local_pacing() -> None:
    clock = Clock()
    s = make(clock, policy=Pacing(delay=0.02))
    g = group_of(s)
    assert s.try_start(g, 0.02)
    s.done(g)

    async def reserve(key: str, gap: float) -> Slot | None:
        return None

    task = asyncio.ensure_future(s.start(g, 0.02, reserve))
    await asyncio.sleep(0.1)
    assert not task.done()
    clock.advance(0.02)
    await asyncio.wait_for(task, 10)


# -- close ---------------------------------------------------------------------------------


async def test_close_ends_the_waits_for_a_turn_with_gate_closed() -> None:
    # The clock stands still: without close() the waits would never end.
    s, g = after_one_request(Clock(), 10, max_concurrency=5)
    waiters = [asyncio.ensure_future(s.start(g, 10)) for _ in range(3)]
    await settle()
    assert g.waiting == 3
    s.close()
    for waiter in waiters:
        with pytest.raises(GateClosed) as closed:
            await asyncio.wait_for(waiter, 10)
        # Raised in place of the cancel, whose traceback it leaves out (in both builds).
        assert closed.value.__context__ is None or closed.value.__suppress_context__
    assert g.waiting == 0 and g.free == g.size and not g.waiters
    assert s.global_slots is not None and s.global_slots.free == 5
    with pytest.raises(GateClosed):
        await s.start(g, 10)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.uncancel is 3.11's")
async def test_a_wait_its_owner_cancels_stays_cancelled_when_closed_too() -> None:
    s, g = after_one_request(Clock(), 10)
    waiter = asyncio.ensure_future(s.start(g, 10))
    await settle()
    waiter.cancel()
    s.close()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert waiter.cancelled() and g.waiting == 0
