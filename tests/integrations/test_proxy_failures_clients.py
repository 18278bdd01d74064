"""A proxy's failure is the proxy's on the httpx and Scrapy paths, as on aiohttp's
(tests/gate/test_proxy_failures.py): robots.txt asked through a proxy on a closed
loopback port (or one answering 407) raises :class:`~robotgate.ProxyFailed` in the
client's own error type (the kind the client alone raises for that proxy), never a
refusal of the site's (robots.txt unreachable), and nothing is cached for the site."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from robotgate import Disallowed, ProxyFailed, RobotGate
from tests.integrations.test_scrapy_middleware import crawl
from tests.support.proxies import FailingProxy, closed_port

httpx = pytest.importorskip("httpx")

from robotgate.integrations.httpx import (  # noqa: E402
    HttpxProxyFailed,
    HttpxProxyUnreachable,
    RobotGateTransport,
)

AGENT = "ProxyBot/1.0"
HOST = "127.0.0.1"
PASSWORD = "ProxyPw-77c2"


@pytest.fixture
async def site() -> AsyncIterator[str]:
    """A loopback site allowing everything."""
    async def handle(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(text="page")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.2", 0).start()
    try:
        yield f"http://127.0.0.2:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def open_gate() -> RobotGate:
    return RobotGate(AGENT, delay=0, is_private=lambda address: False)


# -- httpx -----------------------------------------------------------------------------------


async def test_httpx_a_refused_proxy_is_the_proxys_connect_error(site: str) -> None:
    proxy = f"http://user:{PASSWORD}@{HOST}:{closed_port(HOST)}"
    # Plain httpx: the page's request fails with a ConnectError.
    async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(proxy=proxy)) as plain:
        with pytest.raises(httpx.ConnectError) as alone:
            await plain.get(f"{site}/page")
    assert not isinstance(alone.value, ProxyFailed)
    async with open_gate() as gate:
        transport = RobotGateTransport(gate, httpx.AsyncHTTPTransport(proxy=proxy))
        async with httpx.AsyncClient(transport=transport) as client:
            for _ in range(2):  # asked again: nothing was cached as the site's
                with pytest.raises(ProxyFailed) as failed:
                    await client.get(f"{site}/page")
                exc = failed.value
                assert isinstance(exc, HttpxProxyUnreachable)
                assert isinstance(exc, httpx.ConnectError) and isinstance(exc, httpx.ProxyError)
                assert not isinstance(exc, Disallowed)
                assert PASSWORD not in str(exc) and PASSWORD not in repr(exc)
                assert exc.url == f"{site}/robots.txt"
                assert exc.request.url == f"{site}/page"  # the call's, as httpx sets it


async def test_httpx_a_407_from_the_proxy_is_the_proxys_failure(site: str) -> None:
    failing = await FailingProxy(407, HOST, PASSWORD).start()
    try:
        async with open_gate() as gate:
            transport = RobotGateTransport(gate, httpx.AsyncHTTPTransport(proxy=failing.url))
            async with httpx.AsyncClient(transport=transport) as client:
                with pytest.raises(HttpxProxyFailed) as failed:
                    await client.get(f"{site}/page")
                assert not isinstance(failed.value, (Disallowed, httpx.ConnectError))
                assert isinstance(failed.value, httpx.ProxyError)
                assert "407" in str(failed.value) and PASSWORD not in str(failed.value)
        assert failing.targets == [f"{site}/robots.txt"]  # the page was never sent
    finally:
        await failing.close()


async def test_httpx_without_a_proxy_a_refused_site_is_still_the_sites(site: str) -> None:
    down = f"http://{HOST}:{closed_port(HOST)}"
    async with open_gate() as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate)) as client:
        with pytest.raises(Disallowed) as refused:
            await client.get(f"{down}/page")
    assert not isinstance(refused.value, ProxyFailed)
    assert refused.value.decision.outcome == "unreachable"


# -- Scrapy ----------------------------------------------------------------------------------


def _dropped_kinds(result: dict[str, object]) -> list[list[str]]:
    dropped = result["dropped"]
    assert isinstance(dropped, list)
    return [entry["kinds"] for entry in dropped]


@pytest.mark.slow
async def test_scrapy_a_refused_proxy_reaches_the_errback_as_scrapy_alone_gives_it(
        site: str) -> None:
    pytest.importorskip("scrapy")
    proxy = f"http://user:{PASSWORD}@{HOST}:{closed_port(HOST)}"
    config = {"urls": [f"{site}/page"], "meta": {"proxy": proxy},
              "settings": {"ROBOTGATE_DELAY": 0, "RETRY_TIMES": 0}}
    alone = await crawl({**config, "robotgate": False,
                         "settings": {**config["settings"], "ROBOTSTXT_OBEY": False}})
    gated = await crawl(config)
    [alone_kinds] = _dropped_kinds(alone)
    [gated_kinds] = _dropped_kinds(gated)
    assert alone_kinds[0] == "scrapy.exceptions.DownloadConnectionRefusedError"
    assert alone_kinds[0] in gated_kinds  # the errback sees the same kind
    assert "robotgate.errors.ProxyFailed" in gated_kinds
    assert "robotgate.errors.Disallowed" not in gated_kinds
    [entry] = gated["dropped"]  # type: ignore[misc]
    assert PASSWORD not in entry["message"] and PASSWORD not in gated["stderr"]
    assert int(gated["stats"].get("robotgate/disallowed", 0)) == 0  # type: ignore[union-attr]


@pytest.mark.slow
async def test_scrapy_a_407_from_the_proxy_is_the_proxys_failure(site: str) -> None:
    pytest.importorskip("scrapy")
    failing = await FailingProxy(407, HOST, PASSWORD).start()
    try:
        result = await crawl({"urls": [f"{site}/page"], "meta": {"proxy": failing.url},
                              "settings": {"ROBOTGATE_DELAY": 0, "RETRY_TIMES": 0}})
    finally:
        await failing.close()
    [kinds] = _dropped_kinds(result)
    assert "robotgate.errors.ProxyFailed" in kinds
    assert "robotgate.errors.Disallowed" not in kinds
    assert failing.targets == [f"{site}/robots.txt"]  # the page was never sent


# -- crawlee ---------------------------------------------------------------------------------


def _proxy_info(proxy_url: str) -> object:
    from crawlee.proxy_configuration import ProxyInfo

    port = int(proxy_url.rsplit(":", 1)[1])
    return ProxyInfo(url=proxy_url, scheme="http", hostname=HOST, port=port,
                     username="user", password=PASSWORD)


@pytest.mark.parametrize("failure", ["refused", "407"])
async def test_crawlee_a_proxys_failure_is_the_error_crawlee_alone_raises(
        site: str, failure: str) -> None:
    """crawlee 1.11's own client: a proxy on a closed port raises ``impit.ConnectError``;
    a tunnel the proxy answers 407 raises crawlee's ``ProxyError`` (a ``SessionError``:
    the crawler rotates the session).  Through the gate: the same kinds, each also
    robotgate's ``ProxyFailed``, nothing cached as the site's."""
    pytest.importorskip("crawlee", reason="crawlee is not installed")
    import impit
    from crawlee.errors import ProxyError
    from crawlee.http_clients import ImpitHttpClient

    from robotgate.integrations.crawlee import RobotGateHttpClient

    failing = await FailingProxy(407, HOST, PASSWORD).start() if failure == "407" else None
    proxy = failing.url if failing else f"http://user:{PASSWORD}@{HOST}:{closed_port(HOST)}"
    kind = ProxyError if failing else impit.ConnectError
    url = "https://127.0.0.2:1/page" if failing else f"{site}/page"  # a tunnel for the 407
    try:
        async with ImpitHttpClient() as plain:
            with pytest.raises(kind):
                await plain.send_request(url, proxy_info=_proxy_info(proxy))  # type: ignore[arg-type]
        async with open_gate() as gate, RobotGateHttpClient(gate) as client:
            for _ in range(2):  # asked again: nothing was cached as the site's
                with pytest.raises(ProxyFailed) as failed:
                    await client.send_request(url, proxy_info=_proxy_info(proxy))  # type: ignore[arg-type]
                exc = failed.value
                assert isinstance(exc, kind), type(exc).__mro__
                assert isinstance(exc, ProxyError) is (failing is not None)
                assert not isinstance(exc, Disallowed)
                assert PASSWORD not in str(exc) and PASSWORD not in repr(exc)
    finally:
        if failing is not None:
            await failing.close()
