"""robotgate.integrations.playwright: a system Chromium browsing a loopback site through
the gate keeps robotgate's promises for navigations and subresources alike."""

from __future__ import annotations

import asyncio
import itertools
import struct
import time
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from robotgate import Disallowed, RobotGate
from robotgate.events import Event, ResponseAnswered, UrlSkipped
from tests.support.browser import chromium

pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                    "(pip install 'robotgate[playwright]')")

from playwright.async_api import Error as PlaywrightError

from robotgate.integrations.playwright import attach

pytestmark = pytest.mark.slow  # each test starts a Chromium

AGENT = "TestBot/1.0 (+https://example.com/bot)"
ROBOTS = "User-agent: *\nDisallow: /private\nCrawl-delay: 0.5\n"
PAGE = ('<html><head><title>page {n}</title></head><body><a href="/page/{m}">next</a>'
        '<img id="ok" src="/img/ok.png"><img id="secret" src="/private/secret.png">'
        "</body></html>")


def _png() -> bytes:
    """A 1x1 grey PNG: the allowed image, which must load."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b""))


@dataclass
class Site:
    """A loopback site that notes every request: its path, when it came, its User-Agent."""

    arrivals: list[tuple[str, float, str]] = field(default_factory=list)
    port: int = 0
    runner: web.AppRunner | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def paths(self) -> list[str]:
        return [path for path, _, _ in self.arrivals]

    def times(self, *paths: str) -> list[float]:
        return [t for path, t, _ in self.arrivals if path.startswith(paths)]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.arrivals.append((path, time.monotonic(), request.headers.get("User-Agent", "")))
        if path == "/robots.txt":
            return web.Response(text=ROBOTS)
        if path == "/img/ok.png":
            return web.Response(body=_png(), content_type="image/png")
        if path == "/busy":
            return web.Response(status=429, text="busy", headers={"Retry-After": "1"})
        if path == "/hop":
            return web.Response(status=302, headers={"Location": "/page/1"})
        if path == "/into-private":
            return web.Response(status=302, headers={"Location": "/private/page"})
        if path == "/ticking":
            return web.Response(text=TICKING, content_type="text/html")
        if path == "/ticker.js":
            return web.Response(text=TICKER, content_type="text/javascript")
        n = int(path.rsplit("/", 1)[1]) if path[-1:].isdigit() else 0
        return web.Response(text=PAGE.format(n=n, m=n + 1), content_type="text/html")


# A page whose requests come from no timer of its own: a requestAnimationFrame loop
# (each fetch as the last one ends) and a dedicated worker's timer.
TICKING = ('<html><body><script>let n = 0, waiting = false; (function frame() {'
           ' if (!waiting && n < 5000) { waiting = true;'
           '  fetch("/tick/raf/" + n++).finally(() => { waiting = false; }); }'
           ' requestAnimationFrame(frame); })();'
           'new Worker("/ticker.js");</script></body></html>')
TICKER = 'let n = 0; setInterval(() => { if (n < 5000) fetch("/tick/worker/" + n++); }, 50);'


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(sorted(times))]


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    served = Site()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", served.handle)
    served.runner = web.AppRunner(app, access_log=None)
    await served.runner.setup()
    tcp = web.TCPSite(served.runner, "127.0.0.1", 0)
    await tcp.start()
    served.port = served.runner.addresses[0][1]
    yield served
    await served.runner.cleanup()


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with chromium() as launched:
        yield launched


async def _images(page: Any) -> dict[str, int]:
    """Each image's natural width: 0 when it did not load."""
    found: list[list[Any]] = await page.evaluate(
        "() => Array.from(document.images).map(i => [i.id, i.complete ? i.naturalWidth : -1])")
    return {name: width for name, width in found}


async def test_a_site_browsed_in_chromium_keeps_every_promise(site: Site, browser: Any) -> None:
    events: list[Event] = []
    refused: list[tuple[str, Disallowed]] = []
    async with RobotGate(AGENT, delay=0.1, on_event=events.append) as gate:
        context = await browser.new_context(service_workers="block")
        handle = await attach(gate, context,
                              on_refused=lambda req, no: refused.append((req.url, no)))
        page = await context.new_page()
        for n in range(3):
            response = await page.goto(site.url(f"/page/{n}"))
            assert response is not None and response.status == 200
            assert await page.title() == f"page {n}"
            # The allowed image loads; the disallowed one is refused and stays empty.
            assert await _images(page) == {"ok": 1, "secret": 0}
        with pytest.raises(PlaywrightError, match="ERR_BLOCKED_BY_CLIENT"):
            await page.goto(site.url("/private/page"))
        decision = await gate.decide(site.url("/private/page"))
        await handle.detach()
        await context.close()

    assert site.paths().count("/robots.txt") == 1
    assert not [path for path in site.paths() if path.startswith("/private")]
    # The site's Crawl-delay between navigations, at the server.
    assert min(_gaps(site.times("/page/"))) >= 0.5
    assert site.paths().count("/img/ok.png") == 3
    # The gate's User-Agent on every request, robots.txt's included.
    assert {agent for _, _, agent in site.arrivals} == {AGENT}
    # Why: the rule, for the page and each image refused.
    assert not decision.allowed and "Disallow: /private" in decision.reason
    assert sorted(url.rsplit("/", 1)[1] for url, _ in refused) == ["page"] + ["secret.png"] * 3
    assert all("Disallow: /private" in no.decision.reason for _, no in refused)
    # The events tell of browser requests as of any other: each refusal, each page's answer.
    skipped = [event.url.rsplit("/", 1)[1] for event in events if isinstance(event, UrlSkipped)]
    assert sorted(skipped) == ["page"] + ["secret.png"] * 3
    answered = [event.url for event in events if isinstance(event, ResponseAnswered)]
    assert [url.rsplit("/", 1)[1] for url in answered] == ["0", "1", "2"]
    assert gate.stats["disallowed"] == 4


async def test_a_429_with_retry_after_delays_the_next_navigation(site: Site,
                                                               browser: Any) -> None:
    async with RobotGate(AGENT, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context)
        page = await context.new_page()
        busy = await page.goto(site.url("/busy"))
        assert busy is not None and busy.status == 429  # the browser sees the answer
        await page.goto(site.url("/page/1"))
        await context.close()
    [busy_at] = site.times("/busy")
    [next_at] = site.times("/page/1")
    assert next_at - busy_at >= 1.0


async def test_each_redirect_hop_is_judged_before_it_is_sent(site: Site, browser: Any) -> None:
    async with RobotGate(AGENT, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context)
        page = await context.new_page()
        with pytest.raises(PlaywrightError, match="ERR_BLOCKED_BY_CLIENT"):
            await page.goto(site.url("/into-private"))
        # A page whose navigation was aborted goes on to Chromium's error page: a new one.
        page = await context.new_page()
        followed = await page.goto(site.url("/hop"))
        assert followed is not None and followed.status == 200
        assert await page.title() == "page 1"  # the last hop's answer, for the URL asked
        await context.close()
    assert [p for p in site.paths() if p != "/robots.txt" and not p.startswith("/img")] == [
        "/into-private", "/hop", "/page/1"]


async def test_subresources_held_to_the_delay_when_asked(site: Site, browser: Any) -> None:
    async with RobotGate(AGENT, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context, pace_subresources=True)
        page = await context.new_page()
        await page.goto(site.url("/page/0"))
        assert await _images(page) == {"ok": 1, "secret": 0}
        await context.close()
    assert site.paths() == ["/robots.txt", "/page/0", "/img/ok.png"]
    assert min(_gaps(site.times("/page/", "/img/"))) >= 0.5


async def test_detach_leaves_the_browser_no_network(site: Site, browser: Any) -> None:
    async with RobotGate(AGENT, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        handle = await attach(gate, context)
        page = await context.new_page()
        await page.goto(site.url("/page/0"))
        await handle.detach()
        with pytest.raises(PlaywrightError, match="ERR_PROXY_CONNECTION_FAILED"):
            await page.goto(site.url("/page/1"))  # no route: the black hole
        await context.close()
    assert "/page/0" in site.paths() and "/page/1" not in site.paths()


async def test_a_parked_page_makes_no_request_until_sent_on(site: Site,
                                                            browser: Any) -> None:
    # A page whose work is over (a crawl's tab kept for the next run) makes no request
    # from park on, however made (its document's loop, its worker, a popup it opens),
    # until the caller sends it on; then it is a page like any other.
    async with RobotGate(AGENT, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        handle = await attach(gate, context)
        page = await context.new_page()
        await page.goto(site.url("/ticking"))
        while len(site.times("/tick/worker/")) < 2:  # the loop and the worker run
            await asyncio.sleep(0.05)
        await handle.park(page)
        parked = len(site.paths())
        await page.evaluate("() => { window.open('/page/7'); fetch('/tick/asked'); }")
        await asyncio.sleep(1.5)
        while_parked = site.paths()[parked:]
        await page.goto(site.url("/page/1"))
        assert await _images(page) == {"ok": 1, "secret": 0}
        await handle.park(page)
        await page.set_content('<img id="ok" src="/img/ok.png?again">')  # sent on too
        assert await _images(page) == {"ok": 1}
        await context.close()
    assert site.paths()[:parked].count("/tick/raf/0") == 1
    assert while_parked == []
    assert "/page/1" in site.paths()[parked:]


async def test_a_page_closed_as_its_navigation_commits_closes(browser: Any) -> None:
    # Chromium can acknowledge a close that meets a navigation's commit without closing
    # the page: Playwright's close then waited for ever.  A page
    # that reloads itself, closed as the new document commits, many times over.
    async def page(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(text="<title>page</title>", content_type="text/html")

    async with served(page) as url, RobotGate(AGENT, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context)
        for _ in range(40):
            tab = await context.new_page()
            await tab.goto(url)
            with pytest.raises(PlaywrightError):  # the reload ends the page's script
                await tab.evaluate("() => { location.reload(); return new Promise(() => {}) }")
            await asyncio.wait_for(tab.close(), 15)
            assert tab.is_closed()
        await context.close()


@asynccontextmanager
async def served(handler: Any) -> AsyncIterator[str]:
    """A loopback site answering with ``handler``; its root URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/"
    finally:
        await runner.cleanup()
