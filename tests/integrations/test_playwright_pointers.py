"""Every request a page makes is a pointer of the document that made it: through
``attach``, a public page (127.0.0.1, public through ``is_private``) cannot make the
system Chromium request a private address (127.0.0.2), by any of the ways a page can
ask for a URL, and the private origin's robots.txt is never asked for it.  Only what
the caller asks (``page.goto``) is input.  The provenance contract
(tests/contract/test_provenance_paths.py) runs the rule's cases through a page's own
navigation and its ``fetch``; these are the other ways a page asks for a URL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from robotgate import Disallowed, RobotGate
from tests.contract.test_request_paths import AGENT, PRIVATE, PUBLIC, Site, public_loopback_1
from tests.support.browser import chromium

pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                    "(pip install 'robotgate[playwright]')")

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request

from robotgate.integrations.playwright import attach

pytestmark = pytest.mark.slow  # each test starts a Chromium

ALLOW = "User-agent: *\nAllow: /\n"


@dataclass
class HtmlSite(Site):
    """A contract site that also serves the pages in ``pages`` (path: body, headers)."""

    pages: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        page = self.pages.get(request.path)
        if page is None:
            return await super()._handle(request)
        self.arrivals.append((request.path, time.monotonic()))
        body, headers = page
        kind = headers.get("content-type", "text/html")
        rest = {k: v for k, v in headers.items() if k != "content-type"}
        return web.Response(text=body, content_type=kind, headers=rest)


@pytest.fixture
async def public() -> AsyncIterator[HtmlSite]:
    site = await HtmlSite(PUBLIC, robots=ALLOW).start()
    yield site
    await site.close()


@pytest.fixture
async def private() -> AsyncIterator[HtmlSite]:
    site = await HtmlSite(PRIVATE, robots=ALLOW).start()
    yield site
    await site.close()


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with chromium() as launched:
        yield launched


# Each way a page asks for a URL: the page's markup, with {to} the private URL.
VECTORS: dict[str, str] = {
    # markup subresources
    "img": '<img src="{to}">',
    "img-srcset": '<img srcset="{to} 1x">',
    "picture": '<picture><source srcset="{to}"><img src="data:,"></picture>',
    "stylesheet": '<link rel="stylesheet" href="{to}">',
    "css-import": "<style>@import url({to});</style>",
    "css-url": '<div style="width:9px;height:9px;background:url({to})"></div>',
    "font-face": ("<style>@font-face {{font-family: f; src: url({to});}}"
                  " p {{font-family: f}}</style><p>text</p>"),
    "script": '<script src="{to}"></script>',
    "module-script": '<script type="module" src="{to}"></script>',
    "video": '<video src="{to}" preload="auto"></video>',
    "video-poster": '<video poster="{to}"></video>',
    "audio": '<audio src="{to}" preload="auto"></audio>',
    "object": '<object data="{to}" width="9" height="9"></object>',
    "embed": '<embed src="{to}" width="9" height="9">',
    "svg-image": '<svg><image href="{to}" width="9" height="9"/></svg>',
    "input-image": '<input type="image" src="{to}">',
    "preload": '<link rel="preload" href="{to}" as="fetch" crossorigin>',
    "prefetch": '<link rel="prefetch" href="{to}">',
    "modulepreload": '<link rel="modulepreload" href="{to}">',
    # script-made requests
    "fetch-cors": "<script>fetch('{to}').catch(() => 0)</script>",
    "fetch-no-cors": "<script>fetch('{to}', {{mode: 'no-cors'}}).catch(() => 0)</script>",
    "fetch-post": ("<script>fetch('{to}', {{method: 'POST', body: 'x', mode: 'no-cors'}})"
                   ".catch(() => 0)</script>"),
    "image-script": "<script>new Image().src = '{to}'</script>",
    "xhr": "<script>const x = new XMLHttpRequest(); x.open('GET', '{to}'); x.send()</script>",
    "eventsource": "<script>new EventSource('{to}')</script>",
    "import": "<script>import('{to}').catch(() => 0)</script>",
    "worker-fetch": ("<script>new Worker(URL.createObjectURL(new Blob("
                     "[\"fetch('{to}').catch(() => 0)\"], {{type: 'text/javascript'}})))"
                     "</script>"),
    "beacon": "<script>navigator.sendBeacon('{to}', 'x')</script>",
    "csp-report": "<img src=\"/blocked.png\">",  # the page's CSP reports to {to}
    # the page's own navigations
    "meta-refresh": '<meta http-equiv="refresh" content="0;url={to}">',
    "location": "<script>location = '{to}'</script>",
    "location-replace": "<script>location.replace('{to}')</script>",
    "window-open": "<script>window.open('{to}')</script>",
    "iframe": '<iframe src="{to}"></iframe>',
    "nested-iframe": ("<iframe srcdoc='<iframe src=&quot;{to}&quot;></iframe>'></iframe>"),
    "form-post": ('<form method="post" action="{to}"><input name="a" value="b"></form>'
                  "<script>document.forms[0].submit()</script>"),
    "form-get": ('<form action="{to}"><input name="a" value="b"></form>'
                 "<script>document.forms[0].submit()</script>"),
    "link-click": ('<a id="a" href="{to}">x</a>'
                   '<script>document.getElementById("a").click()</script>'),
    "ping": ('<a id="a" href="/landing" ping="{to}">x</a>'
             '<script>document.getElementById("a").click()</script>'),
}


async def until(done: Any, seconds: float = 10.0) -> None:
    """Until ``done()`` is true, at most ``seconds``."""
    for _ in range(int(seconds / 0.02)):
        if done():
            return
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("vector", list(VECTORS))
async def test_a_public_pages_pointer_into_a_private_address_is_refused(
        vector: str, public: HtmlSite, private: HtmlSite, browser: Any) -> None:
    to = private.url(f"/secret/{vector}")
    headers = {}
    if vector == "csp-report":
        headers["Content-Security-Policy"] = f"img-src 'none'; report-uri {to}"
    public.pages["/page"] = (f"<html><body>{VECTORS[vector].format(to=to)}</body></html>",
                             headers)
    public.pages["/landing"] = ("<html><body>landed</body></html>", {})
    refused: list[tuple[str, Disallowed]] = []

    def heard(request: Request, refusal: Disallowed) -> None:
        refused.append((request.url, refusal))

    async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context, on_refused=heard)
        page = await context.new_page()
        await page.goto(public.url("/page"))
        await until(lambda: refused or private.arrivals or private.robots_hits)
        await context.close()
    assert private.paths() == [] and private.robots_hits == 0
    asked = to + "?a=b" if vector == "form-get" else to
    assert refused and all(url == asked for url, _ in refused), refused
    for _, refusal in refused:  # a CSP report may be sent again
        assert refusal.decision.outcome == "redirect-refused"
        assert "a pointer" in refusal.decision.reason


async def test_a_private_pages_pointers_into_private_addresses_are_followed(
        private: HtmlSite, browser: Any) -> None:
    private.pages["/page"] = (f'<html><body><img src="{private.url("/img")}"><iframe'
                              f' src="{private.url("/frame")}"></iframe></body></html>', {})
    async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context)
        page = await context.new_page()
        await page.goto(private.url("/page"))
        await until(lambda: {"/img", "/frame"} <= set(private.paths()))
        await context.close()
    assert {"/page", "/img", "/frame"} <= set(private.paths())


async def test_an_attached_pages_popups_are_judged_and_other_pages_reach_nothing(
        public: HtmlSite, private: HtmlSite, browser: Any) -> None:
    # Playwright routes a page's popups only through its context: attach(page) routes
    # the context, for that page and its popups.
    other = await HtmlSite(PUBLIC, robots="User-agent: *\nDisallow: /\n").start()
    to = private.url("/secret")
    public.pages["/page"] = (f"<html><body><script>window.open('{to}')</script>"
                             "</body></html>", {})
    refused: list[str] = []
    try:
        async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
            context = await browser.new_context(service_workers="block")
            page = await context.new_page()
            await attach(gate, page, on_refused=lambda request, _: refused.append(request.url))
            await page.goto(public.url("/page"))
            await until(lambda: refused or private.arrivals)
            beside = await context.new_page()  # not attached: the black hole
            with pytest.raises(PlaywrightError, match="ERR_PROXY_CONNECTION_FAILED"):
                await beside.goto(other.url("/elsewhere"))
            await context.close()
    finally:
        await other.close()
    assert refused == [to]
    assert private.paths() == [] and private.robots_hits == 0
    assert other.paths() == [] and other.robots_hits == 0


async def test_a_navigation_the_caller_says_was_pointed_at_is_judged_as_that_pointer(
        public: HtmlSite, private: HtmlSite, browser: Any) -> None:
    # A link crawler's page.goto, told as a public page's link (navigation_provenance):
    # into a private address it is refused, its own start URL is input, and the
    # document's origin after the gate's redirects is told (Attachment.document).
    from robotgate.policy.provenance import pointer_of

    start, link = public.url("/start"), private.url("/secret/linked")
    moved = public.url("/redirect?to=/start")
    public.pages["/start"] = ("<html><body>start</body></html>", {})
    told: list[str] = []

    def found_on(page: Any, url: str) -> Any:
        told.append(url)
        return None if url == start else pointer_of(start)

    async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        handle = await attach(gate, context, navigation_provenance=found_on)
        page = await context.new_page()
        await page.goto(start)
        with pytest.raises(PlaywrightError):
            await page.goto(link)
        page = await context.new_page()
        await page.goto(moved)
        landed = handle.document(page)
        await context.close()
    assert private.paths() == [] and private.robots_hits == 0
    assert told == [start, link, moved]
    assert public.paths() == ["/start", "/redirect", "/start"]
    # The browser keeps the URL it asked for; the document came from the redirect's end.
    assert landed is not None and (landed.url, landed.came_from) == (moved, start)
