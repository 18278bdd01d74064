"""Through ``attach``: an answer's body is read within ``max_bytes`` (decoded), as
``gate.fetch`` reads it; a longer one is refused (the browser is not handed it), and
the crawl goes on.  The driver's memory under a 1 GiB answer: benchmarks/browser_bodies.py."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from robotgate import Disallowed, RobotGate
from tests.contract.test_request_paths import AGENT, PUBLIC, public_loopback_1
from tests.integrations.test_playwright_pointers import ALLOW, HtmlSite, browser

pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                    "(pip install 'robotgate[playwright]')")

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request

from robotgate.integrations.playwright import TOO_LARGE, attach

pytestmark = pytest.mark.slow  # each test starts a Chromium
__all__ = ["browser"]  # the pointer tests' fixture, as this module's

LIMIT = 100_000


class BodySite(HtmlSite):
    """An :class:`HtmlSite` that also serves ``/gzip/...``: ``gzipped`` pages, sent
    gzip-coded."""

    gzipped: dict[str, bytes]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = self.gzipped.get(request.path)
        if body is None:
            return await super()._handle(request)
        self.arrivals.append((request.path, 0.0))
        return web.Response(body=gzip.compress(body), headers={
            "Content-Type": "text/html", "Content-Encoding": "gzip"})


@pytest.fixture
async def site() -> AsyncIterator[BodySite]:
    site = BodySite(PUBLIC, robots=ALLOW)
    site.gzipped = {}
    await site.start()
    yield site
    await site.close()


@pytest.mark.parametrize("coded", [False, True])
async def test_an_answer_over_max_bytes_is_refused_and_the_crawl_goes_on(
        coded: bool, site: BodySite, browser: Any) -> None:
    # The big page's body is past the limit, as sent or only once decoded (a gzip
    # bomb's way): the browser is not handed it, on_refused says why, and the next page
    # (within the limit, gzip-coded too: handed decoded) loads.
    big = "<html><body>" + "x" * (LIMIT + 1) + "</body></html>"
    small = "<html><head><title>small</title></head><body>ok</body></html>"
    if coded:
        site.gzipped = {"/gzip/big": big.encode(), "/gzip/small": small.encode()}
        where = "/gzip/"
    else:
        site.pages.update({"/big": (big, {}), "/small": (small, {})})
        where = "/"
    refused: list[Disallowed] = []

    def heard(request: Request, refusal: Disallowed) -> None:
        refused.append(refusal)

    async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context, max_bytes=LIMIT, on_refused=heard)
        page = await context.new_page()
        with pytest.raises(PlaywrightError, match="ERR_BLOCKED_BY_CLIENT"):
            await page.goto(site.url(where + "big"))
        page = await context.new_page()
        response = await page.goto(site.url(where + "small"))
        assert response is not None and response.status == 200
        assert await page.title() == "small"
        await context.close()
    assert [r.decision.outcome for r in refused] == [TOO_LARGE]
    assert refused[0].url == site.url(where + "big")
    assert f"{LIMIT:,} bytes" in refused[0].decision.reason
    assert "max_bytes" in refused[0].decision.reason
    assert [path for path in site.paths() if path != "/robots.txt"] == [
        where + "big", where + "small"]
