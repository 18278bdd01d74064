"""A browser's subresources share the gate's servers with every other path: a page's
``fetch`` in the system Chromium holds one of its server's cap slots (``gate.fetch``
beside the browser waits for it), and its 429's ``Retry-After`` rests the server for
the next navigation and the next ``gate.fetch``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from robotgate import RobotGate
from tests.contract.test_request_paths import AGENT, Site, public
from tests.support.browser import chromium

pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                    "(pip install 'robotgate[playwright]')")

from robotgate.integrations.playwright import attach

pytestmark = pytest.mark.slow  # each test starts a Chromium

# The contract's public site (127.0.0.1), as this module's fixture.
__all__ = ["public"]


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with chromium() as launched:
        yield launched


async def arrived(site: Site, path: str) -> None:
    """Until the site has seen a request for ``path``."""
    for _ in range(1000):
        if path in site.paths():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never reached the site")


async def test_a_gate_fetch_waits_while_a_subresource_holds_the_servers_only_slot(
        public: Site, browser: Any) -> None:
    async with RobotGate(AGENT, delay=0) as gate:  # max_per_host 1
        context = await browser.new_context(service_workers="block")
        await attach(gate, context)
        page = await context.new_page()
        await page.goto(public.url("/page"))
        # The page's own fetch, answered a second later, holds the server's one slot.
        await page.evaluate("u => { window.held = fetch(u).then(r => r.status); }",
                            public.url("/api?hold=1"))
        await arrived(public, "/api")
        beside = await gate.fetch(public.url("/other"))
        assert beside.status == 200
        assert await page.evaluate("window.held") == 200
        await context.close()
    [api_at] = public.times("/api")
    [other_at] = public.times("/other")
    assert other_at - api_at >= 1.0
    assert public.peak == 1


async def test_a_subresources_429_with_retry_after_rests_the_server_for_every_path(
        public: Site, browser: Any) -> None:
    async with RobotGate(AGENT, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context)
        page = await context.new_page()
        await page.goto(public.url("/page"))
        status = await page.evaluate("u => fetch(u).then(r => r.status)",
                                     public.url("/status/429?ra=1"))
        assert status == 429  # the browser sees the answer
        beside = asyncio.ensure_future(gate.fetch(public.url("/other")))
        await page.goto(public.url("/next"))
        assert (await beside).status == 200
        await context.close()
    [busy_at] = public.times("/status/429")
    [next_at] = public.times("/next")
    [other_at] = public.times("/other")
    assert next_at - busy_at >= 1.0
    assert other_at - busy_at >= 1.0
