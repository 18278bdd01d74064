"""A challenge's answer is a request of its own turn, on every path that answers one.

A page answers ``401`` with ``WWW-Authenticate: Basic`` to a request without
credentials, and ``200`` to one with them; its site asks for a ``Crawl-delay``.  The
paths that answer such a challenge (as Chromium does, with the context's
``http_credentials`` or the URL's user information): Playwright's route (``attach``),
and crawlee's PlaywrightCrawler through ``RobotGateHttpClient.attach`` (its navigation
sent by that route too).  The server notes when each request arrives, on its own clock: the
answer (the request with ``Authorization``) comes at least the site's delay after the
challenged request, as any two requests to it do.  (Before, both paths sent the answer
at once, inside the challenged request's turn.)

The clients' own answers to a Digest challenge, sent through the gate, are requests of
their own already (rows here too, so that they stay so): aiohttp's
``DigestAuthMiddleware`` placed before ``gate.middleware`` (each of its requests goes
through the gate's middleware; placed after it, its answer would go inside the
challenged request's turn: docs/gate.md puts the gate after every middleware that
makes requests of its own), and httpx's ``DigestAuth`` over the httpx transport (httpx's
auth flow sends each request through the transport).  The other paths answer no
challenge: ``gate.fetch`` and crawl4ai's HTTP crawler (aiohttp sends ``auth=``
unasked; ``gate.fetch`` keeps the session's middlewares out), Scrapy (its
``HttpAuthMiddleware`` sends the header unasked); crawl4ai's browser is the route's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from robotgate import RobotGate

pytestmark = pytest.mark.slow

AGENT = "ChallengeBot/1.0"
HOST = "127.0.0.1"
#: The site's delay (seconds), asked for in its robots.txt.
CRAWL_DELAY = 1
#: How much earlier than the delay the server's clock may see the answer: the turn's
#: clock starts as the challenged request leaves, a moment before it arrives.
SLACK = 0.05
#: The challenge of a ``/digest/...`` page.
DIGEST = 'Digest realm="r", nonce="5ccc069c403ebaf9f0171e9517f40e41", qop="auth", algorithm=MD5'


@dataclass
class Site:
    """A loopback site whose ``/secret/...`` pages answer 401 Basic without credentials
    (``/digest/...``: 401 Digest without a Digest answer);
    ``arrivals``: each page request's path, when it arrived (the server's monotonic
    clock) and its Authorization."""

    arrivals: list[tuple[str, float, str | None]] = field(default_factory=list)
    port: int = 0

    def url(self, path: str, userinfo: str = "") -> str:
        return f"http://{userinfo}{HOST}:{self.port}{path}"

    def heard(self, path: str) -> list[tuple[float, str | None]]:
        return [(at, authorization) for seen, at, authorization in self.arrivals
                if seen == path]


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    found = Site()

    async def handle(request: web.Request) -> web.StreamResponse:
        arrived = time.monotonic()  # first: the server's own clock, as the request comes
        if request.path == "/robots.txt":
            return web.Response(text=f"User-agent: *\nCrawl-delay: {CRAWL_DELAY}\n")
        authorization = request.headers.get("Authorization")
        found.arrivals.append((request.path, arrived, authorization))
        if request.path.startswith("/digest/"):
            if authorization is None or not authorization.startswith("Digest "):
                return web.Response(status=401, headers={"WWW-Authenticate": DIGEST})
        elif not request.path.startswith("/secret/"):
            raise web.HTTPNotFound()  # a browser's own (/favicon.ico)
        elif authorization is None:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="r"'})
        return web.Response(text="<html><body>in</body></html>", content_type="text/html")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, HOST, 0).start()
    found.port = runner.addresses[0][1]
    try:
        yield found
    finally:
        await runner.cleanup()


def open_gate() -> RobotGate:
    # The loopback host plays a public site; the pace is the site's Crawl-delay.
    return RobotGate(AGENT, delay=0, is_private=lambda address: False)


def assert_answered_in_a_turn_of_its_own(site: Site, path: str) -> None:
    """``path`` was challenged, then answered with credentials, no sooner than the
    site's delay after the challenged request arrived."""
    heard = site.heard(path)
    assert [authorization is not None for _, authorization in heard] == [False, True], heard
    (challenged, _), (answer, _) = heard
    assert answer - challenged >= CRAWL_DELAY - SLACK, heard


@pytest.fixture(scope="module")
def floored() -> Iterator[str]:
    """A system Chromium with no network but the gate (attach's): its DevTools endpoint."""
    from tests.support.browser import shared_chromium

    with shared_chromium() as endpoint:
        yield endpoint


# -- Playwright's route ------------------------------------------------------------------


@pytest.mark.parametrize("form", ["http-credentials", "userinfo"])
async def test_the_browser_routes_answer_to_a_challenge_takes_its_own_turn(
        site: Site, floored: str, form: str) -> None:
    from playwright.async_api import async_playwright

    from robotgate.integrations.playwright import attach

    path = f"/secret/browser-{form}"
    options: dict[str, Any] = {"service_workers": "block"}
    if form == "http-credentials":
        options["http_credentials"] = {"username": "user", "password": "pass"}
    async with async_playwright() as playwright, open_gate() as gate:
        context = await (await playwright.chromium.connect_over_cdp(floored)).new_context(
            **options)
        try:
            attachment = await attach(gate, context)
            page = await context.new_page()
            url = site.url(path, "user:pass@" if form == "userinfo" else "")
            response = await asyncio.wait_for(page.goto(url), 30)  # a hang guard
            assert response is not None and response.status == 200
            await attachment.detach()
        finally:
            await context.close()
    assert_answered_in_a_turn_of_its_own(site, path)


# -- crawlee's PlaywrightCrawler through RobotGateHttpClient ------------------------------


async def test_crawlees_playwright_crawlers_answer_to_a_challenge_takes_its_own_turn(
        site: Site, tmp_path: Path) -> None:
    pytest.importorskip("crawlee", reason="crawlee is not installed")
    pytest.importorskip("browserforge", reason="crawlee's playwright extra is not installed")
    from crawlee import ConcurrencySettings, Request
    from crawlee.crawlers import PlaywrightCrawler, PlaywrightCrawlingContext
    from crawlee.storage_clients import MemoryStorageClient

    from robotgate.integrations.crawlee import RobotGateHttpClient
    from robotgate.integrations.playwright import LAUNCH_ARGS, preloading_off
    from tests.support.browser import CHROMIUM_ARGS, chromium_path

    path = "/secret/crawler"
    statuses: list[int | None] = []
    async with open_gate() as gate:
        client = RobotGateHttpClient(gate)
        crawler = PlaywrightCrawler(
            storage_client=MemoryStorageClient(), headless=True,
            user_data_dir=preloading_off(str(tmp_path / "profile")), use_incognito_pages=False,
            browser_launch_options={"executable_path": chromium_path(),
                                    "args": [*CHROMIUM_ARGS, *LAUNCH_ARGS]},
            browser_new_context_options={
                "service_workers": "block",
                "http_credentials": {"username": "user", "password": "pass"}},
            fingerprint_generator=None,  # the context's options as given
            concurrency_settings=ConcurrencySettings(desired_concurrency=1, max_concurrency=1),
            max_request_retries=0, max_session_rotations=0, configure_logging=False,
            http_client=client)
        client.attach(crawler)

        @crawler.router.default_handler
        async def handler(context: PlaywrightCrawlingContext) -> None:
            statuses.append(context.response.status if context.response else None)

        await asyncio.wait_for(crawler.run([Request.from_url(site.url(path))]),
                               60)  # a hang guard
    assert statuses == [200]
    assert_answered_in_a_turn_of_its_own(site, path)


# -- the clients' own Digest answers, through the gate ------------------------------------


async def test_aiohttps_digest_answer_before_the_gates_middleware_takes_its_own_turn(
        site: Site) -> None:
    import aiohttp
    from aiohttp import DigestAuthMiddleware

    path = "/digest/aiohttp"
    async with open_gate() as gate, aiohttp.ClientSession(
            middlewares=[DigestAuthMiddleware("user", "pass"), gate.middleware]) as session:
        resp = await session.get(site.url(path))
        resp.release()
        assert resp.status == 200
    assert_answered_in_a_turn_of_its_own(site, path)


async def test_httpxs_digest_answer_over_the_transport_takes_its_own_turn(site: Site) -> None:
    httpx = pytest.importorskip("httpx")
    from robotgate.integrations.httpx import RobotGateTransport

    path = "/digest/httpx"
    async with open_gate() as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate), auth=httpx.DigestAuth("user", "pass")) as client:
        resp = await client.get(site.url(path))
        assert resp.status_code == 200
    assert_answered_in_a_turn_of_its_own(site, path)
