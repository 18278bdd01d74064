"""The browser's floor: under ``launch_options`` a request the route does not fulfil
reaches nothing, whatever made it.

A public site (127.0.0.1, public through ``is_private``; ``Disallow: /private``) serves a
page per vector, each making a request no route is asked about (Playwright does not
route it) or one it is, to a disallowed path of the site or to a private address
(127.0.0.2, a TCP listener and a UDP socket).  Each case passes only if nothing
arrives: no disallowed path at the site, no connection and no datagram at the private
address.  The context is made as the docs say, on a plain profile (preloading on) with
shared workers enabled: the floor needs neither ``preloading_off`` nor a switch
against shared workers.  Nothing tells that a request was not made, so each case waits
a while after its vector (what escaped arrived within a second before the floor).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from robotgate import RobotGate
from tests.contract.test_request_paths import AGENT, PRIVATE, PUBLIC, public_loopback_1
from tests.support.browser import CHROMIUM_ARGS, chromium_path

pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                    "(pip install 'robotgate[playwright]')")

from playwright.async_api import BrowserContext, Page, async_playwright
from playwright.async_api import Error as PlaywrightError

from robotgate.integrations.playwright import UnsafeBrowser, attach, launch_options

pytestmark = pytest.mark.slow  # each test starts a Chromium

ROBOTS = "User-agent: *\nDisallow: /private\n"
# After a vector, how long what escaped would take to arrive (it took under a second).
SETTLE = 1.5


@dataclass
class Watched:
    """The site's arrivals, and the private address's connections and datagrams."""

    paths: list[tuple[str, str]] = field(default_factory=list)  # (path, User-Agent)
    connections: int = 0
    datagrams: int = 0
    site: str = ""
    tcp: int = 0
    udp: int = 0

    def disallowed(self) -> list[tuple[str, str]]:
        return [arrival for arrival in self.paths if arrival[0].startswith("/private")]


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, watched: Watched) -> None:
        self.watched = watched

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self.watched.datagrams += 1


@asynccontextmanager
async def watched_network(pages: dict[str, str]) -> AsyncIterator[Watched]:
    """The public site serving ``pages`` (path: HTML, ``{tcp}``, ``{udp}`` and ``{site}``
    filled in), and the private address's TCP listener and UDP socket."""
    watched = Watched()

    def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        watched.connections += 1
        writer.close()

    listener = await asyncio.start_server(connected, PRIVATE, 0)
    watched.tcp = listener.sockets[0].getsockname()[1]
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        lambda: _Datagrams(watched), local_addr=(PRIVATE, 0))
    watched.udp = transport.get_extra_info("sockname")[1]

    async def handle(request: web.Request) -> web.StreamResponse:
        watched.paths.append((request.path, request.headers.get("User-Agent", "")))
        if request.path == "/robots.txt":
            return web.Response(text=ROBOTS)
        if request.path in pages:
            html = pages[request.path].format(tcp=watched.tcp, udp=watched.udp,
                                              site=watched.site, private=PRIVATE)
            return web.Response(text=html, content_type="text/html")
        return web.Response(text="x")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, PUBLIC, 0).start()
    watched.site = f"http://{PUBLIC}:{runner.addresses[0][1]}"
    try:
        yield watched
    finally:
        await runner.cleanup()
        transport.close()
        listener.close()
        await listener.wait_closed()


@asynccontextmanager
async def floored(profile: Path) -> AsyncIterator[BrowserContext]:
    """A context made as docs/browser.md says, on a plain profile, attached by the test."""
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            profile, executable_path=chromium_path(), service_workers="block",
            **launch_options(*CHROMIUM_ARGS))
        try:
            yield context
        finally:
            await context.close()


# The page of each vector (its script runs as it loads); PAGE_ACTIONS: what the test
# does with the page after.
WRITE_POPUP = ("const w = window.open('about:blank');"
               "w.document.write('<img src=\"/private/popup-img\"><script>"
               "fetch(\"/private/popup-fetch\")<\\/script>');"
               "setTimeout(() => { const v = window.open('about:blank');"
               " v.document.write('<img src=\"/private/popup-later\">') }, 300);")
WEBRTC = ("const pc = new RTCPeerConnection({{iceServers: ["
          "{{urls: 'stun:{private}:{udp}'}},"
          "{{urls: 'turn:{private}:{udp}?transport=udp', username: 'u', credential: 'p'}},"
          "{{urls: 'turn:{private}:{tcp}?transport=tcp', username: 'u', credential: 'p'}}]}});"
          "pc.createDataChannel('x');"
          "pc.createOffer().then(offer => pc.setLocalDescription(offer));")
VECTORS = {
    "popup-document-write": f"<script>{WRITE_POPUP}</script>",
    "download": '<a id="go" href="/private/download.bin" download>x</a>',
    "keepalive-fetch-on-close": ("<script>addEventListener('pagehide', () => "
                                 "fetch('/private/bye', {{keepalive: true}}))</script>"),
    "websocket": "<script>new WebSocket('ws://{private}:{tcp}/')</script>",
    "webrtc": f"<script>{WEBRTC}</script>",
    "shared-worker": ("<script>new SharedWorker(URL.createObjectURL(new Blob("
                      "[\"fetch('http://{private}:{tcp}/worker')\"], "
                      "{{type: 'text/javascript'}})))</script>"),
    "speculation-prefetch": ('<script type="speculationrules">{{"prefetch": [{{"source": '
                             '"list", "urls": ["/private/prefetch"]}}]}}</script>'),
    "speculation-prerender": ('<script type="speculationrules">{{"prerender": [{{"source": '
                              '"list", "urls": ["/private/prerender"]}}]}}</script>'),
    "preconnect": '<link rel="preconnect" href="http://{private}:{tcp}/">',
}


async def _click(page: Page, watched: Watched) -> None:
    await page.click("#go")


async def _close(page: Page, watched: Watched) -> None:
    await asyncio.wait_for(page.close(), 10)


PAGE_ACTIONS: dict[str, Callable[[Page, Watched], Awaitable[None]]] = {
    "download": _click, "keepalive-fetch-on-close": _close}


@pytest.mark.parametrize("vector", list(VECTORS))
async def test_what_a_page_sends_past_its_route_reaches_nothing(vector: str,
                                                                tmp_path: Path) -> None:
    async with watched_network({"/page": f"<html><body>{VECTORS[vector]}</body></html>"}
                               ) as watched, floored(tmp_path) as context, RobotGate(
            AGENT, is_private=public_loopback_1, delay=0) as gate:
        await attach(gate, context)
        page = await context.new_page()
        await page.goto(watched.site + "/page")
        action = PAGE_ACTIONS.get(vector)
        if action is not None:
            await action(page, watched)
        await asyncio.sleep(SETTLE)
    assert ("/page", AGENT) in watched.paths  # the page itself came through the gate
    assert watched.disallowed() == [], watched.paths
    assert (watched.connections, watched.datagrams) == (0, 0)
    assert all(agent == AGENT for _, agent in watched.paths), watched.paths


async def _devtools_load(context: BrowserContext, page: Page, url: str) -> None:
    session = await context.new_cdp_session(page)
    tree = await session.send("Page.getFrameTree")
    with pytest.raises(PlaywrightError):
        loaded = await session.send("Network.loadNetworkResource", {
            "frameId": tree["frameTree"]["frame"]["id"], "url": url,
            "options": {"disableCache": True, "includeCredentials": False}})
        if not loaded["resource"]["success"]:
            raise PlaywrightError(str(loaded["resource"]))


async def _devtools_new_target(context: BrowserContext, page: Page, url: str) -> None:
    # A target the DevTools protocol makes, its script run there.
    session = await context.new_cdp_session(page)
    await session.send("Target.createTarget", {"url": "about:blank"})
    await session.send("Runtime.evaluate", {
        "expression": f"window.open('about:blank').eval(\"fetch('{url}')\")"})


async def _context_request(context: BrowserContext, page: Page, url: str) -> None:
    with pytest.raises(PlaywrightError):
        await context.request.get(url)
    with pytest.raises(PlaywrightError):
        await page.request.get(url)


ELSEWHERE: dict[str, Callable[[BrowserContext, Page, str], Awaitable[None]]] = {
    "devtools-load-network-resource": _devtools_load,
    "devtools-new-target": _devtools_new_target,
    "context-request": _context_request,
}


@pytest.mark.parametrize("vector", list(ELSEWHERE))
async def test_what_the_caller_sends_past_the_route_reaches_nothing(
        vector: str, tmp_path: Path) -> None:
    # The DevTools protocol and Playwright's own request client: no route is asked.
    async with watched_network({"/page": "<html><body>page</body></html>"}
                               ) as watched, floored(tmp_path) as context, RobotGate(
            AGENT, is_private=public_loopback_1, delay=0) as gate:
        await attach(gate, context)
        page = await context.new_page()
        await page.goto(watched.site + "/page")
        await ELSEWHERE[vector](context, page, watched.site + "/private/" + vector)
        await asyncio.sleep(SETTLE)
    assert ("/page", AGENT) in watched.paths
    assert watched.disallowed() == [], watched.paths


# -- attach refuses a browser with a network of its own ---------------------------------


@pytest.mark.parametrize("launched, missing", [
    ({"args": CHROMIUM_ARGS}, "the proxy http://127.0.0.1:0"),
    ({"args": [*CHROMIUM_ARGS, "--webrtc-ip-handling-policy=disable_non_proxied_udp"],
      "proxy": {"server": "http://127.0.0.1:0"}}, "--proxy-bypass-list=<-loopback>"),
    ({"args": [*launch_options(*CHROMIUM_ARGS)["args"], "--proxy-bypass-list=127.0.0.1"],
      "proxy": {"server": "http://127.0.0.1:0"}}, "--proxy-bypass-list=<-loopback> last"),
    ({"args": [*CHROMIUM_ARGS, "--proxy-bypass-list=<-loopback>",
               "--force-webrtc-ip-handling-policy=disable_non_proxied_udp"],
      "proxy": {"server": "http://127.0.0.1:0"}}, "--webrtc-ip-handling-policy"),
    ({"args": [*launch_options(*CHROMIUM_ARGS)["args"], "--no-proxy-server"],
      "proxy": {"server": "http://127.0.0.1:0"}}, "no --no-proxy-server"),
])
async def test_a_browser_without_the_floor_is_refused_naming_what_to_set(
        launched: dict[str, Any], missing: str, tmp_path: Path) -> None:
    async with watched_network({}) as watched, async_playwright() as playwright, RobotGate(
            AGENT, is_private=public_loopback_1, delay=0) as gate:
        context = await playwright.chromium.launch_persistent_context(
            tmp_path, executable_path=chromium_path(), service_workers="block", **launched)
        try:
            with pytest.raises(UnsafeBrowser, match="network of its own") as refused:
                await attach(gate, context)
            assert missing in str(refused.value)
        finally:
            await context.close()
    assert watched.paths == []


async def test_a_context_whose_service_workers_are_not_blocked_is_refused(
        tmp_path: Path) -> None:
    async with async_playwright() as playwright, RobotGate(AGENT) as gate:
        context = await playwright.chromium.launch_persistent_context(
            tmp_path, executable_path=chromium_path(), **launch_options(*CHROMIUM_ARGS))
        try:
            with pytest.raises(UnsafeBrowser, match="service_workers='block'"):
                await attach(gate, context)
        finally:
            await context.close()


@pytest.mark.parametrize("target", ["page", "context"])
async def test_attach_probes_the_floor_without_a_page_of_its_own(
        target: str, tmp_path: Path) -> None:
    # A page attach opened and closed at once met the context's own "page" listeners
    # closed (browserforge's, under crawlee, logged "Error occurred in event listener"
    # on 2 of 5 crawls): the probe goes through a page the context has.
    async with floored(tmp_path) as context, RobotGate(AGENT) as gate:
        page = context.pages[0] if context.pages else await context.new_page()
        opened: list[Page] = []
        context.on("page", lambda new: opened.append(new))
        handle = await attach(gate, page if target == "page" else context)
        await handle.detach()
    assert opened == []
