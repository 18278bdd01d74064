"""A store hands out what it can do (store/base.py): the gate asks each store for its
parts and uses those it gets; a store with no part beyond the base works all the same.

The stores here are shaped as a third party's would be (CONTRIBUTING.md, "A new
store"): :class:`PlainStore` implements the base only; :class:`FleetDictStore` adds a
fleet part of its own, a separate object, as a database shared by processes would.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from robotgate import Disallowed, RobotGate
from robotgate.records import RobotsEntry
from robotgate.store.base import Fleet, Slots
from robotgate.store.memory import MemoryStore
from robotgate.store.sqlite import SQLiteStore
from testbed.server import BenchServer, HostPlan
from tests.support.plain_store import PlainStore

AGENT = "PartsBot/1.0 (+https://example.com/bot)"


class CountingSlots(Slots):
    """Fleet slots that all start at once, counted."""

    def __init__(self) -> None:
        self.reserved = 0

    async def reserve(self, origin: str, interval: float, slack: float = 0.0) -> float:
        self.reserved += 1
        return 0.0


class DictFleet(Fleet):
    """The fleet part of a :class:`FleetDictStore`: the fetch locks and pauses every
    gate on that store shares, as processes share a database."""

    def __init__(self, store: PlainStore, slots: Slots | None) -> None:
        self.store = store
        self.locks: dict[str, str] = {}
        self.pauses: dict[str, float] = {}
        self.waits = 0
        self._slots = slots
        self._tokens = 0

    async def load_robots(self, origin: str) -> RobotsEntry | None:
        return await self.store.load_robots(origin)

    async def save_robots(self, entry: RobotsEntry) -> None:
        await self.store.save_robots(entry)

    async def lock_fetch(self, origin: str, ttl: float) -> str | None:
        if origin in self.locks:
            return None
        self._tokens += 1
        token = self.locks[origin] = f"token{self._tokens}"
        return token

    async def unlock_fetch(self, origin: str, token: str) -> None:
        if self.locks.get(origin) == token:
            del self.locks[origin]

    async def renew_fetch(self, origin: str, token: str, ttl: float) -> bool:
        return self.locks.get(origin) == token

    async def wait_robots(self, origin: str, timeout: float) -> RobotsEntry | None:
        self.waits += 1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            entry = await self.load_robots(origin)
            if (entry is not None and entry.is_fresh(time.time())) or origin not in self.locks:
                return entry
            if loop.time() >= deadline:
                return None
            await asyncio.sleep(0.01)

    async def pause(self, origin: str, until: float) -> None:
        self.pauses[origin] = max(until, self.pauses.get(origin, until))

    def slots(self) -> Slots | None:
        return self._slots


class FleetDictStore(PlainStore):
    """A base store that hands out a fleet part (with fleet slots if ``slots``)."""

    def __init__(self, slots: Slots | None = None) -> None:
        super().__init__()
        self.part = DictFleet(self, slots)

    def fleet(self) -> Fleet:
        return self.part


def test_each_store_hands_out_its_parts(tmp_path: Path) -> None:
    memory = MemoryStore()
    assert memory.fleet() is None and memory.crawls() is memory and memory.at_once() is memory
    assert memory.crawls().shared() is None
    sqlite = SQLiteStore(tmp_path / "s.sqlite3")
    assert sqlite.fleet() is sqlite and sqlite.slots() is None and sqlite.at_once() is None
    assert sqlite.crawls() is sqlite and sqlite.shared() is None
    from robotgate.store.redis import RedisStore

    redis = RedisStore("redis://127.0.0.1:9/0")  # never connected
    assert redis.fleet() is redis and redis.slots() is redis and redis.at_once() is None
    assert redis.crawls() is redis and redis.shared() is redis
    plain = PlainStore()
    assert plain.fleet() is None and plain.crawls() is None and plain.at_once() is None


async def test_a_store_with_only_the_base_part_serves_the_gate_and_its_crawl() -> None:
    store = PlainStore()
    async with BenchServer([HostPlan("partial", crawl_delay=0.0)]) as srv:
        async with RobotGate(AGENT, store=store, delay=0) as gate:
            response = await gate.fetch(srv.url(0, "/page/1"))
            assert response.status == 200
            response.release()
            with pytest.raises(Disallowed):
                await gate.fetch(srv.url(0, "/private/1"))
            seen: list[str] = []

            async def handler(url: str, response: object) -> None:
                seen.append(url)

            summary = await gate.crawl([srv.url(0, "/page/2"), srv.url(0, "/private/2")],
                                       handler)
        stats = srv.host_stats(0)
    assert summary.pages == 1 and summary.skipped == 1 and seen == [srv.url(0, "/page/2")]
    assert stats.robots_requests == 1 and stats.disallowed_page_requests == 0
    origin = srv.url(0, "/").rstrip("/")
    assert list(store.robots) == [origin] and store.hosts  # what the base keeps, kept


async def test_gates_on_a_store_with_a_fleet_part_fetch_robots_txt_once_and_share_pauses(
) -> None:
    store = FleetDictStore()
    plan = HostPlan("partial", crawl_delay=0.0, page_status=503, page_retry_after=30,
                    page_status_times=1)
    async with BenchServer([plan]) as srv:
        async with RobotGate(AGENT, store=store, delay=0) as first, \
                RobotGate(AGENT, store=store, delay=0) as second:
            # Two processes' gates, one shared store: one fetches, the other waits for it.
            verdicts = await asyncio.gather(first.allowed(srv.url(0, "/page/1")),
                                            second.allowed(srv.url(0, "/page/1")))
            assert verdicts == [True, True]
            assert store.part.waits >= 1 and store.part.locks == {}
            response = await first.fetch(srv.url(0, "/page/1"))
            assert response.status == 503
            response.release()
            key = first.pace_key(srv.url(0, "/"))
        stats = srv.host_stats(0)
    assert stats.robots_requests == 1
    # The Retry-After reached the fleet part, for every process to keep.
    assert list(store.part.pauses) == [key] and store.part.pauses[key] > time.time() + 20


async def test_a_fleet_part_with_slots_paces_every_request_through_them() -> None:
    slots = CountingSlots()
    store = FleetDictStore(slots)
    async with BenchServer([HostPlan("partial", crawl_delay=0.0)]) as srv, \
            RobotGate(AGENT, store=store, delay=0) as gate:
        response = await gate.fetch(srv.url(0, "/page/1"))
        assert response.status == 200
        response.release()
    # robots.txt and the page, each in a fleet slot.
    assert slots.reserved == 2
