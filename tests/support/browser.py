"""The system Chromium under Playwright, for the browser tests (no browser is downloaded).

:func:`chromium` is an async context manager giving a :class:`Chromium`, whose
``new_context`` launches a context as robotgate's ``attach`` takes it; a test without
Playwright or a Chromium skips, saying which is missing.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

__all__ = ["CHROMIUM_ARGS", "Chromium", "chromium", "chromium_path"]

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


class Chromium:
    """The system Chromium, one browser a context: each context a persistent one on a
    throwaway profile that preloads nothing (``attach`` refuses a browser that can)."""

    def __init__(self, playwright: Any, path: str, where: str) -> None:
        self.playwright = playwright
        self.path = path
        self.where = where
        self.contexts: list[Any] = []

    async def new_context(self, **options: Any) -> Any:
        """A ``BrowserContext`` of a new Chromium, made with ``options``."""
        from robotgate.integrations.playwright import preloading_off

        profile = preloading_off(tempfile.mkdtemp(dir=self.where))
        context = await self.playwright.chromium.launch_persistent_context(
            profile, executable_path=self.path, args=CHROMIUM_ARGS, **options)
        self.contexts.append(context)
        return context


@asynccontextmanager
async def chromium() -> AsyncIterator[Chromium]:
    """The system Chromium, to make contexts of (see :class:`Chromium`)."""
    async_api = pytest.importorskip(
        "playwright.async_api", reason="Playwright is not installed (pip install playwright)")
    path = chromium_path()
    with tempfile.TemporaryDirectory() as where:
        async with async_api.async_playwright() as playwright:
            browser = Chromium(playwright, path, where)
            try:
                yield browser
            finally:
                for context in browser.contexts:
                    await context.close()
