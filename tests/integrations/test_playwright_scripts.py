"""Through ``attach``: a page's script-made requests are held to their server's delay,
a document's subresources are capped in number, and a page closes after a refused
redirect.  What no route sees reaches nothing: test_browser_floor.py."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from robotgate import Disallowed, RobotGate
from tests.contract.test_request_paths import AGENT, PUBLIC, public_loopback_1
from tests.integrations.test_playwright_pointers import (
    ALLOW,
    HtmlSite,
    browser,
    private,
    until,
)

pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                    "(pip install 'robotgate[playwright]')")

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request

from robotgate.integrations.playwright import TOO_MANY, attach, preloading_off

pytestmark = pytest.mark.slow  # each test starts a Chromium
__all__ = ["browser", "private"]  # the pointer tests' fixtures, as this module's


@pytest.fixture
async def public() -> AsyncIterator[HtmlSite]:
    site = await HtmlSite(PUBLIC, robots=ALLOW + "Crawl-delay: 0.5\n").start()
    yield site
    await site.close()


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(times)]


@pytest.mark.parametrize("how", ["fetch", "xhr", "beacon"])
async def test_a_pages_script_made_requests_are_held_to_the_crawl_delay(
        how: str, public: HtmlSite, browser: Any) -> None:
    send = {"fetch": "fetch(u).catch(() => 0)",
            "xhr": "{ const x = new XMLHttpRequest(); x.open('GET', u); x.send() }",
            "beacon": "navigator.sendBeacon(u, 'x')"}[how]
    public.pages["/page"] = ("<html><body><script>for (let i = 0; i < 4; i++)"
                             f" {{ const u = '/api/' + i; {send} }}</script></body></html>", {})
    async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context)
        page = await context.new_page()
        await page.goto(public.url("/page"))
        await until(lambda: len(public.times("/api/")) == 4)
        await context.close()
    arrived = public.times("/page") + public.times("/api/")
    assert len(arrived) == 5, public.paths()
    assert min(gaps(arrived)) >= 0.49, gaps(arrived)  # Crawl-delay: 0.5


@pytest.mark.parametrize("closed_by", ["context", "detach"])
async def test_a_beacon_held_for_its_turn_never_leaves_unrouted_when_the_context_closes(
        closed_by: str, browser: Any) -> None:
    # A beacon outlives its page: Chromium sends a held keepalive request itself (its
    # own User-Agent, unpaced) once its route goes away with the context. Held for its
    # turn (Crawl-delay 5 after the page), it is aborted before that: never sent.
    site = await HtmlSite(PUBLIC, robots=ALLOW + "Crawl-delay: 5\n").start()
    site.pages["/page"] = ("<html><body><script>navigator.sendBeacon('/beacon', 'x')"
                           "</script></body></html>", {})
    try:
        async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
            context = await browser.new_context(service_workers="block")
            handle = await attach(gate, context)
            page = await context.new_page()
            await page.goto(site.url("/page"))
            await asyncio.sleep(0.3)  # the beacon waits for its turn, 5 s after the page
            if closed_by == "detach":
                await handle.detach()
            await context.close()
            await asyncio.sleep(1.0)  # what Chromium sent on its own has arrived
        assert site.times("/beacon") == [], site.headers
    finally:
        await site.close()


async def test_a_documents_subresources_past_the_cap_are_refused(
        public: HtmlSite, browser: Any) -> None:
    images = "".join(f'<img src="/img/{i}">' for i in range(5))
    public.pages["/page"] = (f"<html><body>{images}</body></html>", {})
    refused: list[Disallowed] = []

    def heard(request: Request, refusal: Disallowed) -> None:
        refused.append(refusal)

    async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context, max_subresources=3, on_refused=heard)
        page = await context.new_page()
        await page.goto(public.url("/page"))
        await until(lambda: len(public.times("/img/")) + len(refused) == 5)
        await context.close()
    assert len(public.times("/img/")) == 3
    assert [r.decision.outcome for r in refused] == [TOO_MANY] * 2
    assert "max_subresources" in refused[0].decision.reason


def test_preloading_off_keeps_the_profiles_other_preferences(tmp_path: Path) -> None:
    (tmp_path / "Default").mkdir()
    (tmp_path / "Default" / "Preferences").write_text('{"net": {"a": 1}, "b": 2}')
    assert preloading_off(tmp_path) == tmp_path
    assert json.loads((tmp_path / "Default" / "Preferences").read_text()) == {
        "net": {"a": 1, "network_prediction_options": 2}, "b": 2}


async def test_a_page_closes_after_a_refused_redirect_navigation(
        public: HtmlSite, private: HtmlSite, browser: Any) -> None:
    async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context)
        for _ in range(3):
            page = await context.new_page()
            with pytest.raises(PlaywrightError, match="ERR_BLOCKED_BY_CLIENT"):
                await page.goto(public.url("/redirect?to=" + private.url("/secret")))
            await asyncio.wait_for(page.close(), 10)
        await context.close()
    assert private.paths() == [] and private.robots_hits == 0
