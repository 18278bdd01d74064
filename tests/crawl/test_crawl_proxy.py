"""A crawl's robots.txt (and tdmrep.json) goes the way its pages go: through the proxy
the page's request takes (``fetch=partial(gate.fetch, proxy=...)``), never direct, on
every crawl (links followed, named, sitemap entries), one robots.txt request per origin
however many proxies ask for it, and the proxy's password never said."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from robotgate import MemoryStore, ProxyFailed, RobotGate
from robotgate.crawl import CrawlResult
from robotgate.robots.sitemap import SitemapEntry
from tests.support.proxies import VIA, FailingProxy, ForwardingProxy

AGENT = "RouteBot/1.0"
PASSWORD = "PrxRoute-7c2e"
DIRECT = "direct"


@dataclass
class Origin:
    """A loopback site: every request recorded with the proxy it came through (its
    :data:`VIA` header) or :data:`DIRECT`; its pages link to ``links``."""

    host: str
    url: str = ""
    asked: list[tuple[str, str]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)

    def via(self, path: str) -> list[str]:
        return [how for asked, how in self.asked if asked == path]

    async def handle(self, request: web.Request) -> web.Response:
        self.asked.append((request.path, request.headers.get(VIA, DIRECT)))
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow: /no/\n")
        if request.path == "/.well-known/tdmrep.json":
            return web.json_response([{"location": "/*", "tdm-reservation": 1}])
        links = "".join(f'<a href="{link}">x</a>' for link in self.links)
        return web.Response(text=f"<html><body>{links}</body></html>",
                            content_type="text/html")


@pytest.fixture
async def origins() -> AsyncIterator[list[Origin]]:
    """Two loopback sites, 127.0.0.3 and 127.0.0.4."""
    found, runners = [], []
    for host in ("127.0.0.3", "127.0.0.4"):
        origin = Origin(host)
        app = web.Application()
        app.router.add_get("/{tail:.*}", origin.handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, 0).start()
        origin.url = f"http://{host}:{runner.addresses[0][1]}"
        found.append(origin)
        runners.append(runner)
    try:
        yield found
    finally:
        for runner in runners:
            await runner.cleanup()


@pytest.fixture
async def proxies() -> AsyncIterator[list[ForwardingProxy]]:
    """Two forwarding proxies asking for PASSWORD."""
    started = [await ForwardingProxy(name, "127.0.0.1", PASSWORD).start()
               for name in ("proxy-a", "proxy-b")]
    try:
        yield started
    finally:
        for proxy in started:
            await proxy.close()


class Said(logging.Handler):
    """Every robotgate log record, as said."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record))


@pytest.fixture
def said() -> Iterator[Said]:
    handler = Said()
    root = logging.getLogger("robotgate")
    level = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def open_gate(**options: Any) -> RobotGate:
    return RobotGate(AGENT, delay=0, is_private=lambda address: False, **options)


async def nothing(url: str, resp: aiohttp.ClientResponse) -> tuple[str, ...]:
    return ()


def never_said(said: Said, results: list[CrawlResult], events: list[object]) -> None:
    texts = [*said.texts, *map(repr, results), *map(str, events)]
    assert texts and not [text for text in texts if PASSWORD in text]


async def test_a_crawl_asks_robots_txt_through_the_proxy_its_pages_go_through(
        origins: list[Origin], proxies: list[ForwardingProxy], said: Said) -> None:
    site = origins[0]
    proxy = proxies[0]
    results: list[CrawlResult] = []
    events: list[object] = []
    async with open_gate(on_event=events.append) as gate:
        summary = await gate.crawl(
            [f"{site.url}/page/1", f"{site.url}/no/x", f"{site.url}/page/2"], nothing,
            fetch=partial(gate.fetch, proxy=proxy.url), retries=0,
            on_result=results.append)
    assert (summary.pages, summary.skipped, summary.errors) == (2, 1, 0), summary.explain()
    # robots.txt once, through the proxy: nothing of the crawl reached the site direct.
    assert site.via("/robots.txt") == ["proxy-a"], site.asked
    assert {how for _, how in site.asked} == {"proxy-a"}, site.asked
    assert sorted(path for path, _ in site.asked) == ["/page/1", "/page/2", "/robots.txt"]
    never_said(said, results, events)


async def test_followed_links_and_a_named_crawl_ask_each_origins_robots_txt_through_it(
        origins: list[Origin], proxies: list[ForwardingProxy]) -> None:
    first, second = origins
    first.links = ["/page/2", f"{second.url}/page/3", f"{second.url}/no/y"]
    proxy = proxies[0]
    async with open_gate(store=MemoryStore()) as gate:
        summary = await gate.crawl(
            [f"{first.url}/page/1"], nothing, follow_links=True, scope="any",
            name="routed", fetch=partial(gate.fetch, proxy=proxy.url), retries=0)
    assert (summary.pages, summary.skipped, summary.errors) == (3, 1, 0), summary.explain()
    for origin in origins:
        assert origin.via("/robots.txt") == ["proxy-a"], origin.asked
        assert {how for _, how in origin.asked} == {"proxy-a"}, origin.asked


async def test_a_sitemaps_entries_ask_robots_txt_through_the_proxy(
        origins: list[Origin], proxies: list[ForwardingProxy]) -> None:
    site = origins[0]
    proxy = proxies[0]
    entries = [SitemapEntry(f"{site.url}/page/{n}", sitemap=f"{site.url}/sitemap.xml")
               for n in range(2)]
    async with open_gate() as gate:
        summary = await gate.crawl(entries, nothing, retries=0,
                                   fetch=partial(gate.fetch, proxy=proxy.url))
    assert summary.pages == 2, summary.explain()
    assert site.via("/robots.txt") == ["proxy-a"], site.asked
    assert {how for _, how in site.asked} == {"proxy-a"}, site.asked


# aiohttp 3.14 deprecates proxy_auth=: users still pass it.
@pytest.mark.filterwarnings("ignore:BasicAuth is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:The 'proxy_auth' parameter is deprecated:DeprecationWarning")
async def test_tdmrep_json_goes_through_the_proxy_too(
        origins: list[Origin], proxies: list[ForwardingProxy]) -> None:
    site = origins[0]
    proxy = proxies[0]
    results: list[CrawlResult] = []
    async with open_gate(tdmrep=True) as gate:
        await gate.crawl([f"{site.url}/page/1"], nothing, retries=0, on_result=results.append,
                         fetch=partial(gate.fetch, proxy=proxy.address,
                                       proxy_auth=aiohttp.BasicAuth("user", PASSWORD)))
    assert [r.tdm is not None and r.tdm.reserved for r in results] == [True], results
    assert site.via("/.well-known/tdmrep.json") == ["proxy-a"], site.asked
    assert {how for _, how in site.asked} == {"proxy-a"}, site.asked


async def test_two_proxies_asking_for_one_origin_make_one_robots_txt_request(
        origins: list[Origin], proxies: list[ForwardingProxy]) -> None:
    # Pages sent through two proxies in turn (a rotation): robots.txt is one request per
    # origin, through the proxy of the page that asked first; never direct.
    site = origins[0]

    def rotating(gate: RobotGate) -> Callable[..., Any]:
        def fetch(url: str, **options: Any) -> Any:
            proxy = proxies[int(url.rsplit("/", 1)[1]) % 2]  # page 0 (asked first): proxy-a
            return gate.fetch(url, proxy=proxy.url, **options)
        return fetch

    async with open_gate() as gate:
        summary = await gate.crawl([f"{site.url}/page/{n}" for n in range(6)], nothing,
                                   fetch=rotating(gate), concurrency=4, retries=0)
    assert summary.pages == 6, summary.explain()
    assert site.via("/robots.txt") == ["proxy-a"], site.asked
    assert DIRECT not in {how for _, how in site.asked}, site.asked
    assert {how for path, how in site.asked if path != "/robots.txt"} == {"proxy-a", "proxy-b"}


async def test_a_crawl_whose_pages_proxy_refuses_stops_before_reaching_the_site(
        origins: list[Origin]) -> None:
    # robots.txt asked through the pages' proxy, which answers 407: the proxy's failure
    # ends the crawl; asked direct, the site would have seen the crawler.
    site = origins[0]
    failing = await FailingProxy(407, "127.0.0.1", PASSWORD).start()
    try:
        async with open_gate() as gate:
            with pytest.raises(ProxyFailed) as failed:
                await gate.crawl([f"{site.url}/page/1"], nothing, retries=0,
                                 fetch=partial(gate.fetch, proxy=failing.url))
    finally:
        await failing.close()
    assert PASSWORD not in str(failed.value) and PASSWORD not in repr(failed.value)
    assert site.asked == []
    assert failing.targets == [f"{site.url}/robots.txt"]


async def test_a_request_made_and_refused_is_let_go_unsent(origins: list[Origin]) -> None:
    # The crawl makes a page's request before it asks robots.txt: aiohttp's session.get
    # holds a coroutine from then on, closed (never sent, no "never awaited" warning,
    # an error under -W error) when robots.txt refuses the page.
    site = origins[0]
    async with open_gate() as gate, aiohttp.ClientSession(
            middlewares=(gate.middleware,)) as session:
        summary = await gate.crawl([f"{site.url}/no/1", f"{site.url}/page/1"], nothing,
                                   fetch=lambda url: session.get(url), retries=0)
    assert (summary.pages, summary.skipped) == (1, 1), summary.explain()
    assert sorted(path for path, _ in site.asked) == ["/page/1", "/robots.txt"]
