"""Through ``attach``: a page's script-made requests are held to their server's delay,
a document's subresources are capped in number, a context whose browser can make
requests no route sees is refused, and a page closes after a refused redirect."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from robotgate import Disallowed, RobotGate
from tests.contract.test_request_paths import AGENT, PRIVATE, PUBLIC, public_loopback_1
from tests.integrations.test_playwright_pointers import (
    ALLOW,
    HtmlSite,
    browser,
    private,
    until,
)
from tests.support.browser import CHROMIUM_ARGS, chromium_path

pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                    "(pip install 'robotgate[playwright]')")

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request, async_playwright

from robotgate.integrations.playwright import TOO_MANY, UnsafeBrowser, attach, preloading_off

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


async def test_a_context_whose_service_workers_are_not_blocked_is_refused(
        browser: Any) -> None:
    async with RobotGate(AGENT) as gate:
        context = await browser.new_context()
        with pytest.raises(UnsafeBrowser, match="service_workers='block'"):
            await attach(gate, context)
        await context.close()


async def test_a_browser_with_shared_workers_is_refused(tmp_path: Path) -> None:
    args = [arg for arg in CHROMIUM_ARGS if "SharedWorker" not in arg]
    async with async_playwright() as playwright, RobotGate(AGENT) as gate:
        context = await playwright.chromium.launch_persistent_context(
            preloading_off(tmp_path), executable_path=chromium_path(), args=args,
            service_workers="block")
        try:
            with pytest.raises(UnsafeBrowser, match="--disable-blink-features=SharedWorker"
                               ) as refused:
                await attach(gate, context)
            assert "preloading" not in str(refused.value)
        finally:
            await context.close()


async def test_a_browser_that_preloads_is_refused() -> None:
    async with async_playwright() as playwright, RobotGate(AGENT) as gate:
        browser = await playwright.chromium.launch(executable_path=chromium_path(),
                                                   args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(service_workers="block")
            with pytest.raises(UnsafeBrowser, match=r"preloading_off\(dir\)") as refused:
                await attach(gate, context)
            assert "shared workers" not in str(refused.value)
        finally:
            await browser.close()


def test_preloading_off_keeps_the_profiles_other_preferences(tmp_path: Path) -> None:
    (tmp_path / "Default").mkdir()
    (tmp_path / "Default" / "Preferences").write_text('{"net": {"a": 1}, "b": 2}')
    assert preloading_off(tmp_path) == tmp_path
    assert json.loads((tmp_path / "Default" / "Preferences").read_text()) == {
        "net": {"a": 1, "network_prediction_options": 2}, "b": 2}


# What no route sees: closed by the settings attach asks for.  Nothing tells that a closed
# request was not made, so each case waits a while (it arrived within a second without them).
UNSEEN = {
    "speculation-prefetch": ('<script type="speculationrules">{{"prefetch": [{{"source": '
                             '"list", "urls": ["{to}"]}}]}}</script>'),
    "speculation-prerender": ('<script type="speculationrules">{{"prerender": [{{"source": '
                              '"list", "urls": ["{to}"]}}]}}</script>'),
    "shared-worker": ("<script>new SharedWorker(URL.createObjectURL(new Blob("
                      "[\"fetch('{to}')\"], {{type: 'text/javascript'}})))</script>"),
    "preconnect": '<link rel="preconnect" href="{to}">',
}


@pytest.mark.parametrize("vector", list(UNSEEN))
async def test_what_no_route_sees_is_not_requested(vector: str, public: HtmlSite,
                                                   browser: Any) -> None:
    accepted: list[int] = []
    server = await asyncio.start_server(lambda r, w: accepted.append(1), PRIVATE, 0)
    port = server.sockets[0].getsockname()[1]
    to = f"http://{PRIVATE}:{port}/secret"
    public.pages["/page"] = (f"<html><body>{UNSEEN[vector].format(to=to)}</body></html>", {})
    try:
        async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
            context = await browser.new_context(service_workers="block")
            await attach(gate, context)
            page = await context.new_page()
            await page.goto(public.url("/page"))
            await asyncio.sleep(2)
            await context.close()
    finally:
        server.close()
    assert accepted == []


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
