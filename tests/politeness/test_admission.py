"""The request path (verdicts.py, servers.py, request_turn.py) with fakes: no HTTP
client, a fake clock.

:func:`build` wires the robots.txt cache, the politeness keys, the scheduler, the
verdicts, the servers and the request turns the way the gate does.  The fast path
(cached, allowed, due) must start the server's turn at once, without a coroutine.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import inspect
import itertools
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from robotgate import RobotGate
from robotgate.decision import Decision
from robotgate.errors import Disallowed, GateClosed
from robotgate.policy.fetch import FetchPolicy
from robotgate.policy.fetch_flow import RobotsRequest, RobotsResponse
from robotgate.policy.hops import REFUSED, Resolve
from robotgate.policy.pacing import Pacing
from robotgate.policy.provenance import INPUT, pointer_of
from robotgate.policy.site import Interpretation, SiteRules
from robotgate.politeness.fleet_slots import FleetSlots, LateSlot, Slot
from robotgate.politeness.grouping import PaceKeys
from robotgate.politeness.request_turn import Requests, RequestTurn, sent_in_turn
from robotgate.politeness.robots_cache import RobotsCache
from robotgate.politeness.robots_fetcher import PacingHooks, RobotsFetcher
from robotgate.politeness.robots_pacing import RobotsPacing
from robotgate.politeness.scheduler import Group, Scheduler
from robotgate.politeness.servers import Servers, Started
from robotgate.politeness.verdicts import Verdicts
from robotgate.records import HostState
from robotgate.robots.rfc9309 import Rfc9309Rules, parse_rfc9309
from robotgate.robots.rules import RequestRate, RobotsTxt
from robotgate.store.base import Store
from robotgate.store.memory import MemoryStore
from tests.support.arrivals import Arrivals
from tests.support.clock import Clock
from tests.support.dialects import registered_dialect
from tests.support.plain_store import PlainStore
from tests.support.slots_store import SlotsNow

AGENT = "AdmitBot/1.0"
A = "http://a.example"
ROBOTS = b"User-agent: *\nDisallow: /private\n"



class Transport:
    """robots.txt per host from a table (default ROBOTS); may take fake time to answer."""

    def __init__(self, clock: Clock, bodies: dict[str, bytes] | None = None,
                 takes: float = 0.0) -> None:
        self.clock = clock
        self.bodies = bodies or {}
        self.takes = takes
        self.statuses: dict[str, int] = {}  # robots.txt status per host (default 200)
        self.requests: list[RobotsRequest] = []

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        self.requests.append(request)
        self.clock.advance(self.takes)
        origin = request.url.rsplit("/", 1)[0]
        return RobotsResponse(self.statuses.get(origin, 200), {}, self.bodies.get(origin, ROBOTS))


class DictStore(PlainStore):
    """A non-memory store (so the servers save their state), optionally failing."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.host_saves = 0

    async def save_host(self, state: HostState) -> None:
        self.host_saves += 1
        if self.fail:
            raise OSError(28, "No space left on device")
        await super().save_host(state)


class Parts:
    """The verdicts, the servers and the request turns of one robot, wired as the gate
    wires them, with the short names these tests use."""

    def __init__(self, verdicts: Verdicts, servers: Servers, requests: Requests) -> None:
        self.verdicts = verdicts
        self.servers = servers
        self.requests = requests
        self.cache = verdicts.cache
        self.scheduler = servers.scheduler
        self.store = servers.store
        self.fleet = servers.fleet
        self.site = verdicts.site
        self.check = verdicts.check
        self.cached = verdicts.cached
        self.answered = servers.answered
        self.done = servers.done
        self.known_group = servers.known_group

    def turn(self, url: str, came_from: str | None = None, resolve: Resolve | None = None,
             paced: bool = True) -> RequestTurn:
        """A request's turn: the caller's input, or a redirect of ``came_from``."""
        provenance = INPUT if came_from is None else pointer_of(came_from)
        return self.requests.turn(url, provenance, resolve, paced)

    @property
    def disallowed(self) -> int:
        return self.verdicts.disallowed

    def robots_pacing(self, origin: str) -> RobotsPacing:
        return RobotsPacing(self.servers, origin)

    def admit(self, url: str) -> Group | Awaitable[Started]:
        """A request's turn begun: its started Group when it may go at once, else an
        awaitable of the Group and the fleet slot it holds."""
        turn = self.requests.turn(url, INPUT)
        ready = turn.begin()
        if ready is None:
            assert turn.group is not None
            return turn.group
        return _started(turn, ready)


async def _started(turn: RequestTurn, ready: Awaitable[None]) -> Started:
    await ready
    assert turn.group is not None
    return turn.group, turn.slot


def build(clock: Clock, *, store: Store | None = None, transport: Transport | None = None,
          delay: float = 1.0, pacing: Pacing | None = None, fleet: bool = False,
          recheck_visits: int | None = 1000, max_groups: int = 100_000,
          dialect: str = "rfc9309") -> Parts:
    store = store if store is not None else MemoryStore()
    pacing = pacing or Pacing(delay=delay)
    sched = Scheduler(pacing, clock=clock, wall=clock.now_wall, max_groups=max_groups)
    transport = transport or Transport(clock)
    keys = PaceKeys("host")
    slots = FleetSlots(store) if fleet else None

    def robots(servers: Servers) -> RobotsCache:
        return RobotsCache(RobotsFetcher(transport, FetchPolicy()), store,
                           Interpretation(AGENT, dialect, pacing=pacing),
                           host_state=servers.host_state,
                           paced_by=functools.partial(RobotsPacing, servers),
                           recheck_visits=recheck_visits)

    servers = Servers(keys, sched, store, slots, robots=robots)
    verdicts = Verdicts(servers.cache, keys, AGENT, slots)
    return Parts(verdicts, servers, Requests(verdicts, servers))


def transport_of(admission: Parts) -> Transport:
    return admission.cache.fetcher.transport  # type: ignore[return-value]


async def run(admission: Parts, url: str, status: int = 200) -> Group:
    """One whole request: admitted (awaiting if it must), answered, done."""
    got = admission.admit(url)
    group = got if isinstance(got, Group) else await asyncio.wait_for(group_of(got), 10)
    pending = admission.answered(group, status, None)
    if pending is not None:
        await pending
    admission.done(group)
    return group


async def group_of(got: Awaitable[Started]) -> Group:
    """The group of an admission that had to wait (its fleet slot aside)."""
    group, _ = await got
    return group


@contextlib.asynccontextmanager
async def pending(got: Group | Awaitable[Started]) -> AsyncIterator[asyncio.Future[Group]]:
    """Run an admission that must wait in a task; cancel it if the test leaves it waiting."""
    assert not isinstance(got, Group), "started at once, but it had to wait"
    task = asyncio.ensure_future(group_of(got))
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def still_waiting(task: asyncio.Future[Group]) -> bool:
    await asyncio.sleep(0.05)  # real time; the fake clock stands still
    return not task.done()


# -- the fast path ---------------------------------------------------------------------


async def test_cached_allowed_and_due_is_synchronous() -> None:
    clock = Clock()
    admission = build(clock, delay=1.0)
    await admission.site(A)
    clock.advance(1.0)
    got = admission.admit(A + "/page")
    assert isinstance(got, Group) and not inspect.isawaitable(got)
    assert got.active == 1 and got.key == "host:a.example"
    assert admission.answered(got, 200, None) is None
    admission.done(got)
    clock.advance(1.0)
    again = admission.admit(A + "/other")
    assert again is got  # the same group, started again without a coroutine
    admission.done(again)


async def test_not_yet_due_gives_an_awaitable_that_waits() -> None:
    clock = Clock()
    admission = build(clock, delay=0.05)
    await admission.site(A)
    clock.advance(0.05)
    await run(admission, A + "/1")
    got = admission.admit(A + "/2")
    assert inspect.isawaitable(got)
    async with pending(got) as task:
        assert await still_waiting(task)
        clock.advance(0.05)
        group = await asyncio.wait_for(task, 10)
    assert group.active == 1
    admission.done(group)


async def test_an_uncached_origin_fetches_robots_once_then_paces_from_its_answer() -> None:
    clock = Clock()
    transport = Transport(clock, takes=5.0)  # robots.txt answers 5 s later
    admission = build(clock, transport=transport, delay=0.05)
    got = admission.admit(A + "/page")
    assert inspect.isawaitable(got)
    async with pending(got) as task:
        assert await still_waiting(task)  # the robots.txt answer was the last request
        assert len(transport.requests) == 1
        clock.advance(0.05)
        group = await asyncio.wait_for(task, 10)
    admission.done(group)
    assert len(transport.requests) == 1
    assert group.state.visits == 1  # the robots.txt request is not a visit


async def test_robots_txt_of_a_sibling_origin_waits_its_turn() -> None:
    # http and https of one host share one budget; robots.txt requests count too.
    clock = Clock()
    transport = Transport(clock)
    admission = build(clock, transport=transport, delay=0.05)
    await admission.site(A)
    clock.advance(0.05)
    await run(admission, A + "/page")
    sibling = admission.admit("https://a.example/page")
    async with pending(sibling) as task:
        assert await still_waiting(task)
        assert len(transport.requests) == 1  # https's robots.txt not asked yet
        clock.advance(0.05)
        for _ in range(100):
            if len(transport.requests) == 2:
                break
            await asyncio.sleep(0.01)
        assert len(transport.requests) == 2
        assert await still_waiting(task)  # and the page waits after the robots.txt
        clock.advance(0.05)
        group = await asyncio.wait_for(task, 10)
    admission.done(group)


async def test_fleet_always_takes_the_slow_path() -> None:
    clock = Clock()
    admission = build(clock, delay=0.0, fleet=True)
    await admission.site(A)
    got = admission.admit(A + "/page")
    assert inspect.isawaitable(got)
    group = await asyncio.wait_for(group_of(got), 10)
    admission.done(group)


# -- robots.txt verdicts ------------------------------------------------------------------


async def test_disallowed_is_raised_at_once_when_cached() -> None:
    clock = Clock()
    admission = build(clock)
    await admission.site(A)
    with pytest.raises(Disallowed) as info:
        admission.admit(A + "/private/x")  # no await: raised by admit itself
    d = info.value.decision
    assert not d.allowed and d.rule is not None and d.rule.line == 2
    assert info.value.url == A + "/private/x"
    assert admission.disallowed == 1
    group = admission.scheduler.get("host:a.example")
    assert group is not None and group.active == 0 and group.busy == 0


async def test_disallowed_is_raised_by_the_awaitable_when_not_cached() -> None:
    clock = Clock()
    admission = build(clock)
    got = admission.admit(A + "/private/x")
    assert inspect.isawaitable(got)
    with pytest.raises(Disallowed) as info:
        await asyncio.wait_for(got, 10)
    assert "Disallow: /private" in str(info.value)


async def test_disallowed_shows_no_password() -> None:
    clock = Clock()
    admission = build(clock)
    await admission.site(A)
    with pytest.raises(Disallowed) as info:
        admission.admit("http://user:secret@a.example/private/x")
    assert "secret" not in str(info.value) and "secret" not in info.value.url


@pytest.mark.slow
async def test_a_crawl_delay_beyond_the_limit_skips_the_origin_with_its_reason() -> None:
    clock = Clock()
    transport = Transport(clock, {A: b"User-agent: *\nCrawl-delay: 120\n"})
    admission = build(clock, transport=transport,
                      pacing=Pacing(delay=1.0, max_crawl_delay=60.0))
    got = admission.admit(A + "/x")
    assert not isinstance(got, Group)
    with pytest.raises(Disallowed) as info:
        await asyncio.wait_for(got, 10)
    assert "Crawl-delay 120 s exceeds max_crawl_delay 60 s" in info.value.decision.reason


async def test_crawl_delay_paces_the_origin() -> None:
    clock = Clock()
    transport = Transport(clock, {A: b"User-agent: *\nCrawl-delay: 5\n"})
    admission = build(clock, transport=transport, delay=1.0)
    await admission.site(A)
    clock.advance(5.0)
    await run(admission, A + "/1")
    clock.advance(4.9)
    got = admission.admit(A + "/2")
    assert not isinstance(got, Group)
    async with pending(got) as task:
        assert await still_waiting(task)
        clock.advance(0.1)
        admission.done(await asyncio.wait_for(task, 10))


async def test_recheck_after_n_visits_refetches_robots_txt() -> None:
    clock = Clock()
    transport = Transport(clock)
    admission = build(clock, transport=transport, delay=0.0, recheck_visits=3)
    for i in range(3):
        await run(admission, f"{A}/{i}")
    assert len(transport.requests) == 1
    await run(admission, A + "/3")
    assert len(transport.requests) == 2
    group = admission.scheduler.get("host:a.example")
    assert group is not None and group.state.visits_since_check == 1


# -- check: the synchronous verdict ---------------------------------------------------------

TRICKY = ROBOTS + b"Allow: /private/ok\n"
URLS = ["/private", "/private/ok", "/public", "/a/../private/x", "/%2e%2e/private",
        "/a/%2E%2E/private", "//private", "/private?x=1", "", "?q=/private", "/PRIVATE",
        "/robots.txt", "/pri%76ate"]


async def test_check_is_none_until_robots_txt_is_cached() -> None:
    admission = build(Clock())
    assert admission.check(A + "/private") is None
    assert transport_of(admission).requests == []  # check never fetches


@pytest.mark.parametrize("dialect", ["rfc9309", "classic"])  # classic: rules see paths only
@pytest.mark.parametrize("rest", URLS)
async def test_check_answers_as_decide_on_the_slow_and_the_fast_path(rest: str,
                                                                       dialect: str) -> None:
    admission = build(Clock(), transport=None, dialect=dialect)
    transport_of(admission).bodies[A] = TRICKY
    site = await admission.site(A)
    expected = site.decide(admission.cached(A + rest)[1], AGENT)  # type: ignore[index]
    first = admission.check(A + rest)  # not yet learnt: the slow path learns it
    again = admission.check(A + rest)  # the prefix map
    assert first == again == expected
    assert again is not None and again.allowed == site.allowed(A + rest, AGENT)


class _Resolving(RobotsTxt):
    """A third dialect that resolves dot segments itself (RFC 9309's rules, wrapped)."""

    __slots__ = ("inner",)
    DIALECT = "test-resolving"
    RESOLVES_DOT_SEGMENTS = True

    def __init__(self, inner: Rfc9309Rules) -> None:
        self.inner = inner

    def allowed(self, url: str, user_agent: str) -> bool:
        return self.inner.allowed(url, user_agent)

    def decide(self, url: str, user_agent: str) -> Decision:
        return self.inner.decide(url, user_agent)

    def crawl_delay(self, user_agent: str) -> float | None:
        return self.inner.crawl_delay(user_agent)

    def request_rate(self, user_agent: str) -> RequestRate | None:
        return self.inner.request_rate(user_agent)

    @property
    def sitemaps(self) -> list[str]:
        return self.inner.sitemaps

    @property
    def agents(self) -> list[str]:
        return self.inner.agents


async def test_check_answers_for_another_dialect_that_resolves_dot_segments() -> None:
    # Only RFC 9309's rules are handed URLs as written; another dialect gets the path the
    # client sends, and its verdicts stay those of its own decide().
    with registered_dialect("test-resolving", lambda text, url: _Resolving(parse_rfc9309(text)),
                            _Resolving):
        admission = build(Clock(), transport=None, dialect="test-resolving")
        transport_of(admission).bodies[A] = TRICKY
        site = await admission.site(A)
        assert isinstance(site.rules, _Resolving)
        for rest in URLS:
            expected = site.rules.decide(admission.cached(A + rest)[1], AGENT)  # type: ignore[index]
            for _ in range(2):  # the slow path, then the prefix map
                assert admission.check(A + rest) == expected, rest
        d = admission.check(A + "/a/%2E%2E/private")
        assert d is not None and not d.allowed and d.line == 2


@pytest.mark.parametrize(("status", "allowed"), [(503, False), (404, True)])
async def test_check_answers_a_whole_site_verdict(status: int, allowed: bool) -> None:
    admission = build(Clock())
    transport_of(admission).statuses[A] = status
    site = await admission.site(A)
    assert site.verdict is not None and site.rules is None
    for _ in range(2):  # learnt on the slow path, then the prefix map
        for rest in ("/private", "/a/../private", "/public", "/robots.txt"):
            d = admission.check(A + rest)
            assert d is site.verdict and d.allowed is allowed, rest


async def test_check_reads_the_path_the_client_sends() -> None:
    admission = build(Clock())
    await admission.site(A)
    admission.check(A + "/")
    for rest in ("/a/../private/x", "/%2e%2e/private", "/public/%2E%2E/private"):
        d = admission.check(A + rest)
        assert d is not None and not d.allowed and d.line == 2, rest
    d = admission.check(A + "/private/../public")
    assert d is not None and d.allowed


async def test_check_never_answers_for_another_origin_sharing_a_prefix() -> None:
    # check() remembers the last origin it answered for: a look-alike must not pass as it.
    evil = A + ".evil"
    admission = build(Clock(), delay=0.0)
    transport_of(admission).bodies[evil] = b"User-agent: *\nDisallow: /public\n"
    await admission.site(A)
    await admission.site(evil)
    for _ in range(2):
        for url, allowed in ((A + "/public", True), (evil + "/public", False),
                             (A + "/private", False), (A, True), (evil + "/private", True),
                             (A + ":80/public", True)):  # the same origin, written out
            d = admission.check(url)
            assert (d.allowed if d is not None else None) is allowed, url


async def test_check_is_none_once_stale_or_due_for_a_recheck() -> None:
    clock = Clock()
    admission = build(clock, delay=0.0, recheck_visits=2)
    site = await admission.site(A)
    assert admission.check(A + "/x") is not None
    await run(admission, A + "/1")
    await run(admission, A + "/2")
    assert admission.check(A + "/x") is None  # two visits: robots.txt is asked again first
    held = admission.cache.known(A)
    assert held is not None and held.site is site
    held.host.visits_since_check = 0  # as the scheduler's recheck would
    assert admission.check(A + "/x") is not None
    _go_stale(admission, A)
    assert admission.check(A + "/x") is None


def _go_stale(admission: Parts, origin: str) -> None:
    """Play the cache replacing ``origin``'s rules by a copy that is no longer fresh."""
    held = admission.cache.known(origin)
    assert held is not None
    old = held.site
    held.site = SiteRules(old.entry.copy(fresh_until=0.0), old.rules, old.verdict, old.interval)


async def test_check_answers_from_the_newer_rules_after_a_refetch() -> None:
    clock = Clock()
    transport = Transport(clock)
    admission = build(clock, transport=transport, delay=0.0)
    first = await admission.site(A)
    assert admission.check(A + "/x") == first.decide("/x", AGENT)  # learnt and remembered
    transport.bodies[A] = b"User-agent: *\nDisallow: /x\n"
    _go_stale(admission, A)  # stale, here and in the store: the next ask fetches it again
    await admission.store.save_robots(first.entry.copy(fresh_until=0.0))
    second = await asyncio.wait_for(admission.site(A), 10)
    assert second is not first and len(transport.requests) == 2
    for _ in range(2):  # the stale copy is not what check() keeps answering from
        d = admission.check(A + "/x")
        assert d is not None and not d.allowed and d.line == 2


# -- answered and the store --------------------------------------------------------------


async def test_answered_needs_no_coroutine_with_the_memory_store() -> None:
    clock = Clock()
    admission = build(clock, delay=0.0)
    await admission.site(A)
    group = admission.admit(A + "/1")
    assert isinstance(group, Group)
    assert admission.answered(group, 200, None) is None
    assert admission.answered(group, 429, None) is None  # not shared: nobody to tell
    admission.done(group)


async def test_answered_saves_host_state_to_a_persistent_store() -> None:
    clock = Clock()
    store = DictStore()
    admission = build(clock, store=store, delay=0.0)
    await admission.site(A)
    got = admission.admit(A + "/1")
    group = got if isinstance(got, Group) else await group_of(got)
    pending_save = admission.answered(group, 200, None)
    assert pending_save is not None
    await pending_save
    admission.done(group)
    assert store.hosts["host:a.example"].visits == 1


async def test_a_store_that_cannot_save_host_state_does_not_stop_the_crawl() -> None:
    clock = Clock()
    store = DictStore(fail=True)
    admission = build(clock, store=store, delay=1.0)
    await admission.site(A)
    clock.advance(1.0)
    await run(admission, A + "/1")  # the failing save is swallowed
    assert admission.cache.store_errors >= 1
    got = admission.admit(A + "/2")
    assert not isinstance(got, Group)  # still paced
    async with pending(got) as task:
        assert await still_waiting(task)


async def test_429_backs_off_the_group() -> None:
    clock = Clock()
    admission = build(clock, delay=1.0)
    await admission.site(A)
    clock.advance(1.0)
    group = await run(admission, A + "/1", status=429)
    assert admission.scheduler.wait_seconds(group) > 1.0
    assert admission.scheduler.stats["backoffs"] == 1


async def test_origins_of_one_host_share_one_group() -> None:
    clock = Clock()
    admission = build(clock, delay=0.0)
    g1 = await run(admission, A + "/1")
    g2 = await run(admission, "https://a.example:8443/1")
    assert g1 is g2 and g1.state.visits == 2


async def test_an_evicted_group_keeps_its_pacing_with_the_memory_store() -> None:
    clock = Clock()
    admission = build(clock, delay=1.0, max_groups=1)
    await admission.site(A)
    clock.advance(1.0)
    await run(admission, A + "/1")  # a.example must now wait 1 s
    await admission.site("http://b.example")  # b's group evicts a's
    assert admission.scheduler.get("host:a.example") is None
    got = admission.admit(A + "/2")
    assert not isinstance(got, Group)
    async with pending(got) as task:
        assert await still_waiting(task)


async def test_an_evicted_group_keeps_its_pacing_with_a_persistent_store() -> None:
    clock = Clock()
    admission = build(clock, store=DictStore(), delay=1.0, max_groups=1)
    await admission.site(A)
    clock.advance(1.0)
    await run(admission, A + "/1")
    await admission.site("http://b.example")
    assert admission.scheduler.get("host:a.example") is None
    got = admission.admit(A + "/2")
    assert not isinstance(got, Group)
    async with pending(got) as task:
        assert await still_waiting(task)


@contextlib.asynccontextmanager
async def served(handle: Callable[[web.Request], Awaitable[web.StreamResponse]],
                 ports: dict[str, int], *addresses: str) -> AsyncIterator[dict[str, int]]:
    """``handle`` serving every path on each loopback address; ``ports`` filled in."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        for address in addresses:
            site = web.TCPSite(runner, address, 0)
            await site.start()
            ports[address] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        yield ports
    finally:
        await runner.cleanup()


@pytest.mark.slow
async def test_a_robots_txt_refetch_keeps_to_the_crawl_delay() -> None:
    # recheck_visits=2: robots.txt is asked again between pages, at the Crawl-delay's
    # pace (0.3 s), not the gate's delay (0.05 s).
    server = Arrivals(robots="User-agent: *\nCrawl-delay: 0.3\n")
    base = f"http://127.0.0.1:{await server.listen()}"
    try:
        async with RobotGate("T/1", delay=0.05, policy=FetchPolicy(recheck_visits=2)) as gate:
            for i in range(5):
                async with gate.fetch(f"{base}/p{i}"):
                    pass
    finally:
        await server.close()
    assert server.robots_requests == 3
    assert min(server.gaps()) >= 0.29


@pytest.mark.slow
async def test_a_robots_txt_refetch_answered_503_pauses_the_server() -> None:
    # The earlier copy stands in, so pages go on, but only after the Retry-After.
    arrivals: list[tuple[float, str, int]] = []
    robots_asked = 0

    async def robots(request: web.Request) -> web.Response:
        nonlocal robots_asked
        robots_asked += 1
        status = 200 if robots_asked == 1 else 503
        arrivals.append((time.monotonic(), request.path, status))
        if status == 503:
            return web.Response(status=503, headers={"Retry-After": "1"})
        return web.Response(text="User-agent: *\nDisallow: /private\n")

    async def page(request: web.Request) -> web.Response:
        arrivals.append((time.monotonic(), request.path, 200))
        return web.Response(text="page")

    async def handle(request: web.Request) -> web.Response:
        return await (robots if request.path == "/robots.txt" else page)(request)

    ports: dict[str, int] = {}
    async with served(handle, ports, "127.0.0.1"), RobotGate(
            "T/1", delay=0.05, policy=FetchPolicy(recheck_visits=2)) as gate:
        for i in range(3):
            async with gate.fetch(f"http://127.0.0.1:{ports['127.0.0.1']}/p{i}"):
                pass
    statuses = [(path, status) for _, path, status in arrivals]
    assert statuses == [("/robots.txt", 200), ("/p0", 200), ("/p1", 200),
                        ("/robots.txt", 503), ("/p2", 200)]
    assert arrivals[4][0] - arrivals[3][0] >= 0.95


@pytest.mark.slow
async def test_robots_txt_redirect_hops_are_paced_on_the_server_they_reach() -> None:
    # A's robots.txt: /robots.txt -> /r1 -> B's /robots-a.txt, just after a page of B.
    arrivals: list[tuple[float, str]] = []
    ports: dict[str, int] = {}

    async def handle(request: web.Request) -> web.StreamResponse:
        host = request.url.host or ""
        arrivals.append((time.monotonic(), f"{host}{request.path}"))
        if host == "127.0.0.1" and request.path == "/robots.txt":
            raise web.HTTPFound("/r1")
        if host == "127.0.0.1" and request.path == "/r1":
            raise web.HTTPFound(f"http://127.0.0.2:{ports['127.0.0.2']}/robots-a.txt")
        if request.path.startswith("/robots"):
            return web.Response(text="User-agent: *\nDisallow: /private\n")
        return web.Response(text="page")

    async with served(handle, ports, "127.0.0.1", "127.0.0.2"):
        a, b = (f"http://{h}:{ports[h]}" for h in ("127.0.0.1", "127.0.0.2"))
        async with RobotGate("T/1", delay=0.3) as gate:
            async with gate.fetch(f"{b}/p0"):
                pass
            async with gate.fetch(f"{a}/p0"):
                pass
    seen = [what for _, what in arrivals]
    assert seen == ["127.0.0.2/robots.txt", "127.0.0.2/p0", "127.0.0.1/robots.txt",
                    "127.0.0.1/r1", "127.0.0.2/robots-a.txt", "127.0.0.1/p0"]
    for host in ("127.0.0.1", "127.0.0.2"):
        times = [t for t, what in arrivals if what.startswith(host)]
        assert min(b - a for a, b in itertools.pairwise(times)) >= 0.29, host


@pytest.mark.slow
async def test_a_hops_wait_for_its_server_is_not_counted_against_the_timeout() -> None:
    # delay 0.6 s, timeout 0.5 s: the same-host hop waits 0.6 s for its turn and is
    # still fetched (it used to time out: the whole site disallowed).
    ports: dict[str, int] = {}

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            raise web.HTTPMovedPermanently("/robots2.txt")
        await asyncio.sleep(0.2)  # well within the timeout, once the turn has come
        return web.Response(text="User-agent: *\nDisallow: /private\n")

    async with served(handle, ports, "127.0.0.1"), RobotGate(
            "T/1", delay=0.6, policy=FetchPolicy(timeout=0.5)) as gate:
        base = f"http://127.0.0.1:{ports['127.0.0.1']}"
        assert await gate.allowed(f"{base}/x")  # unreachable would disallow it
        assert not await gate.allowed(f"{base}/private")


@pytest.mark.slow
async def test_a_hop_without_an_answer_paces_its_server_from_the_timeout() -> None:
    # The refetch's hop /r1 never answers within the timeout (0.5 s): the next page
    # waits the delay (0.3 s) after that timeout, not after the hop was sent.
    ports: dict[str, int] = {}
    arrivals: list[tuple[float, str]] = []
    robots_asked = 0

    async def handle(request: web.Request) -> web.StreamResponse:
        nonlocal robots_asked
        arrivals.append((time.monotonic(), request.path))
        if request.path == "/robots.txt":
            robots_asked += 1
            if robots_asked > 1:
                raise web.HTTPFound("/r1")
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/r1":
            await asyncio.sleep(1.0)
        return web.Response(text="page")

    async with served(handle, ports, "127.0.0.1"), RobotGate(
            "T/1", delay=0.3, policy=FetchPolicy(timeout=0.5, recheck_visits=2)) as gate:
        for i in range(3):
            async with gate.fetch(f"http://127.0.0.1:{ports['127.0.0.1']}/p{i}"):
                pass
    when = dict((path, t) for t, path in arrivals)
    assert [path for _, path in arrivals] == [
        "/robots.txt", "/p0", "/p1", "/robots.txt", "/r1", "/p2"]
    # 0.5 s timeout, then the 0.3 s delay: 0.8 s, less the first request's round trip,
    # which the deadline counts and a loaded machine stretches. Paced from the hop's
    # send instead, /p2 would follow the timeout at once: about 0.5 s.
    assert when["/p2"] - when["/r1"] >= 0.7


async def test_a_closed_cache_answers_gate_closed_without_its_own_error() -> None:
    admission = build(Clock())
    await admission.cache.close()
    admitted = admission.admit(A + "/x")
    assert not isinstance(admitted, Group)
    for asked in (admission.site(A), admitted):
        with pytest.raises(GateClosed) as closed:
            await asked
        # The cache's error stays out of the traceback, in the compiled build too.
        shown = "".join(traceback.format_exception(closed.value))
        assert "During handling" not in shown and "CacheClosed:" not in shown


# -- the request turn: what every client adapter drives --------------------------------


async def test_a_cached_due_turn_begins_without_a_coroutine_and_gives_its_slot_back_once(
) -> None:
    admission = build(Clock(), delay=0.0)
    await admission.site(A)
    turn = admission.turn(A + "/1")
    assert turn.begin() is None  # cached, allowed, due: no coroutine
    group = turn.group
    assert group is not None and group.busy == 1
    assert turn.leaving() is None and turn.sent_at is not None
    assert turn.answered(200, None) is None
    turn.release()
    turn.release()  # a second release (an error path after the first) gives nothing back
    assert group.free == group.size and group.active == 0
    assert turn.answered(503, None) is None  # released: the answer teaches nothing more


async def test_a_turn_that_would_wait_can_be_abandoned_and_takes_unpaced() -> None:
    admission = build(Clock(), delay=0.0)
    await admission.site(A)
    first = admission.turn(A + "/1")
    assert first.begin() is None
    second = admission.turn(A + "/2")
    ready = second.begin()
    assert ready is not None  # one request at a time to a server: the first holds it
    second.abandon(ready)
    gc.collect()  # a coroutine left unawaited would warn here (-W error)
    group = first.group
    assert group is not None and group.waiting == 0 and second.group is None
    first.release()


async def test_a_turn_judges_its_redirect_before_robots_txt_and_drops_credentials() -> None:
    admission = build(Clock(), delay=0.0)
    looked_up: list[str] = []

    async def resolve(host: str) -> list[str]:
        looked_up.append(host)
        return {"www.example.com": ["93.184.216.34"], "intranet.test": ["10.0.0.7"]}[host]

    turn = admission.turn("http://user:pw@intranet.test/admin#top", "http://www.example.com/",
                          resolve)
    ready = turn.begin()
    assert ready is not None
    with pytest.raises(Disallowed) as refused:
        await ready
    assert refused.value.decision.outcome == REFUSED
    assert refused.value.url == "http://intranet.test/admin"  # no credentials, no fragment
    assert looked_up == ["www.example.com", "intranet.test"]
    assert transport_of(admission).requests == []  # the target's robots.txt was never asked
    allowed = admission.turn(A + "/1", "http://www.example.com/", resolve=None)
    # No resolver: a name that cannot be looked up is refused, never followed blindly.
    with pytest.raises(Disallowed):
        await allowed.begin()  # type: ignore[misc]


def test_a_turn_sends_the_gates_headers() -> None:
    gate = RobotGate("HeadBot/1.0 (+https://example.com/bot)", from_="ops@example.com")
    turn = gate.request_turn("http://a.example/x", INPUT)
    assert dict(turn.headers) == {"User-Agent": "HeadBot/1.0 (+https://example.com/bot)",
                                  "From": "ops@example.com"}


async def test_a_slot_found_past_at_the_last_look_is_followed_by_the_next_one() -> None:
    store = SlotsNow()
    admission = build(Clock(), store=store, delay=1.0, fleet=True)
    await admission.site(A)
    turn = admission.turn(A + "/1")
    await turn.begin()  # type: ignore[misc]
    leaving = turn.leaving()
    assert leaving is not None
    await leaving
    first = turn.slot
    assert first is not None and turn.sent_at is not None
    reserved = store.reserved
    await turn.missed()  # the client's last look found the slot past: nothing was sent
    leaving = turn.leaving()
    assert leaving is not None
    await leaving
    # The request leaves in the next slot, which the client can look at again.
    assert turn.slot is not None and turn.slot is not first
    assert store.reserved == reserved + 1
    fleet = admission.fleet
    assert fleet is not None and fleet.late == 1
    turn.release()


class LateOnce(SlotsNow):
    """Grants every slot at once; the first grant reaches a loop that then runs late."""

    async def reserve(self, origin: str, interval: float) -> float | None:
        wait = await super().reserve(origin, interval)
        if self.reserved == 1:
            time.sleep(0.05)  # the loop stands still: past the slot's slack (0.01 s)
        return wait


async def test_a_robots_txt_request_late_for_its_fleet_slot_takes_the_next() -> None:
    # A robots.txt request is a request to the server: in a fleet it leaves within
    # its slot as a page does, or the slot is given up and the next one awaited.
    store = LateOnce()
    admission = build(Clock(), store=store, delay=1.0, fleet=True)
    async with admission.robots_pacing(A):
        pass
    fleet = admission.fleet
    assert fleet is not None
    assert store.reserved == 2 and fleet.late == 1
    group = admission.known_group(A)
    assert group is not None and group.active == 0 and group.free == group.size


# -- sent_in_turn: the steps every adapter but Scrapy drives through it -------------------


async def test_sent_in_turn_sends_again_in_the_next_slot_when_the_last_look_finds_it_past(
) -> None:
    store = SlotsNow()
    admission = build(Clock(), store=store, delay=1.0, fleet=True)
    await admission.site(A)
    turn = admission.turn(A + "/1")
    slots: list[Slot | None] = []

    async def send(turn: RequestTurn) -> int:
        slots.append(turn.slot)
        if len(slots) == 1:
            raise LateSlot  # the last look: past its deadline, nothing sent
        return 200

    assert await sent_in_turn(turn, send, lambda status: (status, None)) == 200
    assert len(slots) == 2 and slots[0] is not None and slots[1] is not slots[0]
    fleet = admission.fleet
    assert fleet is not None and fleet.late == 1
    group = admission.known_group(A)
    assert group is not None and group.active == 0 and turn.group is None  # released


async def test_sent_in_turn_drops_the_response_and_releases_when_hearing_it_fails() -> None:
    admission = build(Clock(), delay=0.0)
    await admission.site(A)
    turn = admission.turn(A + "/1")
    dropped: list[int] = []

    async def send(turn: RequestTurn) -> int:
        return 200

    def heard(status: int) -> tuple[int, str | None]:
        raise RuntimeError("a broken response")

    def drop(status: int) -> None:
        dropped.append(status)

    with pytest.raises(RuntimeError):
        await sent_in_turn(turn, send, heard, drop=drop)
    group = admission.known_group(A)
    assert dropped == [200] and group is not None and group.active == 0


async def test_sent_in_turn_with_keep_holds_the_server_until_the_caller_releases() -> None:
    admission = build(Clock(), delay=0.0)
    await admission.site(A)
    turn = admission.turn(A + "/1")

    async def send(turn: RequestTurn) -> int:
        return 200

    await sent_in_turn(turn, send, lambda status: (status, None), keep=True)
    group = admission.known_group(A)
    assert group is not None and group.busy == 1  # a streamed body still being read
    turn.release()
    assert group.busy == 0
