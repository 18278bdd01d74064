"""The cookie table of test_browser_cookies.py through crawl4ai's ``RobotGateCrawler``:
each row's first navigation is the crawler's run (``arun``), its other steps run on the
run's page in crawl4ai's ``after_goto`` hook, and what the sites hear, the scripts
return and the browser keeps must be what Chromium alone gives, as through ``attach``."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from types import ModuleType
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

pytest.importorskip("crawl4ai",
                    reason="crawl4ai is not installed (pip install 'robotgate[crawl4ai]')")

pytestmark = [pytest.mark.slow, pytest.mark.soak]

__all__ = ["chromiums", "gate_names", "sites"]  # the fixtures this module uses


@pytest.fixture
def integration(crawl4ai_home: Path) -> ModuleType:
    """robotgate.integrations.crawl4ai, imported once crawl4ai's files are kept out of
    $HOME (tests/conftest.py)."""
    return importlib.import_module("robotgate.integrations.crawl4ai")


async def run_in_crawl4ai(integration: ModuleType, sites: Sites, run: str,
                          steps: list[tuple[str, ...]], gate: RobotGate) -> Outcome:
    """``steps`` through a ``RobotGateCrawler`` on ``gate``: the first (a navigation) as
    the run's URL, the others on the run's page as it loaded."""
    from crawl4ai import BrowserConfig, CacheMode, CrawlerRunConfig, ProxyConfig

    kind, first = steps[0][0], steps[0][1]
    assert kind == "goto", steps[0]
    sites.run = run
    config = BrowserConfig(
        headless=True, verbose=False, proxy_config=ProxyConfig(server=sites.proxy),
        extra_args=[*CHROMIUM_ARGS, "--disable-features=HttpsUpgrades"])
    values: list[Any] | None = None
    cookies: list[tuple[Any, ...]] = []

    async def after_goto(page: Any, context: Any, **kwargs: Any) -> Any:
        nonlocal values
        values = await asyncio.wait_for(run_steps(page, steps[1:]), 30)
        await asyncio.sleep(0.1)  # a request the last step started
        cookies.extend(jar(await context.cookies()))
        return page

    async with integration.RobotGateCrawler(gate, config,
                                            executable_path=chromium_path()) as crawler:
        crawler.crawler_strategy.set_hook("after_goto", after_goto)
        # crawl4ai may call a row's near-empty page a block (its anti-bot check): the
        # steps ran all the same.
        result = await asyncio.wait_for(crawler.arun(first, config=CrawlerRunConfig(
            cache_mode=CacheMode.BYPASS, verbose=False)), 120)
    assert result.status_code is not None and values is not None, f"{run}: not loaded"
    return Outcome(sorted(sites.heard.get(run, [])), values, sorted(cookies))


@pytest.mark.parametrize("row", ROWS)
async def test_crawl4ais_browser_keeps_cookies_as_chromium_alone(
        sites: Sites, chromiums: tuple[str, str], gate_names: None, row: str,
        integration: ModuleType) -> None:
    _, plain = chromiums
    expected = await chromium_alone(sites, plain, row)
    async with RobotGate("CookieBot/1.0", delay=0, is_private=lambda address: False) as gate:
        ours = await run_in_crawl4ai(integration, sites, f"crawl4ai/{row}", ROWS[row], gate)
    assert ours == expected, f"{row}:\n  crawl4ai {ours}\n  chromium {expected}"
