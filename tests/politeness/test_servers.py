"""Servers (politeness/servers.py): every server's state and what its answers teach
(back-off, the store's copy, eviction), and robots.txt requests paced as its pages;
with fakes (no HTTP client, a fake clock: tests/support/request_path.py)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from robotgate import RobotGate
from robotgate.errors import GateClosed
from robotgate.policy.fetch import FetchPolicy
from robotgate.policy.provenance import INPUT
from robotgate.politeness.scheduler import Group
from tests.support.arrivals import Arrivals
from tests.support.clock import Clock
from tests.support.request_path import (
    A,
    DictStore,
    begun,
    build,
    group_of,
    pending,
    run,
    still_waiting,
)

# -- answered and the store --------------------------------------------------------------


async def test_answered_needs_no_coroutine_with_the_memory_store() -> None:
    clock = Clock()
    parts = build(clock, delay=0.0)
    await parts.verdicts.site(A)
    group = begun(parts.requests.turn(A + "/1", INPUT))
    assert isinstance(group, Group)
    assert parts.servers.answered(group, 200, None) is None
    assert parts.servers.answered(group, 429, None) is None  # not shared: nobody to tell
    parts.servers.done(group)


async def test_answered_saves_host_state_to_a_persistent_store() -> None:
    clock = Clock()
    store = DictStore()
    parts = build(clock, store=store, delay=0.0)
    await parts.verdicts.site(A)
    got = begun(parts.requests.turn(A + "/1", INPUT))
    group = got if isinstance(got, Group) else await group_of(got)
    pending_save = parts.servers.answered(group, 200, None)
    assert pending_save is not None
    await pending_save
    parts.servers.done(group)
    assert store.hosts["host:a.example"].visits == 1


async def test_a_store_that_cannot_save_host_state_does_not_stop_the_crawl() -> None:
    clock = Clock()
    store = DictStore(fail=True)
    parts = build(clock, store=store, delay=1.0)
    await parts.verdicts.site(A)
    clock.advance(1.0)
    await run(parts, A + "/1")  # the failing save is swallowed
    assert parts.verdicts.cache.store_errors >= 1
    got = begun(parts.requests.turn(A + "/2", INPUT))
    assert not isinstance(got, Group)  # still paced
    async with pending(got) as task:
        assert await still_waiting(task)


async def test_429_backs_off_the_group() -> None:
    clock = Clock()
    parts = build(clock, delay=1.0)
    await parts.verdicts.site(A)
    clock.advance(1.0)
    group = await run(parts, A + "/1", status=429)
    assert parts.servers.scheduler.wait_seconds(group) > 1.0
    assert parts.servers.scheduler.stats["backoffs"] == 1


async def test_origins_of_one_host_share_one_group() -> None:
    clock = Clock()
    parts = build(clock, delay=0.0)
    g1 = await run(parts, A + "/1")
    g2 = await run(parts, "https://a.example:8443/1")
    assert g1 is g2 and g1.state.visits == 2


async def test_an_evicted_group_keeps_its_pacing_with_the_memory_store() -> None:
    clock = Clock()
    parts = build(clock, delay=1.0, max_groups=1)
    await parts.verdicts.site(A)
    clock.advance(1.0)
    await run(parts, A + "/1")  # a.example must now wait 1 s
    await parts.verdicts.site("http://b.example")  # b's group evicts a's
    assert parts.servers.scheduler.get("host:a.example") is None
    got = begun(parts.requests.turn(A + "/2", INPUT))
    assert not isinstance(got, Group)
    async with pending(got) as task:
        assert await still_waiting(task)


async def test_an_evicted_group_keeps_its_pacing_with_a_persistent_store() -> None:
    clock = Clock()
    parts = build(clock, store=DictStore(), delay=1.0, max_groups=1)
    await parts.verdicts.site(A)
    clock.advance(1.0)
    await run(parts, A + "/1")
    await parts.verdicts.site("http://b.example")
    assert parts.servers.scheduler.get("host:a.example") is None
    got = begun(parts.requests.turn(A + "/2", INPUT))
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
    # delay 1.5 s, timeout 1 s: the same-host hop waits 1.5 s for its turn and is
    # still fetched (it used to time out: the whole site disallowed).  The timeout
    # covers both requests' own time (0.1 s of the server's and the loop's): a margin
    # of 0.3 s was once spent by a CI machine running three suites on two cores.
    ports: dict[str, int] = {}

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            raise web.HTTPMovedPermanently("/robots2.txt")
        await asyncio.sleep(0.1)  # well within the timeout, once the turn has come
        return web.Response(text="User-agent: *\nDisallow: /private\n")

    async with served(handle, ports, "127.0.0.1"), RobotGate(
            "T/1", delay=1.5, policy=FetchPolicy(timeout=1.0)) as gate:
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
    parts = build(Clock())
    await parts.verdicts.cache.close()
    admitted = begun(parts.requests.turn(A + "/x", INPUT))
    assert not isinstance(admitted, Group)
    for asked in (parts.verdicts.site(A), admitted):
        with pytest.raises(GateClosed) as closed:
            await asked
        # The cache's error stays out of the traceback, in the compiled build too.
        shown = "".join(traceback.format_exception(closed.value))
        assert "During handling" not in shown and "CacheClosed:" not in shown
