"""Fleet slots (politeness/fleet_slots.py) against a fake store on a fake clock.

The fake store plays the Redis pacing script: it grants ``max(now, tat)`` and
moves ``tat`` one interval on, at a moment of the round trip the test chooses
(``up`` seconds after the request, ``down`` before the reply).  The server's
clock is the test's clock, so a request's distance to the next one is exact.
"""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest

from robotgate.politeness.fleet_slots import FleetSlots, LateSlot, LeaseFence, Slot
from robotgate.store.base import SlotAhead, Slots
from robotgate.store.leases import LapsedLease, Leases
from tests.support.clock import Clock

KEY = "host:fleet.example"
GAP = 0.3


class SlotServer(Slots):
    """``reserve`` as the Redis script does it, on ``clock``, with a chosen round trip."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.tat = 0.0
        self.up = self.down = 0.0005
        self.asked: list[float] = []  # the intervals asked for

    async def reserve(self, origin: str, interval: float, slack: float = 0.0) -> float:
        self.asked.append(interval)
        self.clock.advance(self.up)
        now = self.clock()
        start = max(now, self.tat)
        self.tat = start + interval
        self.clock.advance(self.down)
        return start - now


def setup() -> tuple[Clock, SlotServer, FleetSlots]:
    clock = Clock()
    server = SlotServer(clock)
    return clock, server, FleetSlots(server, clock=clock)


async def take(fleet: FleetSlots, clock: Clock, lag: float = 0.0) -> Slot | None:
    """Reserve, sleep the wait, then try to leave ``lag`` late: the slot if it went out."""
    slot = await fleet.reserve(KEY, GAP)
    assert slot is not None
    clock.advance(slot.wait + lag)
    try:
        slot.check(clock())
    except LateSlot:
        fleet.missed(slot)
        return None
    fleet.on_time()
    return slot


async def test_one_slow_reply_does_not_widen_later_slots() -> None:
    clock, server, fleet = setup()
    assert await take(fleet, clock) is not None
    # Redis stalls for 1.5 s: the slot is lost (it may have begun before the stall).
    server.up = 1.5
    assert await take(fleet, clock) is None
    server.up = 0.0005
    # The stall was the store's, not this loop's: the next slots ask for the usual width.
    for _ in range(5):
        assert await take(fleet, clock) is not None
    assert server.asked[-1] < GAP + 0.03
    assert fleet.slack == pytest.approx(0.01)
    assert fleet.late == 1


async def test_slow_reply_does_not_move_the_deadline() -> None:
    # Granted at once, answered a second later: the slot may have begun a second ago.
    clock, server, fleet = setup()
    server.tat = clock() + 0.2
    server.up, server.down = 0.0, 1.0
    asked = clock()
    slot = await fleet.reserve(KEY, GAP)
    assert slot is not None and slot.wait == pytest.approx(0.2)
    # Leaving the time its bytes take to the server before the slot ends.
    assert slot.deadline == pytest.approx(asked + 0.2 + slot.slack - 0.001)
    with pytest.raises(LateSlot):
        slot.check(clock() + 0.2)


async def test_loop_lateness_is_still_learnt() -> None:
    clock, server, fleet = setup()
    assert await take(fleet, clock, lag=0.25) is None
    assert fleet.slack == pytest.approx(0.25, abs=0.002)
    assert await take(fleet, clock, lag=0.2) is not None
    assert server.asked[-1] >= GAP + 0.25


async def test_store_slow_for_good_is_learnt() -> None:
    # Every round trip takes 0.2 s: the allowance grows miss by miss, then holds.
    clock, server, fleet = setup()
    server.up = server.down = 0.1
    outcomes = [await take(fleet, clock) is not None for _ in range(30)]
    first = outcomes.index(True)
    assert first <= 6
    assert all(outcomes[first:])
    assert fleet.trip >= 0.2 - 1e-9


async def test_no_two_requests_closer_than_the_gap() -> None:
    # Two workers on one key, sequentially; round trips fast, slow (either way) or
    # stalled, loops sometimes late.  Whatever goes out keeps the gap.
    rng = random.Random(1234)
    clock = Clock()
    server = SlotServer(clock)
    workers = [FleetSlots(server, clock=clock) for _ in range(2)]
    sent: list[float] = []
    for step in range(3000):
        server.up, server.down = (rng.choice([0.0005, 0.005, 0.05, 0.4, 1.5]) * rng.random()
                                  for _ in range(2))
        if step >= 2000:
            server.up = server.down = 0.0005
        slot = await take(workers[step % 2], clock, lag=rng.choice([0.0, 0.0, 0.02, 0.3]))
        if slot is not None:
            sent.append(clock())
    gaps = [b - a for a, b in itertools.pairwise(sent)]
    assert len(sent) > 1000
    assert min(gaps) >= GAP - 1e-9
    # Once the store is quick again, only the loop's own lateness widens the slots.
    assert all(w.trip < 0.01 for w in workers)


async def test_a_request_paced_under_a_lease_leaves_only_before_its_deadline() -> None:
    clock = Clock()
    server = SlotServer(clock)
    leases = Leases()
    fleet = FleetSlots(server, clock=clock, leases=leases)
    leases.hold(KEY, clock() + 5.0, free_at=float("-inf"))
    assert await fleet.reserve(KEY, GAP) is None  # paced here, no slot asked
    assert fleet.fence("host:never.leased") is None  # paced by the store: no fence
    fence = fleet.fence(KEY)
    assert isinstance(fence, LeaseFence) and fence.deadline == clock() + 5.0
    clock.advance(4.9)
    fence.check(clock())  # in time: it may leave
    clock.advance(0.1)
    with pytest.raises(LapsedLease):
        fence.check(clock())  # the last look finds the lease's deadline past
    with pytest.raises(LapsedLease):
        fleet.missed(fence)  # never asked again as a slot
    # Lapsed unrenewed: no fence, and no slot in its place (the worker that takes the
    # server over asks none).
    with pytest.raises(LapsedLease):
        fleet.fence(KEY)
    with pytest.raises(LapsedLease):
        await fleet.reserve(KEY, GAP)
    assert server.asked == []


async def test_a_lease_lost_to_another_worker_is_fenced_until_the_store_leases_it_again() -> None:
    clock = Clock()
    leases = Leases()
    fleet = FleetSlots(SlotServer(clock), clock=clock, leases=leases)
    leases.hold(KEY, clock() + 5.0)
    leases.lose(KEY)
    assert not leases.get(KEY, clock())
    with pytest.raises(LapsedLease):
        await fleet.reserve(KEY, GAP)
    with pytest.raises(LapsedLease):
        fleet.fence(KEY)
    # Leased again through the store: paced here from the lease before's end.
    leases.hold(KEY, clock() + 5.0, free_at=clock() - GAP)
    assert await fleet.reserve(KEY, GAP) is None
    fence = fleet.fence(KEY)
    assert fence is not None and fence.deadline == clock() + 5.0
    # Let go (its URLs done): a plain key again, paced by the store's slots.
    leases.drop(KEY)
    assert not leases.lapsed(KEY, clock())
    assert await fleet.reserve(KEY, GAP) is not None


class HorizonServer(SlotServer):
    """As the Redis script: a slot further than ``horizon`` ahead is not granted."""

    horizon = 1.0

    async def reserve(self, origin: str, interval: float, slack: float = 0.0) -> float | None:
        self.asked.append(interval)
        now = self.clock()
        start = max(now, self.tat)
        if start - now > self.horizon:
            raise SlotAhead(origin, start - now - self.horizon)
        self.tat = start + interval
        return start - now


async def test_a_slot_beyond_the_stores_horizon_is_asked_again_once_within(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    server = HorizonServer(clock)
    server.tat = clock() + 3.0  # other workers' slots, taken up to 3 s ahead
    fleet = FleetSlots(server, clock=clock)
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    asked = clock()
    slot = await fleet.reserve(KEY, GAP)
    assert slot is not None and len(server.asked) == 2  # refused once, then granted
    # Asked again when the slot was within the horizon; its deadline counts from then.
    assert clock() == pytest.approx(asked + 2.0)
    assert slot.wait == pytest.approx(1.0)
    assert slot.deadline == pytest.approx(asked + 3.0 + slot.slack - 0.001)
