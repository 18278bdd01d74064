"""The memory store's eviction: bounded, and a wait a server asked for is kept."""

from __future__ import annotations

import time
from dataclasses import fields

from robotgate import MemoryStore
from robotgate.records import HostState


def test_eviction_takes_the_least_recently_used_when_no_server_waits() -> None:
    store = MemoryStore(max_origins=2)
    for i in range(4):
        store.put_host(HostState(f"host:{i}"))
    assert [store.get_host(f"host:{i}") is not None for i in range(4)] == [
        False, False, True, True]


def test_eviction_keeps_a_wait_the_server_asked_for() -> None:
    # A 503's Retry-After (300 s) outlives the servers that came after it; those wait
    # only their delay, and it is one of them that goes.
    store = MemoryStore(max_origins=2)
    now = time.time()
    store.put_host(HostState("host:r", next_allowed=now + 300))
    for i in range(5):
        store.put_host(HostState(f"host:{i}", next_allowed=now + 0.2))
    kept = store.get_host("host:r")
    assert kept is not None and kept.next_allowed == now + 300
    assert sum(store.get_host(f"host:{i}") is not None for i in range(5)) == 1


def test_eviction_never_takes_the_state_just_stored() -> None:
    store = MemoryStore(max_origins=2)
    now = time.time()
    store.put_host(HostState("host:a", next_allowed=now + 60))
    store.put_host(HostState("host:b", next_allowed=now + 60))
    store.put_host(HostState("host:c"))  # new: due at once, yet the one kept
    assert store.get_host("host:c") is not None


def test_a_host_state_is_kept_as_a_value_with_every_field() -> None:
    def given() -> HostState:
        return HostState("host:v", visits=7, last_visit=1.5, next_allowed=2.5,
                         visits_since_check=3, backoff=4.5, backoff_peak=5.5)

    state = given()
    # None at its default: a field the store forgot would come back as its default.
    assert all(getattr(state, f.name) != f.default for f in fields(HostState))
    store = MemoryStore()
    store.put_host(state)
    state.visits = 99  # the scheduler goes on changing its own
    got = store.get_host("host:v")
    assert got == given()
    assert got is not None
    got.next_allowed = 0.0  # and the one handed out is the caller's
    assert store.get_host("host:v") == given()
