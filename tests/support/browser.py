"""The system Chromium under Playwright, for the browser tests (no browser is downloaded).

:func:`chromium` is an async context manager giving a launched browser; a test
without Playwright or a Chromium skips, saying which is missing.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

__all__ = ["CHROMIUM_ARGS", "chromium", "chromium_path"]

#: Headless, and quiet on a closed network: no background fetches, updates or sync; no
#: shared workers (their requests pass every route: robotgate's ``attach`` refuses them).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--disable-blink-features=SharedWorker"]


def chromium_path() -> str:
    """The system Chromium's path; the test skips when there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("no Chromium on PATH (apt-get install chromium): the browser tests need one")
    return found


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """A launched system Chromium (a ``playwright.async_api.Browser``)."""
    async_api = pytest.importorskip(
        "playwright.async_api", reason="Playwright is not installed (pip install playwright)")
    path = chromium_path()
    async with async_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()
