"""A proxy's failure is the proxy's: robots.txt asked through a proxy that answers 407
(its credentials refused), or that cannot be reached, raises
:class:`~robotgate.ProxyFailed` (an ``aiohttp.ClientConnectionError`` on the aiohttp
paths), apart from any site's verdict: nothing cached or stored as the site's, and
``gate.crawl`` stops with it rather than skip every site."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web

from robotgate import Disallowed, MemoryStore, ProxyFailed, RobotGate
from tests.support.proxies import FailingProxy, closed_port

AGENT = "ProxyBot/1.0"
HOST = "127.0.0.1"
PASSWORD = "ProxyPw-5d1e"


@dataclass
class Site:
    url: str = ""
    paths: list[str] = field(default_factory=list)


@pytest.fixture
async def sites() -> AsyncIterator[list[Site]]:
    """Three loopback sites, each allowing everything but /no/."""
    found: list[Site] = []
    runners = []
    for n in range(3):
        site = Site()

        async def handle(request: web.Request, site: Site = site) -> web.Response:
            site.paths.append(request.path)
            if request.path == "/robots.txt":
                return web.Response(text="User-agent: *\nDisallow: /no/\n")
            return web.Response(text="page")

        app = web.Application()
        app.router.add_get("/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, f"127.0.0.{n + 1}", 0).start()
        site.url = f"http://127.0.0.{n + 1}:{runner.addresses[0][1]}"
        found.append(site)
        runners.append(runner)
    try:
        yield found
    finally:
        for runner in runners:
            await runner.cleanup()


@pytest.fixture(params=["407", "refused"])
async def proxy(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A failing proxy's URL (with its password): one answering 407, one on a port
    that refuses connections."""
    if request.param == "refused":
        yield f"http://user:{PASSWORD}@{HOST}:{closed_port(HOST)}"
        return
    failing = await FailingProxy(407, HOST, PASSWORD).start()
    try:
        yield failing.url
    finally:
        await failing.close()


def open_gate(**options: object) -> RobotGate:
    return RobotGate(AGENT, delay=0, is_private=lambda address: False,
                     **options)  # type: ignore[arg-type]


def the_proxys(failed: pytest.ExceptionInfo[ProxyFailed]) -> None:
    exc = failed.value
    assert isinstance(exc, aiohttp.ClientConnectionError)
    assert not isinstance(exc, Disallowed)
    assert "the proxy" in str(exc) and PASSWORD not in str(exc) and PASSWORD not in repr(exc)


async def test_gate_fetch_raises_the_proxys_failure_and_keeps_no_verdict(
        sites: list[Site], proxy: str) -> None:
    site = sites[0]
    store = MemoryStore()
    async with open_gate(store=store) as gate:
        with pytest.raises(ProxyFailed) as failed:
            await gate.fetch(f"{site.url}/page", proxy=proxy)
        the_proxys(failed)
        assert await store.load_robots(site.url) is None  # nothing stored as the site's
        # Nothing cached: without the proxy the site's own robots.txt is asked, and says.
        resp = await gate.fetch(f"{site.url}/page")
        assert resp.status == 200 and site.paths == ["/robots.txt", "/page"]
        with pytest.raises(Disallowed):
            await gate.fetch(f"{site.url}/no/page")


async def test_the_middleware_raises_the_proxys_failure(sites: list[Site], proxy: str) -> None:
    site = sites[0]
    async with open_gate() as gate, aiohttp.ClientSession(
            middlewares=(gate.middleware,)) as session:
        with pytest.raises(ProxyFailed) as failed:
            await session.get(f"{site.url}/page", proxy=proxy)
        the_proxys(failed)
        async with session.get(f"{site.url}/page") as resp:
            assert resp.status == 200
        assert site.paths == ["/robots.txt", "/page"]


async def test_a_crawl_through_a_failing_proxy_stops_and_says_so(
        sites: list[Site], proxy: str) -> None:
    handled: list[str] = []

    async def handler(url: str, resp: aiohttp.ClientResponse) -> tuple[str, ...]:
        handled.append(url)
        return ()

    # The session's own proxy: robots.txt and the pages go through it.
    async with aiohttp.ClientSession(proxy=proxy) as session, \
            open_gate(session=session) as gate:
        with pytest.raises(ProxyFailed) as failed:
            await gate.crawl([f"{site.url}/page" for site in sites], handler, retries=0)
        the_proxys(failed)
    assert handled == []
    assert all(site.paths == [] for site in sites)
