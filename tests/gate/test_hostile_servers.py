"""Issue 12 against the gate on loopback: what hostile servers and failing stores get.

Each test runs its own small server; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from robotgate import (
    Disallowed,
    GateClosed,
    MemoryStore,
    Network,
    Pacing,
    RobotGate,
    RobotsEntry,
)
from robotgate.events import Event, ResponseAnswered

AGENT = "HostileBot/1.0 (+https://example.com/bot)"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Site:
    """One loopback listener whose routes the test sets; notes every request."""

    def __init__(self) -> None:
        self.routes: dict[str, Handler] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def start(self, host: str = "127.0.0.1") -> Site:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.path, dict(request.headers)))
        handler = self.routes.get(request.path)
        if handler is None:
            if request.path == "/robots.txt":
                return web.Response(text="User-agent: *\nDisallow: /private\n")
            return web.Response(text="page")
        return await handler(request)

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.requests if p == path)


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    s = await Site().start()
    yield s
    await s.close()


@pytest.mark.parametrize("value", ["²", "Mon, 01 Jan 99999999999999999999 00:00:00 GMT", "-5",
                                   "1e400", "soon"])
async def test_unparseable_retry_after_counts_as_absent(site: Site, value: str) -> None:
    async def limited(request: web.Request) -> web.Response:
        return web.Response(status=429, headers={"Retry-After": value})

    site.routes["/busy"] = limited
    async with RobotGate(AGENT, delay=0, pacing=Pacing(max_backoff=0.2)) as gate:
        resp = await gate.fetch(site.url("/busy"))
        assert resp.status == 429
        assert gate.stats["backoffs"] == 1
        # No Retry-After understood: the adaptive back-off applies instead (its state, not
        # the wait left of it, which a loaded machine may have spent already).
        state = gate.host_state(site.url("/"))
        assert state is not None and 0 < state.backoff <= 0.2, state
        assert gate.host_wait(site.url("/")) <= 0.2


async def test_absurd_freshness_headers_keep_a_good_robots_txt(site: Site) -> None:
    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nDisallow: /private\n", headers={
            "Expires": "Mon, 01 Jan 99999999999999999999 00:00:00 GMT",
            "Cache-Control": "max-age=" + "9" * 40})

    site.routes["/robots.txt"] = robots
    async with RobotGate(AGENT, delay=0) as gate:
        assert await gate.allowed(site.url("/public"))
        assert not await gate.allowed(site.url("/private"))
        entry = await gate.robots_entry(site.url("/"))
        assert entry.outcome == "ok" and entry.fresh_until > time.time() + 3600


async def test_close_ends_fetches_reading_a_trickling_body(site: Site) -> None:
    async def trickle(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        for _ in range(600):
            await resp.write(b"x")
            await asyncio.sleep(0.1)
        return resp

    site.routes["/slow"] = trickle
    answered: list[str] = []

    def heard(event: Event) -> None:
        if isinstance(event, ResponseAnswered) and "/slow" in event.url:
            answered.append(event.url)

    gate = RobotGate(AGENT, delay=0, max_per_host=4, on_event=heard)
    await gate.open()
    readers = [asyncio.ensure_future(gate.fetch(site.url(f"/slow?{i}"))) for i in range(3)]
    try:
        for _ in range(1200):  # a hang guard only
            if len(answered) == 3:  # each reader has its headers: the body is being read
                break
            await asyncio.sleep(0.05)
        assert len(answered) == 3
    finally:
        await gate.close()
    # Ended by the close within 5 s, long before the trickles (60 s) would end.
    done, pending = await asyncio.wait(readers, timeout=5)
    assert not pending
    for task in done:
        with pytest.raises(GateClosed, match="closed while reading"):
            task.result()


class _FullDisk(MemoryStore):
    """The lock row fits, the 500 KiB body does not."""

    async def save_robots(self, entry: RobotsEntry) -> None:
        raise OSError(28, "No space left on device")


async def test_a_store_that_cannot_save_causes_no_request_storm(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="robotgate")
    async with RobotGate(AGENT, delay=1, store=_FullDisk()) as gate:
        answers = [await gate.allowed(site.url(f"/private/{i}")) for i in range(10)]
        assert answers == [False] * 10
        assert gate.stats["store_errors"] == 1
    assert site.count("/robots.txt") == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "No space left on device" in warnings[0].getMessage()


@pytest.mark.slow
async def test_per_server_tables_stay_bounded_with_delays_pending() -> None:
    hosts = [f"127.0.50.{i + 1}" for i in range(40)]
    sites = [await Site().start(host) for host in hosts]
    try:
        pairs = list(zip(hosts, sites, strict=True))
        async with RobotGate(AGENT, delay=1, network=Network(max_origins=10)) as gate:
            for batch in range(0, 40, 10):
                await asyncio.gather(*(gate.fetch(s.url("/page", host=host))
                                       for host, s in pairs[batch:batch + 10]))
            # Each batch's servers still had their delay pending when the next came,
            # and the tables hold at most max_origins (plus the groups with a request
            # in flight or waiting: none now).
            assert len(gate._scheduler) <= 10
            assert len(gate._cache.sites()) <= 10
            assert gate.stats["pages"] == 40
    finally:
        for s in sites:
            await s.close()


class _Resolver(aiohttp.abc.AbstractResolver):
    """Names as a test's DNS sees them: ``public.test`` is a public address."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[dict[str, Any]]:
        return [{"hostname": host, "host": self.table.get(host, "127.0.0.1"), "port": port,
                 "family": socket.AF_INET, "proto": 0, "flags": socket.AI_NUMERICHOST}]

    async def close(self) -> None:
        pass


def _only_loopback_1_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return str(address) != "127.0.0.1"


async def test_redirects_from_a_public_site_into_private_addresses_are_refused(
    site: Site,
) -> None:
    inner = await Site().start("127.0.0.2")
    try:
        target = f"http://user:secret@127.0.0.2:{inner.port}/robots.txt"

        async def to_inner(request: web.Request) -> web.Response:
            return web.Response(status=302, headers={"Location": target})

        site.routes["/robots.txt"] = to_inner
        site.routes["/go"] = to_inner
        # Connections go to loopback; the gate's own look-up sees public.test as public.
        connector = aiohttp.TCPConnector(resolver=_Resolver({}))
        async with aiohttp.ClientSession(connector=connector) as session:
            # The session's connector is what the hop is judged by: 127.0.0.1 plays public.
            async with RobotGate(AGENT, delay=0, session=session,
                                 is_private=_only_loopback_1_public) as gate:
                decision = await gate.decide(site.url("/x", host="public.test"))
                assert decision.allowed and decision.outcome == "unavailable"
                assert "refused a redirect from a public site" in decision.reason
                entry = await gate.robots_entry(site.url("/", host="public.test"))
                assert entry.body is None
                with pytest.raises(Disallowed, match="non-public address"):
                    await gate.fetch(site.url("/go", host="public.test"))
            # The same through the middleware, on a session of the user's.
            async with RobotGate(AGENT, delay=0, session=session,
                                 is_private=_only_loopback_1_public) as gate:
                with pytest.raises(Disallowed, match="non-public address"):
                    await session.get(site.url("/go", host="public.test"),
                                      middlewares=(gate.middleware,))
            # A private origin may redirect to a private address; credentials in the
            # Location are never sent.
            async with RobotGate(AGENT, delay=0, session=session) as gate:
                assert await gate.allowed(site.url("/x")) is True
        assert inner.count("/robots.txt") == 1
        assert all("Authorization" not in headers for _, headers in inner.requests)
    finally:
        await inner.close()
