"""robotgate.integrations.crawlee: a crawlee BeautifulSoupCrawler over RobotGateHttpClient,
its handler written as crawlee's docs write it (``context.enqueue_links()``), keeps
robotgate's promises on a loopback site."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import quote

import pytest
from aiohttp import web

from robotgate import Disallowed, RobotGate
from robotgate.events import Event, UrlSkipped
from tests.contract.test_private_addresses import (
    CHECKED,
    Names,
    checked_public,
    names,
    site_at,
    system_names,
)
from tests.contract.test_request_paths import Site as ContractSite
from tests.contract.test_request_paths import public_loopback_1
from tests.support.arrivals import Noted

pytest.importorskip("crawlee", reason="crawlee is not installed (pip install 'robotgate[crawlee]')")
pytest.importorskip("bs4", reason="BeautifulSoup is not installed (crawlee's beautifulsoup extra)")

from crawlee import ConcurrencySettings
from crawlee.crawlers import (
    BasicCrawlingContext,
    BeautifulSoupCrawler,
    BeautifulSoupCrawlingContext,
)
from crawlee.sessions import Session
from crawlee.storage_clients import MemoryStorageClient

from robotgate.integrations.crawlee import RobotGateHttpClient

pytestmark = pytest.mark.slow  # crawls with a real Crawl-delay
__all__ = ["names", "system_names"]  # the contract's name tables, as this module's fixtures

AGENT = "TestBot/1.0 (+https://example.com/bot)"
ROBOTS = "User-agent: *\nDisallow: /private\nCrawl-delay: 0.5\n"


@dataclass
class Site(Noted):
    """A loopback site that notes every request: its path, when it came, its User-Agent."""

    arrivals: list[tuple[str, float, str]] = field(default_factory=list)
    port: int = 0
    busy_left: int = 1

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = self.note(request)
        if path == "/robots.txt":
            return web.Response(text=ROBOTS)
        if path == "/hop":
            return web.Response(status=302, headers={"Location": "/private/hidden"})
        if path == "/busy" and self.busy_left:
            self.busy_left -= 1
            return web.Response(status=429, headers={"Retry-After": "1"})
        links = "".join(f'<a href="{href}">{href}</a>'
                        for href in ("/page/1", "/page/2", "/page/3", "/private/x", "/hop"))
        return web.Response(text=f"<html><title>{path}</title><body>{links}</body></html>",
                            content_type="text/html")


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    served = Site()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", served.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    served.port = runner.addresses[0][1]
    yield served
    await runner.cleanup()


def _crawler(gate: RobotGate, client: RobotGateHttpClient | None = None) -> BeautifulSoupCrawler:
    return BeautifulSoupCrawler(
        http_client=client or RobotGateHttpClient(gate), storage_client=MemoryStorageClient(),
        concurrency_settings=ConcurrencySettings(min_concurrency=4, desired_concurrency=4,
                                                 max_concurrency=4),
        configure_logging=False)


async def test_a_beautifulsoup_crawl_keeps_every_promise(site: Site) -> None:
    titles: list[str] = []
    failed: list[BaseException] = []
    refused: list[tuple[str, Disallowed]] = []
    events: list[Event] = []
    # 127.0.0.1 plays a public site: crawlee's enqueue_links cannot say which page a
    # link is of, and a link counts as a public page's.
    async with RobotGate(AGENT, delay=0.1, is_private=public_loopback_1,
                         on_event=events.append) as gate:
        client = RobotGateHttpClient(gate, on_refused=lambda url, no: refused.append((url, no)))
        crawler = _crawler(gate, client)

        @crawler.router.default_handler
        async def handler(context: BeautifulSoupCrawlingContext) -> None:
            titles.append(context.soup.title.string if context.soup.title else "")
            await context.enqueue_links()  # crawlee's own idiom

        @crawler.failed_request_handler
        async def on_failure(context: BasicCrawlingContext, error: Exception) -> None:
            failed.append(error)

        await crawler.run([site.url("/")])

    assert sorted(titles) == ["/", "/page/1", "/page/2", "/page/3"]
    assert site.paths().count("/robots.txt") == 1
    # Neither the disallowed link nor the redirect into a disallowed path reached the server.
    assert not [path for path in site.paths() if path.startswith("/private")]
    assert "/hop" in site.paths()
    # One refusal each, skipped (not retried, not failed): the link, and the redirect's hop.
    assert failed == []
    assert sorted((asked.rsplit("/", 1)[1], no.url.rsplit("/", 1)[1])
                  for asked, no in refused) == [("hop", "hidden"), ("x", "x")]
    assert all("Disallow: /private" in no.decision.reason for _, no in refused)
    assert sorted(event.url for event in events if isinstance(event, UrlSkipped)) == [
        site.url("/private/hidden"), site.url("/private/x")]
    # The site's Crawl-delay at the server, between any two requests after robots.txt.
    pages = [t for path, t, _ in site.arrivals if path != "/robots.txt"]
    assert len(pages) == 5
    assert min(b - a for a, b in itertools.pairwise(pages)) >= 0.5
    assert {agent for _, _, agent in site.arrivals} == {AGENT}


async def test_a_429_with_retry_after_holds_the_retry(site: Site) -> None:
    done: list[int] = []
    async with RobotGate(AGENT, delay=0) as gate:
        crawler = _crawler(gate)

        @crawler.router.default_handler
        async def handler(context: BeautifulSoupCrawlingContext) -> None:
            done.append(context.http_response.status_code)

        await crawler.run([site.url("/busy")])
    assert done == [200]  # crawlee retried, in a new session
    first, second = site.times("/busy")
    assert second - first >= 1.0


async def test_a_read_answers_stream_is_consumed_as_crawlees_own(site: Site) -> None:
    # crawlee's own send_request answer raises RuntimeError on read_stream (its tests'
    # test_send_request_error_for_read_stream); through the gate it yielded the body.
    async with RobotGate(AGENT, delay=0) as gate, RobotGateHttpClient(gate) as client:
        response = await client.send_request(site.url("/page/1"))
        with pytest.raises(RuntimeError):
            _ = [chunk async for chunk in response.read_stream()]
        assert b"/page/2" in await response.read()


async def test_send_request_and_stream_go_through_the_gate(site: Site) -> None:
    async with RobotGate(AGENT, delay=0) as gate, RobotGateHttpClient(gate) as client:
        response = await client.send_request(site.url("/page/1"))
        assert response.status_code == 200 and b"/page/2" in await response.read()
        async with client.stream(site.url("/page/2")) as streamed:
            body = b"".join([chunk async for chunk in streamed.read_stream()])
        assert b"/page/3" in body
        with pytest.raises(Disallowed):
            await client.send_request(site.url("/private/x"))
        with pytest.raises(Disallowed):
            async with client.stream(site.url("/hop")):
                pass
    assert site.paths() == ["/robots.txt", "/page/1", "/page/2", "/hop"]


async def test_a_public_pages_http_pointer_goes_to_the_address_its_check_found(
        names: Names, system_names: Names) -> None:
    # The gate's look-ups find localhost public (127.0.0.3); crawlee's client would find
    # 127.0.0.1, a private address here.  The hop goes to 127.0.0.3 at the same port,
    # with the name's Host header and the session's cookies for the name.
    allow = "User-agent: *\nAllow: /\n"
    public = await ContractSite(CHECKED, robots=allow).start()
    inside = await ContractSite("127.0.0.1", robots=allow).start()
    checked = await site_at(CHECKED, inside.port, set_cookie="kept=2; Path=/")
    checked.robots = allow
    for table in (names, system_names):
        table.answers["localhost"] = [[CHECKED]]
    session = Session()
    session.cookies.extract_cookies_from_headers(f"http://localhost:{inside.port}/", ["seen=1"])
    target = quote(f"http://localhost:{inside.port}/secret", safe="")
    try:
        async with RobotGate(AGENT, is_private=checked_public, delay=0) as gate, \
                RobotGateHttpClient(gate) as client:
            response = await client.send_request(public.url("/redirect?to=" + target),
                                                  session=session)
    finally:
        for site in (public, inside, checked):
            await site.close()
    assert response.status_code == 200
    assert inside.paths() == [] and inside.robots_hits == 0
    assert checked.paths() == ["/secret"]
    [(_, headers)] = checked.headers
    assert headers["Host"] == f"localhost:{inside.port}"
    assert headers.get("Cookie") == "seen=1"
    assert session.cookies.get_cookie_string(f"http://localhost:{inside.port}/") in (
        "seen=1; kept=2", "kept=2; seen=1")
    assert not session.cookies.get_cookie_string(checked.url("/"))
