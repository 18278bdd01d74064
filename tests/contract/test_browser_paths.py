"""The request-path contract through a browser: the cases of test_request_paths.py whose
promises apply to a browser, run against the system Chromium attached to the gate
(``robotgate.integrations.playwright.attach``), each URL a page's navigation.

Not run here: the late fleet slot, the slot given back once and ``close()`` cases,
which drive a client's own calls from inside the gate's hooks.  The events case of
test_events_paths.py runs here too: a browser's navigations tell the same story.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest

from robotgate import Disallowed, RobotGate
from tests.contract import test_request_paths as contract
from tests.contract.test_events_paths import PAGES, _events
from tests.contract.test_private_addresses import (
    CHECKED,
    Names,
    checked_public,
    names,
    site_at,
    system_names,
)
from tests.contract.test_request_paths import Result, Site, private, public
from tests.support.browser import chromium

pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                    "(pip install 'robotgate[playwright]')")

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request

from robotgate.integrations.playwright import attach

# The contract's servers and name tables, as this module's fixtures.
__all__ = ["names", "private", "public", "system_names"]


class BrowserClient(contract.Client):
    """Each URL a navigation in a page of its own; a refusal as the route heard it."""

    def __init__(self, gate: RobotGate, context: Any) -> None:
        super().__init__(gate)
        self.context = context
        self.refusals: dict[str, Disallowed] = {}

    def heard(self, request: Request, refused: Disallowed) -> None:
        self.refusals[request.url] = refused

    async def get(self, url: str) -> Result:
        page = await self.context.new_page()
        # Chromium fails a navigation answered 4xx/5xx with an empty body (it shows its
        # own error page): the answer's status is in the response event.
        statuses: dict[str, int] = {}
        page.on("response", lambda response: statuses.setdefault(response.url, response.status))
        try:
            response = await page.goto(url)
        except PlaywrightError as exc:
            refused = self.refusals.get(url)
            if refused is not None:
                return contract._refusal(refused)
            if url in statuses:
                return Result(status=statuses[url])
            return Result(error=str(exc))
        finally:
            await page.close()
        assert response is not None
        return Result(status=response.status, usage=self.gate.usage(url, response.headers))


@dataclass
class BrowserDriver(contract.Driver):
    """The browser path: a context of ``browser`` attached to a gate for each run."""

    browser: Any = None

    @asynccontextmanager
    async def open(self, **options: Any) -> AsyncIterator[contract.Client]:
        async with RobotGate(contract.AGENT, is_private=contract.public_loopback_1,
                             **options) as gate:
            context = await self.browser.new_context()
            client = BrowserClient(gate, context)
            await attach(gate, context, on_refused=client.heard)
            try:
                yield client
            finally:
                await context.close()


@pytest.fixture
async def driver() -> AsyncIterator[BrowserDriver]:
    async with chromium() as browser:
        yield BrowserDriver("browser", browser)


CASES = [
    contract.test_a_disallowed_url_is_refused_and_an_allowed_page_reports_its_usage,
    contract.test_robots_txt_is_fetched_once_for_concurrent_requests,
    contract.test_the_delay_is_kept_between_requests,
    contract.test_retry_after_is_kept,
    contract.test_a_429_without_retry_after_backs_off,
    contract.test_latency_factor_widens_the_gap_after_a_slow_answer,
    contract.test_max_per_host_caps_the_requests_the_server_sees_at_once,
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.__name__[5:] for case in CASES])
async def test_the_browser_keeps_the_promise(case: Any, driver: BrowserDriver,
                                             public: Site) -> None:
    await case(driver, public)
    # Chromium asks for the icon of a page naming none past every route: attach gives each
    # page one of its own, so that no request leaves unjudged.
    assert "/favicon.ico" not in public.paths()


@pytest.mark.slow
async def test_the_browser_refuses_a_redirect_into_a_private_address(
        driver: BrowserDriver, public: Site, private: Site) -> None:
    await contract.test_a_redirect_into_a_private_address_is_refused(driver, public, private)


@pytest.mark.slow
async def test_the_browser_follows_private_to_private_without_credentials(
        driver: BrowserDriver, private: Site) -> None:
    await contract.test_private_to_private_is_followed_without_the_locations_credentials(
        driver, private)


@pytest.mark.slow
async def test_the_browser_tells_the_same_events_in_the_same_order(
        driver: BrowserDriver, public: Site) -> None:
    urls = [public.url(p) for p in PAGES]
    origin = public.url("")
    results, events = await _events(driver, urls, delay=0.2)
    assert [r.status for r in results] == [200, None, 429, 200], results
    assert results[1].refused == "rule"
    # The same story as every other path's; a browser may take longer between two
    # navigations than the delay asks, so a page need not wait (TurnWaited) for its turn.
    assert [[kind, where] for kind, where, _ in events if kind != "TurnWaited"] == [
        ["RobotsFetched", origin],
        ["ResponseAnswered", urls[0]],
        ["UrlSkipped", urls[1]],
        ["ResponseAnswered", urls[2]], ["BackoffStarted", origin],
        ["ResponseAnswered", urls[3]], ["BackoffEased", origin],
    ], events
    waited = [where for kind, where, _ in events if kind == "TurnWaited"]
    assert urls[0] in waited and urls[1] not in waited  # robots.txt's request was a turn


# -- a public page's pointer goes to the address its check found ------------------------------

@pytest.mark.slow
async def test_the_browser_sends_a_public_pages_http_pointer_to_the_address_it_checked(
        names: Names, system_names: Names) -> None:
    # The gate's look-ups find localhost public (127.0.0.3); the browser's client would
    # find 127.0.0.1, a private address here.  The hop goes to 127.0.0.3 at the port;
    # the cookies are the name's, sent and kept for it, none kept for the address.
    public = await Site(CHECKED, robots="User-agent: *\nAllow: /\n").start()
    inside = await Site("127.0.0.1", robots="User-agent: *\nAllow: /\n").start()
    checked = await site_at(CHECKED, inside.port, set_cookie="kept=2; Path=/; HttpOnly")
    checked.robots = "User-agent: *\nAllow: /\n"
    for table in (names, system_names):
        table.answers["localhost"] = [[CHECKED]]
    target = quote(f"http://localhost:{inside.port}/secret", safe="")
    try:
        async with chromium() as browser, RobotGate(
                contract.AGENT, is_private=checked_public,
                delay=0) as gate:
            context = await browser.new_context()
            await context.add_cookies([{"name": "seen", "value": "1",
                                        "url": f"http://localhost:{inside.port}/"}])
            await attach(gate, context)
            page = await context.new_page()
            response = await page.goto(public.url("/redirect?to=" + target))
            assert response is not None and response.status == 200
            named = await context.cookies(f"http://localhost:{inside.port}/")
            at_address = await context.cookies(checked.url("/"))
            await context.close()
    finally:
        for site in (public, inside, checked):
            await site.close()
    assert inside.paths() == [] and inside.robots_hits == 0
    assert checked.paths() == ["/secret"]
    [(_, headers)] = checked.headers
    assert headers["Host"] == f"localhost:{inside.port}"
    assert headers.get("Cookie") == "seen=1"
    assert {(c.get("name"), c.get("value"), c.get("httpOnly")) for c in named} == {
        ("seen", "1", False), ("kept", "2", True)}, named
    assert at_address == [], at_address
