"""Leased servers of a shared crawl are paced here: no slot asked of the store."""

from __future__ import annotations

import asyncio

import pytest

from robotgate.politeness.fleet_slots import FleetSlots
from robotgate.store.leases import LapsedLease, Leases
from tests.support.slots_store import SlotsNow

KEY = "host:leased.example"


async def test_a_leased_key_asks_no_slot_and_waits_an_interval_from_the_worker_before() -> None:
    store = SlotsNow()
    leases = Leases()
    fleet = FleetSlots(store, leases=leases)
    loop = asyncio.get_running_loop()
    # Not leased: the store's slot.
    slot = await fleet.reserve(KEY, 0.2)
    assert slot is not None and slot.wait == 0.0 and store.reserved == 1
    assert not fleet.settled(KEY)
    # Leased; the worker before may have asked 0.1 s ago: the first waits 0.1 s more.
    now = loop.time()
    leases.hold(KEY, now + 5, free_at=now - 0.1)
    assert await fleet.reserve(KEY, 0.2) is None
    assert loop.time() - now >= 0.1 - 0.005
    assert store.reserved == 1
    assert fleet.settled(KEY)  # the next ones go by the local schedule
    # Renewed (free_at kept): still settled.  A new lease (another free_at): not yet.
    leases.hold(KEY, loop.time() + 5)
    assert fleet.settled(KEY)
    leases.hold(KEY, loop.time() + 5, free_at=loop.time())
    assert not fleet.settled(KEY)
    # A lease that may have lapsed is fenced: no slot instead (the worker that took
    # the server over asks none); only the store leases it again.
    leases.hold(KEY, loop.time() - 0.001, free_at=float("-inf"))
    assert not fleet.settled(KEY)
    with pytest.raises(LapsedLease):
        await fleet.reserve(KEY, 0.2)
    assert store.reserved == 1
    # Let go (its URLs done): the store's slot again.
    leases.drop(KEY)
    assert not leases
    slot = await fleet.reserve(KEY, 0.2)
    assert slot is not None and slot.wait == 0.0 and store.reserved == 2
