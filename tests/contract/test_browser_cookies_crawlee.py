"""The cookie table of test_browser_cookies.py through crawlee's PlaywrightCrawler: each
row's first navigation is the crawler's own request (sent by ``attach``'s route as the
crawlee request's), its other steps run on the crawler's page, and what the sites hear,
the scripts return and the browser keeps must be what Chromium alone gives, as through
``attach``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from robotgate import RobotGate
from tests.contract.test_browser_cookies import (
    ROWS,
    Outcome,
    Sites,
    chromium_alone,
    chromiums,
    gate_names,
    jar,
    run_steps,
    sites,
)
from tests.support.browser import CHROMIUM_ARGS, chromium_path

pytest.importorskip("crawlee", reason="crawlee is not installed (pip install 'robotgate[crawlee]')")
pytest.importorskip("browserforge", reason="crawlee's playwright extra is not installed "
                    "(pip install 'robotgate[crawlee]')")

from crawlee import ConcurrencySettings, Request
from crawlee.crawlers import PlaywrightCrawler, PlaywrightCrawlingContext
from crawlee.proxy_configuration import ProxyConfiguration
from crawlee.storage_clients import MemoryStorageClient

from robotgate.integrations.crawlee import RobotGateHttpClient
from robotgate.integrations.playwright import LAUNCH_ARGS, preloading_off

pytestmark = [pytest.mark.slow, pytest.mark.soak]

__all__ = ["chromiums", "gate_names", "sites"]  # the fixtures this module uses


async def run_in_crawlee(profile: Path, sites: Sites, run: str,
                         steps: list[tuple[str, ...]], gate: RobotGate) -> Outcome:
    """``steps`` through a PlaywrightCrawler attached to ``gate``: the first (a
    navigation) as the crawler's request, the others on its page."""
    kind, first = steps[0][0], steps[0][1]
    assert kind == "goto", steps[0]
    sites.run = run
    client = RobotGateHttpClient(gate)
    crawler = PlaywrightCrawler(
        http_client=client, storage_client=MemoryStorageClient(), headless=True,
        user_data_dir=preloading_off(str(profile)), use_incognito_pages=False,
        browser_launch_options={
            "executable_path": chromium_path(),
            "args": [*CHROMIUM_ARGS, *LAUNCH_ARGS, "--disable-features=HttpsUpgrades"]},
        browser_new_context_options={"service_workers": "block"},
        concurrency_settings=ConcurrencySettings(desired_concurrency=1, max_concurrency=1),
        proxy_configuration=ProxyConfiguration(proxy_urls=[sites.proxy]),
        max_request_retries=0, configure_logging=False)
    client.attach(crawler)
    values: list[Any] = []
    cookies: list[tuple[Any, ...]] = []
    handled: list[str] = []

    @crawler.router.default_handler
    async def handler(context: PlaywrightCrawlingContext) -> None:
        handled.append(context.request.url)
        page = context.page
        values.extend(await asyncio.wait_for(run_steps(page, steps[1:]), 30))
        await asyncio.sleep(0.1)  # a request the last step started
        cookies.extend(jar(await page.context.cookies()))

    # Its own unique key: another row may start at the same URL.
    await asyncio.wait_for(crawler.run([Request.from_url(first, unique_key=run)]), 120)
    assert handled == [first], f"{run}: the crawler did not handle its page"
    return Outcome(sorted(sites.heard.get(run, [])), values, sorted(cookies))


@pytest.mark.parametrize("row", ROWS)
async def test_crawlees_browser_keeps_cookies_as_chromium_alone(
        sites: Sites, chromiums: tuple[str, str], gate_names: None, row: str,
        tmp_path: Path) -> None:
    _, plain = chromiums
    expected = await chromium_alone(sites, plain, row)
    async with RobotGate("CookieBot/1.0", delay=0, is_private=lambda address: False) as gate:
        ours = await run_in_crawlee(tmp_path / "profile", sites, f"crawlee/{row}", ROWS[row],
                                    gate)
    assert ours == expected, f"{row}:\n  crawlee  {ours}\n  chromium {expected}"
