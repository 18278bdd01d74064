"""RobotsCache (politeness/robots_cache.py) with a fake transport: single flight,
cancellation, close, store trouble, CLOCK eviction, recheck after N visits."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from robotgate.errors import GateClosed
from robotgate.policy.fetch import FetchPolicy
from robotgate.policy.fetch_flow import RobotsRequest, RobotsResponse
from robotgate.policy.site import Interpretation, SiteRules
from robotgate.politeness.robots_cache import CacheClosed, RobotsCache
from robotgate.politeness.robots_fetcher import RobotsFetcher
from robotgate.records import HostState, Outcome, RobotsEntry
from robotgate.store.base import Fleet, StoreError
from robotgate.store.memory import MemoryStore
from tests.support.transports import FakeTransport

AGENT = "CacheBot/1.0"
SITE = "http://site.example"
RULES = b"User-agent: *\nDisallow: /x\n"
ROOT = Path(__file__).resolve().parents[2]


class Transport(FakeTransport):
    """Answers every robots.txt with ``answer`` (RULES with an ETag unless told)."""

    def __init__(self, answer: RobotsResponse | None = None, held: bool = False) -> None:
        super().__init__(answer or RobotsResponse(200, {"ETag": '"v1"'}, RULES), held=held)


class FullDisk(MemoryStore):
    """A store whose body writes fail (the lock row fits, the body does not)."""

    def __init__(self) -> None:
        super().__init__()
        self.saves = 0

    async def save_robots(self, entry: RobotsEntry) -> None:
        self.saves += 1
        raise OSError(28, "No space left on device")


def make(transport: Transport, store: MemoryStore | None = None, *,
         policy: FetchPolicy | None = None, **kwargs: object,
         ) -> tuple[RobotsCache, dict[str, HostState]]:
    hosts: dict[str, HostState] = {}

    async def host_state(origin: str) -> HostState:
        return hosts.setdefault(origin, HostState(origin))

    policy = policy or FetchPolicy()
    store = store or MemoryStore()
    cache = RobotsCache(RobotsFetcher(transport, policy), store,
                        Interpretation(AGENT, fetch=policy), fleet=store.fleet(),
                        at_once=store.at_once(), host_state=host_state,
                        **kwargs)  # type: ignore[arg-type]
    return cache, hosts


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


# -- single flight -----------------------------------------------------------------------


async def test_one_fetch_for_a_thousand_concurrent_asks() -> None:
    transport = Transport(held=True)
    cache, _ = make(transport)
    asks = [asyncio.ensure_future(cache.get(SITE)) for _ in range(1000)]
    await settle()
    assert len(transport.requests) == 1 and cache.inflight == 1
    transport.release.set()
    sites = await asyncio.wait_for(asyncio.gather(*asks), 20)
    assert len({id(site) for site in sites}) == 1
    assert not sites[0].allowed("/x", AGENT) and sites[0].allowed("/y", AGENT)
    assert len(transport.requests) == 1 and cache.fetcher.requests == 1
    assert cache.inflight == 0
    assert cache.cached(SITE) is sites[0]


async def test_origins_are_fetched_independently() -> None:
    transport = Transport()
    cache, _ = make(transport)
    await asyncio.gather(*(cache.get(f"http://h{i}.example") for i in range(20)))
    assert len(transport.requests) == 20


async def test_origins_serving_the_same_file_share_its_parsed_rules() -> None:
    cache, _ = make(Transport())
    sites = await asyncio.gather(*(cache.get(f"http://h{i}.example") for i in range(3)))
    assert sites[0].rules is not None
    assert all(site.rules is sites[0].rules for site in sites)
    assert [site.entry.origin for site in sites] == [f"http://h{i}.example" for i in range(3)]
    assert not sites[2].allowed("http://h2.example/x", AGENT)


async def test_cached_is_synchronous_and_none_until_fetched() -> None:
    cache, _ = make(Transport())
    assert cache.cached(SITE) is None and cache.peek(SITE) is None
    site = await cache.get(SITE)
    assert cache.cached(SITE) is site and cache.peek(SITE) is site


async def test_each_robots_request_is_made_in_the_server_s_turn() -> None:
    events: list[str] = []

    class Recording(Transport):
        async def send(self, request: RobotsRequest) -> RobotsResponse:
            events.append("send")
            return await super().send(request)

    @contextlib.asynccontextmanager
    async def turn(origin: str) -> AsyncIterator[None]:
        events.append(f"turn {origin}")
        try:
            yield
        finally:
            events.append("done")

    cache, _ = make(Recording(), paced_by=turn)
    await cache.get(SITE)
    await cache.get(SITE)
    assert events == [f"turn {SITE}", "send", "done"]


async def test_a_failing_fetch_still_ends_the_turn() -> None:
    ended: list[str] = []

    @contextlib.asynccontextmanager
    async def turn(origin: str) -> AsyncIterator[None]:
        try:
            yield
        finally:
            ended.append(origin)

    class Broken(Transport):
        async def send(self, request: RobotsRequest) -> RobotsResponse:
            raise OSError("reset")

    cache, _ = make(Broken(), paced_by=turn)
    site = await cache.get(SITE)
    assert site.entry.outcome == Outcome.UNREACHABLE and ended == [SITE]


async def test_the_cache_knows_the_sites_host_state() -> None:
    cache, hosts = make(Transport())
    site = await cache.get(SITE)
    held = cache.known(SITE)
    assert held is not None and held.site is site and held.host is hosts[SITE]


async def test_a_refetch_replaces_the_sites_rules_and_leaves_the_old_value_whole() -> None:
    transport = Transport()
    cache, _ = make(transport)
    first = await cache.get(SITE)
    held = cache.known(SITE)
    assert held is not None
    # Stale in the store and here: the next ask fetches again, and installs a new value.
    await cache.store.save_robots(first.entry.copy(fresh_until=0.0))
    held.site = SiteRules(first.entry.copy(fresh_until=0.0), first.rules, first.verdict,
                          first.interval)
    second = await cache.get(SITE)
    assert second is not first and cache.known(SITE) is held and held.site is second
    assert first.fresh_until > time.time()  # the old value was not written: still as made


# -- cancellation and close ----------------------------------------------------------------


async def test_a_cancelled_asker_does_not_cancel_the_shared_fetch() -> None:
    transport = Transport(held=True)
    cache, _ = make(transport)
    first = asyncio.ensure_future(cache.get(SITE))
    second = asyncio.ensure_future(cache.get(SITE))
    await settle()
    first.cancel()
    await settle()
    transport.release.set()
    site = await asyncio.wait_for(second, 10)
    assert first.cancelled() and not site.allowed("/x", AGENT)
    assert len(transport.requests) == 1


async def test_the_fetch_completes_even_if_every_asker_is_cancelled() -> None:
    transport = Transport(held=True)
    cache, _ = make(transport)
    asks = [asyncio.ensure_future(cache.get(SITE)) for _ in range(3)]
    await settle()
    for ask in asks:
        ask.cancel()
    await settle()
    transport.release.set()
    for _ in range(100):
        if cache.peek(SITE) is not None:
            break
        await asyncio.sleep(0.01)
    assert cache.peek(SITE) is not None and transport.finished == 1
    await cache.get(SITE)
    assert len(transport.requests) == 1  # the next ask uses it


async def test_an_error_in_the_shared_fetch_reaches_every_waiter_then_clears() -> None:
    calls: list[str] = []

    async def broken_host_state(origin: str) -> HostState:
        calls.append(origin)
        await asyncio.sleep(0.01)
        if len(calls) == 1:
            raise RuntimeError("a bug in the host state")
        return HostState(origin)

    transport = Transport()
    store = MemoryStore()
    cache = RobotsCache(RobotsFetcher(transport, FetchPolicy()), store,
                        Interpretation(AGENT), at_once=store.at_once(),
                        host_state=broken_host_state)
    asks = [asyncio.ensure_future(cache.get(SITE)) for _ in range(3)]
    done = await asyncio.gather(*asks, return_exceptions=True)
    assert all(isinstance(d, RuntimeError) for d in done) and calls == [SITE]
    assert cache.inflight == 0
    site = await cache.get(SITE)  # the failed flight is gone: the next ask fetches
    assert not site.allowed("/x", AGENT) and len(transport.requests) == 1


async def test_close_ends_waiters_with_cache_closed() -> None:
    transport = Transport(held=True)
    cache, _ = make(transport)
    waiters = [asyncio.ensure_future(cache.get(SITE)) for _ in range(3)]
    await settle()
    await asyncio.wait_for(cache.close(), 10)
    for waiter in waiters:
        with pytest.raises(CacheClosed):
            await waiter
    assert cache.inflight == 0
    with pytest.raises(CacheClosed):
        await cache.get("http://other.example")


async def test_close_before_the_fetch_began_still_ends_its_waiters() -> None:
    cache, _ = make(Transport(held=True))
    ask = cache.get(SITE)
    waiting = ask.send(None)  # the ask, run by hand to its wait: the fetch task not yet run
    assert isinstance(waiting, asyncio.Future) and cache.inflight == 1
    await cache.close()  # in this task: it cancels the fetch before that begins
    assert isinstance(waiting.exception(), CacheClosed)
    with pytest.raises(CacheClosed):
        ask.send(None)  # woken, the ask reads its answer


class DeafToOneCancel(Transport):
    """A send that swallows its first cancellation, as redis-py's wait_for can on 3.11."""

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        self.requests.append(request)
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)
            raise GateClosed("the gate is closed") from None  # as a closed session answers
        return self.answer


async def test_close_outlasts_a_lost_cancel_and_stores_unpaced() -> None:
    # The fetch goes on after the first cancel and fails because the gate closed:
    # no "unreachable" entry is stored for the fleet, the askers get CacheClosed.
    store = MemoryStore()
    cache, _ = make(DeafToOneCancel(held=True), store)
    asks = [asyncio.ensure_future(cache.get(SITE)) for _ in range(3)]
    await settle()
    await asyncio.wait_for(cache.close(), 2)
    done = await asyncio.gather(*asks, return_exceptions=True)
    assert all(isinstance(d, (CacheClosed, GateClosed)) for d in done), done
    assert await store.load_robots(SITE) is None


async def test_close_keeps_answering_from_the_cache() -> None:
    cache, _ = make(Transport())
    site = await cache.get(SITE)
    await cache.close()
    assert cache.cached(SITE) is site
    assert await cache.get(SITE) is site


async def test_close_with_nothing_in_flight() -> None:
    cache, _ = make(Transport())
    await cache.close()
    await cache.close()


# -- store trouble (issue 12 item 10) ----------------------------------------------------------


async def test_a_store_that_cannot_save_still_installs_the_rules(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="robotgate")
    transport = Transport()
    store = FullDisk()
    cache, _ = make(transport, store)
    for _ in range(10):
        site = await cache.get(SITE)
        assert not site.allowed("/x", AGENT)
    assert len(transport.requests) == 1  # not a request storm
    assert store.saves == 1 and cache.store_errors == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "could not save robots.txt" in warnings[0].getMessage()
    assert "No space left" in warnings[0].getMessage()


async def test_store_errors_are_counted_but_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="robotgate")
    cache, _ = make(Transport(), FullDisk())
    for i in range(5):
        await cache.get(f"http://h{i}.example")
    assert cache.store_errors == 5
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


async def test_rules_kept_in_memory_stand_in_when_the_store_forgot_them() -> None:
    # The body never reached the store; the refetch fails: the parsed rules stay.
    answers = iter([RobotsResponse(200, {"Cache-Control": "max-age=0"}, RULES),
                    RobotsResponse(503, {})])

    class Scripted(Transport):
        async def send(self, request: RobotsRequest) -> RobotsResponse:
            self.requests.append(request)
            return next(answers)

    transport = Scripted()
    cache, _ = make(transport, FullDisk(), policy=FetchPolicy(min_freshness=0))
    assert not (await cache.get(SITE)).allowed("/x", AGENT)
    site = await cache.get(SITE)  # expired at once: refetched, answered 503
    assert len(transport.requests) == 2
    assert site.entry.outcome == Outcome.OK and site.entry.failures == 1
    assert not site.allowed("/x", AGENT) and site.allowed("/y", AGENT)


# -- freshness and recheck ----------------------------------------------------------------


async def test_stale_rules_are_refetched_conditionally() -> None:
    transport = Transport(RobotsResponse(200, {"ETag": '"v1"', "Cache-Control": "max-age=0"},
                                         RULES))
    cache, _ = make(transport, policy=FetchPolicy(min_freshness=0))
    await cache.get(SITE)
    transport.answer = RobotsResponse(304, {"ETag": '"v1"'})
    site = await cache.get(SITE)
    assert len(transport.requests) == 2
    assert transport.requests[1].headers.get("If-None-Match") == '"v1"'
    assert not site.allowed("/x", AGENT) and "304" in site.entry.detail


async def test_a_fresh_stored_entry_needs_no_fetch() -> None:
    store = MemoryStore()
    transport = Transport()
    first, _ = make(transport, store)
    await first.get(SITE)
    second, _ = make(transport, store)  # another gate on the same store
    site = await second.get(SITE)
    assert len(transport.requests) == 1 and not site.allowed("/x", AGENT)


async def test_recheck_after_n_visits() -> None:
    transport = Transport()
    cache, hosts = make(transport, recheck_visits=3)
    site = await cache.get(SITE)
    host = hosts[SITE]
    host.visits_since_check = 2
    assert cache.cached(SITE) is site
    host.visits_since_check = 3
    assert cache.cached(SITE) is None  # due for a recheck
    transport.answer = RobotsResponse(304, {})
    again = await cache.get(SITE)
    assert len(transport.requests) == 2
    assert transport.requests[1].headers.get("If-None-Match") == '"v1"'
    assert host.visits_since_check == 0
    assert cache.cached(SITE) is again and not again.allowed("/x", AGENT)


async def test_no_recheck_when_disabled() -> None:
    transport = Transport()
    cache, hosts = make(transport, recheck_visits=None)
    site = await cache.get(SITE)
    hosts[SITE].visits_since_check = 10**6
    assert cache.cached(SITE) is site


# -- bounded size (CLOCK) -----------------------------------------------------------------------


async def test_the_table_stays_at_max_origins() -> None:
    cache, _ = make(Transport(), max_origins=50)
    for i in range(500):
        await cache.get(f"http://h{i}.example")
        assert len(cache.sites()) <= 50
    assert cache.peek("http://h0.example") is None
    assert cache.peek("http://h499.example") is not None


async def test_clock_keeps_a_site_in_use() -> None:
    cache, _ = make(Transport(), max_origins=20)
    hot = "http://hot.example"
    await cache.get(hot)
    for i in range(300):
        await cache.get(f"http://cold{i}.example")
        assert cache.cached(hot) is not None  # used between installs: never evicted
    assert len(cache.sites()) <= 20


async def test_an_evicted_origin_is_fetched_again_from_the_store_or_the_server() -> None:
    transport = Transport()
    cache, _ = make(transport, MemoryStore(), max_origins=2)
    for origin in ("http://a.example", "http://b.example", "http://c.example"):
        await cache.get(origin)
    assert cache.peek("http://a.example") is None
    site = await cache.get("http://a.example")
    assert not site.allowed("/x", AGENT)
    assert len(transport.requests) == 3  # the store still had it, fresh


# -- a fleet: the store's fetch lock ------------------------------------------------------------


class SharedStore(MemoryStore, Fleet):
    """A shared store with an expiring fetch lock on a fake clock (seconds in ``now[0]``)."""

    def __init__(self, now: list[float]) -> None:
        super().__init__()
        self.now = now
        self.lock: tuple[str, float] | None = None
        self.locks = 0

    async def lock_fetch(self, origin: str, ttl: float) -> str | None:
        if self.lock is not None and self.lock[1] > self.now[0]:
            return None
        self.locks += 1
        token = f"token{self.locks}"
        self.lock = (token, self.now[0] + ttl)
        return token

    async def unlock_fetch(self, origin: str, token: str) -> None:
        if self.lock is not None and self.lock[0] == token:
            self.lock = None

    async def wait_robots(self, origin: str, timeout: float) -> RobotsEntry | None:
        await asyncio.sleep(0)
        got = await self.load_robots(origin)
        if got is None:
            self.now[0] += timeout  # waited the whole timeout for another worker
        return got

    def fleet(self) -> Fleet:
        return self

    async def renew_fetch(self, origin: str, token: str, ttl: float) -> bool:
        if self.lock is None or self.lock[0] != token:
            return False  # let go, or taken by another since it expired
        self.lock = (token, self.now[0] + ttl)
        return True

    async def pause(self, origin: str, until: float) -> None:
        pass


async def test_one_fetch_per_fleet_when_the_lock_holder_waits_for_its_turn() -> None:
    now = [0.0]
    store = SharedStore(now)
    transport = Transport()
    held = asyncio.Event()

    @contextlib.asynccontextmanager
    async def slow_turn(origin: str) -> AsyncIterator[None]:
        await held.wait()  # this worker's server turn is far off (Crawl-delay, Retry-After)
        yield

    # Lease 6 s: a lock held longer than a renewal period (2 s) may have lapsed.
    first, _ = make(transport, store, paced_by=slow_turn, policy=FetchPolicy(timeout=0.5))
    second, _ = make(transport, store)
    waiting = asyncio.ensure_future(first.get(SITE))
    await settle()
    assert not waiting.done() and store.lock is not None
    site = await asyncio.wait_for(second.get(SITE), 10)
    assert not site.allowed("/x", AGENT)
    await asyncio.sleep(2.05)
    held.set()
    await asyncio.wait_for(waiting, 10)
    assert len(transport.requests) == 1


class WaitForSave(SharedStore):
    """SharedStore whose wait for another's fetch ends when an entry is saved."""

    def __init__(self, now: list[float]) -> None:
        super().__init__(now)
        self.saved = asyncio.Event()

    async def save_robots(self, entry: RobotsEntry) -> None:
        await super().save_robots(entry)
        self.saved.set()

    async def wait_robots(self, origin: str, timeout: float) -> RobotsEntry | None:
        await asyncio.wait_for(self.saved.wait(), 10)
        return await self.load_robots(origin)


@pytest.mark.parametrize("taker", ["fetching", "done"])
async def test_a_holder_stalled_past_its_lock_does_not_fetch_over_the_new_holder(
    taker: str,
) -> None:
    # The fleet's failure under load: a worker took the fetch lock, then waited (its
    # server's turn; a starved process) while no renewal ran; the lock expired and a
    # second worker took it.  When the first's turn comes it must not fetch as well:
    # it looks at the lock before its request leaves, and waits for the new holder
    # ("fetching") or uses its entry ("done").
    now = [0.0]
    store = WaitForSave(now)
    turn = asyncio.Event()

    @contextlib.asynccontextmanager
    async def stalled_turn(origin: str) -> AsyncIterator[None]:
        await turn.wait()
        yield

    first_sent, second_sent = Transport(), Transport(held=taker == "fetching")
    first, _ = make(first_sent, store, paced_by=stalled_turn, clock=lambda: now[0])
    second, _ = make(second_sent, store, clock=lambda: now[0])
    stalled = asyncio.ensure_future(first.get(SITE))
    await settle()
    assert store.lock is not None and store.lock[0] == "token1"
    now[0] += first._lease() + 1  # the holder's lock expires unrenewed
    taking = asyncio.ensure_future(second.get(SITE))
    if taker == "done":
        await asyncio.wait_for(taking, 10)  # fetched, saved and let go
        assert store.lock is None and len(second_sent.requests) == 1
    else:
        await settle()
        assert store.lock is not None and store.lock[0] == "token2"
    turn.set()  # the stalled holder's turn comes
    await settle()
    second_sent.release.set()
    await asyncio.wait_for(asyncio.gather(stalled, taking), 10)
    assert len(first_sent.requests) == 0
    assert len(second_sent.requests) == 1
    assert not (await stalled).allowed("/x", AGENT)


class SlowSave(WaitForSave):
    """WaitForSave whose save-and-unlock waits for ``save_may_go`` (queued behind a busy
    worker's other calls), counting the renewals that come meanwhile."""

    def __init__(self, now: list[float]) -> None:
        super().__init__(now)
        self.saving = asyncio.Event()
        self.save_may_go = asyncio.Event()
        self.renewals = 0

    async def renew_fetch(self, origin: str, token: str, ttl: float) -> bool:
        self.renewals += 1
        return await super().renew_fetch(origin, token, ttl)

    async def save_robots_unlock(self, entry: RobotsEntry, token: str) -> bool:
        self.saving.set()
        await asyncio.wait_for(self.save_may_go.wait(), 10)
        return await super().save_robots_unlock(entry, token)


async def test_the_fetch_lock_is_kept_until_its_save_is_answered() -> None:
    # The fleet's failure under load (seen in its logs): the holder fetched, stopped
    # renewing its lock and sent the save, which waited behind the worker's other
    # calls past the lock's life; a second worker took the lock and fetched again.
    now = [0.0]
    store = SlowSave(now)
    first_sent, second_sent = Transport(), Transport()
    # Lease 5.2 s: a renewal every 1.7 s (real time: the fake clock only says when).
    policy = FetchPolicy(timeout=0.1)
    first, _ = make(first_sent, store, policy=policy, clock=lambda: now[0])
    second, _ = make(second_sent, store, policy=policy, clock=lambda: now[0])
    holder = asyncio.ensure_future(first.get(SITE))
    await asyncio.wait_for(store.saving.wait(), 10)  # fetched; the save is under way
    lease = first._lease()
    for _ in range(2):  # most of a lease passes, twice, while the save waits
        now[0] += lease * 0.9
        renewed = store.renewals
        for _ in range(400):  # a renewal due (at most 4 s), if one comes
            if store.renewals > renewed:
                break
            await asyncio.sleep(0.01)
    taking = asyncio.ensure_future(second.get(SITE))
    await settle()
    store.save_may_go.set()
    await asyncio.wait_for(asyncio.gather(holder, taking), 10)
    assert len(first_sent.requests) == 1
    assert len(second_sent.requests) == 0


class LateLockCalls(SharedStore):
    """A shared store whose lock calls (take, renew) each come back ``late`` s after they
    were sent, on the fake clock, done just before their answer: a starved process's
    calls.  A wait for another's fetch ends when that origin's entry is saved."""

    def __init__(self, now: list[float], late: float) -> None:
        super().__init__(now)
        self.late = late
        self.renewals = 0
        self.lost = 0  # renewals that found the lock expired
        self.saved: dict[str, asyncio.Event] = {}

    async def lock_fetch(self, origin: str, ttl: float) -> str | None:
        self.now[0] += self.late
        return await super().lock_fetch(origin, ttl)

    async def renew_fetch(self, origin: str, token: str, ttl: float) -> bool:
        self.now[0] += self.late
        self.renewals += 1
        renewed = await super().renew_fetch(origin, token, ttl)
        self.lost += not renewed
        return renewed

    async def save_robots(self, entry: RobotsEntry) -> None:
        await super().save_robots(entry)
        self.saved.setdefault(entry.origin, asyncio.Event()).set()

    async def wait_robots(self, origin: str, timeout: float) -> RobotsEntry | None:
        saved = self.saved.setdefault(origin, asyncio.Event())
        await asyncio.wait_for(saved.wait(), 10)
        return await self.load_robots(origin)


async def test_a_holder_whose_lock_calls_come_back_late_keeps_its_lock() -> None:
    # The fleet's failure at load 20 (its logs): a holder's renewals came back up to
    # 12 s after its last one, its 10-s lock expired while its robots.txt request was
    # out, and another worker took the lock and fetched again.  A process whose lock
    # calls come back late asks for leases that outlast them.
    now = [0.0]
    store = LateLockCalls(now, late=11.0)
    first_sent, second_sent = Transport(), Transport()
    policy = FetchPolicy(timeout=2.5)  # a 10-s lease on a quiet machine
    first, _ = make(first_sent, store, policy=policy, clock=lambda: now[0])
    second, _ = make(second_sent, store, policy=policy, clock=lambda: now[0])
    await first.get("http://warm-up.example")  # its lock calls came back 11 s late
    first_sent.release.clear()  # from now on its request is out until released
    holder = asyncio.ensure_future(first.get(SITE))
    for _ in range(1000):  # its request is out (at most 10 s)
        if len(first_sent.requests) == 2 or holder.done():
            break
        await asyncio.sleep(0.01)
    renewals = store.renewals
    for _ in range(1000):
        if store.renewals >= renewals + 2 or holder.done():
            break
        await asyncio.sleep(0.01)
    taking = asyncio.ensure_future(second.get(SITE))
    await settle()
    first_sent.release.set()
    await asyncio.wait_for(asyncio.gather(holder, taking), 20)
    assert second_sent.requests == []
    assert [r.url for r in first_sent.requests] == [
        "http://warm-up.example/robots.txt", f"{SITE}/robots.txt"]
    assert store.lost == 0


async def test_the_memory_store_answers_without_an_await_and_a_subclass_is_awaited() -> None:
    plain = MemoryStore()
    cache, _ = make(Transport(), plain)
    await cache.get(SITE)
    stored = plain.get_robots(SITE)
    assert stored is not None and stored.body == RULES
    # A subclass may do I/O in its coroutines: they are the ones called.
    disk = FullDisk()
    cache, _ = make(Transport(), disk)
    await cache.get(SITE)
    assert disk.saves == 1 and disk.get_robots(SITE) is None


async def test_a_shared_store_that_cannot_take_the_lock_still_decides(
        caplog: pytest.LogCaptureFixture) -> None:
    # A full disk or a read-only file refuses the lock row too: this worker fetches
    # alone (the lock only spares the others a request), and says so once.
    caplog.set_level(logging.WARNING, logger="robotgate")

    class ReadOnly(SharedStore):
        async def lock_fetch(self, origin: str, ttl: float) -> str | None:
            raise StoreError("attempt to write a readonly database")

        async def save_robots(self, entry: RobotsEntry) -> None:
            raise StoreError("attempt to write a readonly database")

    transport = Transport()
    cache, _ = make(transport, ReadOnly([0.0]))
    for i in range(3):
        assert not (await cache.get(f"http://h{i}.example")).allowed("/x", AGENT)
        assert (await cache.get(f"http://h{i}.example")).allowed("/y", AGENT)
    assert len(transport.requests) == 3  # one per origin, no storm
    assert cache.store_errors == 6  # a lock and a save per origin
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "take the robots.txt fetch lock" in warnings[0]


@pytest.mark.parametrize("shared", [False, True])
async def test_a_stored_ok_entry_without_its_body_is_fetched_again(shared: bool) -> None:
    # robotgate never stores one; read as it is, it would allow everything.
    store: MemoryStore = SharedStore([0.0]) if shared else MemoryStore()
    await store.save_robots(RobotsEntry(SITE, Outcome.OK, 0.0, 1e12, 200, None, "text/plain"))
    transport = Transport()
    cache, _ = make(transport, store)
    assert not (await cache.get(SITE)).allowed("/x", AGENT)
    assert len(transport.requests) == 1


class SlowUnlock(MemoryStore, Fleet):
    """A shared store whose fetch lock takes 0.4 s to let go (a slow Redis)."""

    def __init__(self) -> None:
        super().__init__()
        self.locks: dict[str, str] = {}

    def fleet(self) -> Fleet:
        return self

    async def renew_fetch(self, origin: str, token: str, ttl: float) -> bool:
        return True

    async def wait_robots(self, origin: str, timeout: float) -> RobotsEntry | None:
        return await self.load_robots(origin)

    async def pause(self, origin: str, until: float) -> None:
        pass

    async def lock_fetch(self, origin: str, ttl: float) -> str | None:
        if origin in self.locks:
            return None
        self.locks[origin] = "token"
        return "token"

    async def unlock_fetch(self, origin: str, token: str) -> None:
        await asyncio.sleep(0.4)
        self.locks.pop(origin, None)


@pytest.mark.slow
async def test_close_lets_a_fleet_fetch_lock_go_before_it_returns() -> None:
    # close() asks again after 0.25 s, but not a fetch letting go of its lock: other
    # workers would wait out the lock's time to live.
    store = SlowUnlock()
    cache, _ = make(Transport(held=True), store)
    ask = asyncio.ensure_future(cache.get(SITE))
    await settle()
    assert store.locks == {SITE: "token"}
    await asyncio.wait_for(cache.close(), 5)
    assert store.locks == {}
    with pytest.raises(CacheClosed):
        await ask


# -- an origin a public page pointed to ------------------------------------------------------

CHECKED = (ipaddress.IPv4Address("93.184.216.34"),)


async def test_a_pointers_fetch_is_guarded_and_shared() -> None:
    transport = Transport(held=True)
    cache, _ = make(transport)
    asks = [asyncio.ensure_future(cache.fetched(SITE, True, CHECKED)),
            asyncio.ensure_future(cache.fetched(SITE))]
    await settle()
    transport.release.set()
    first, second = await asyncio.wait_for(asyncio.gather(*asks), 5)
    [request] = transport.requests
    assert request.guard and request.checked == CHECKED
    assert first is second


async def test_a_pointer_joining_a_fetch_before_it_leaves_guards_it() -> None:
    # The user's own ask starts the fetch, which waits for the server's turn; a
    # pointer's ask joins meanwhile: the one request that leaves is guarded.
    turn_given = asyncio.Event()

    @contextlib.asynccontextmanager
    async def turn(origin: str) -> AsyncIterator[None]:
        await turn_given.wait()
        yield

    transport = Transport()
    cache, _ = make(transport, paced_by=turn)
    mine = asyncio.ensure_future(cache.fetched(SITE))
    await settle()
    pointed = asyncio.ensure_future(cache.fetched(SITE, True, CHECKED))
    await settle()
    assert transport.requests == []
    turn_given.set()
    await asyncio.wait_for(asyncio.gather(mine, pointed), 5)
    [request] = transport.requests
    assert request.guard and request.checked == CHECKED


async def test_the_users_own_fetch_is_not_guarded() -> None:
    transport = Transport()
    cache, _ = make(transport)
    await cache.fetched(SITE)
    [request] = transport.requests
    assert not request.guard and request.checked == ()


async def test_a_refused_guarded_fetch_leaves_robots_txt_unavailable() -> None:
    refused = RobotsResponse(0, {}, None, SITE + "/robots.txt",
                             refused="robots.txt refused a pointer from a public site")
    cache, _ = make(Transport(refused))
    site = await cache.fetched(SITE, True, CHECKED)
    assert site.entry.outcome == Outcome.UNAVAILABLE
    assert "refused a pointer" in site.entry.detail



# -- a long robots.txt parsed off the loop -----------------------------------------------


def _long_robots(size: int) -> bytes:
    """About ``size`` bytes of rules, a third of them wildcards (the compile's work)."""
    lines = [b"User-agent: *\nDisallow: /private/\n"]
    n = 0
    while sum(map(len, lines)) < size:
        lines.append(b"Disallow: /f/%06d/*/x$\n" % n if n % 3 else b"Allow: /f/%06d/\n" % n)
        n += 1
    return b"".join(lines)


@pytest.mark.parametrize("size", [64 * 1024, pytest.param(600 * 1024, marks=pytest.mark.soak)])
async def test_a_long_robots_txt_is_parsed_and_compiled_in_a_worker_thread(
        monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    """Parsing 500 KiB of rules and compiling them would hold the loop most of a second:
    a body over PARSED_ASIDE is parsed, its agent's group compiled, off the loop's
    thread; a short one on it.  The answers are the inline parse's."""
    import threading

    from robotgate.policy import site as site_module
    from robotgate.politeness import robots_cache
    from robotgate.robots import RobotsTxt

    threads: list[tuple[str, int]] = []

    def recording(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def record(*args: Any, **kwargs: Any) -> Any:
            threads.append((name, threading.get_ident()))
            return real(*args, **kwargs)
        return record

    # Recorded by the module functions' names: a compiled build's classes (the
    # decider's) cannot be patched.
    parse = recording("parse", site_module.parse_entry)
    monkeypatch.setattr(site_module, "parse_entry", parse)
    monkeypatch.setattr(robots_cache, "parse_entry", parse, raising=False)
    monkeypatch.setattr(robots_cache, "parsed_aside",
                        recording("parse and compile", robots_cache.parsed_aside))
    body = _long_robots(size)
    cache, _ = make(Transport(RobotsResponse(200, {}, body)))
    site = await cache.get(SITE)
    loop_thread = threading.get_ident()
    assert [name for name, _ in threads] == ["parse and compile", "parse"]
    assert all(thread != loop_thread for _, thread in threads)
    inline = RobotsTxt.parse(body.decode(), max_bytes=FetchPolicy().max_bytes)
    paths = ["/", "/private/a", "/f/000001/a/x", "/f/000001/a/x/", "/f/000003/b", "/g"]
    assert [site.allowed(p, AGENT) for p in paths] == [inline.allowed(p, AGENT) for p in paths]
    assert [site.allowed(p, AGENT) for p in paths] == [True, False, False, True, True, True]

    threads.clear()
    short, _ = make(Transport(RobotsResponse(200, {}, body[:robots_cache.PARSED_ASIDE])))
    await short.get(SITE)
    # On the loop (a compiled build's site module calls its parse without the patch).
    assert [name for name, _ in threads] in (["parse"], [])
    assert all(thread == loop_thread for _, thread in threads)


# -- a KeyboardInterrupt while robots.txt is read ------------------------------------------


def test_a_keyboard_interrupt_reaches_the_asker_and_a_later_ask_fetches_again() -> None:
    """In a child process (tests/support/children/robots_interrupt.py): a KeyboardInterrupt
    that escaped to the event loop would stop the loop, and leave the interpreter that
    ran it unfit to report the failure."""
    done = subprocess.run([sys.executable, "-m", "tests.support.children.robots_interrupt"],
                          capture_output=True, text=True,
                          timeout=60, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "caught": ["asker"], "other_waiter": "answered", "later_ask": "answered",
        "requests": 2, "inflight": 0}
