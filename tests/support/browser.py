"""The system Chromium under Playwright, for the browser tests (no browser is downloaded).

:func:`chromium` is an async context manager giving a :class:`Chromium`, whose
``new_context`` launches a context as robotgate's ``attach`` takes it; a test without
Playwright or a Chromium skips, saying which is missing.  :func:`shared_chromium` keeps
one Chromium for many tests (each in its own event loop), which :func:`chromium` then
makes its contexts in (``chromium(shared)``).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

__all__ = ["CHROMIUM_ARGS", "Chromium", "chromium", "chromium_path", "plain_chromium",
           "shared_chromium"]

#: Headless, and quiet on a closed network: no background fetches, updates or sync.
#: ``attach`` needs the floor's switches too (``launch_options`` adds them).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def chromium_path() -> str:
    """The system Chromium's path; the test skips when there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("no Chromium on PATH (apt-get install chromium): the browser tests need one")
    return found


class Chromium:
    """The system Chromium, one browser a context: each context a persistent one on a
    throwaway profile, launched with ``launch_options`` (no network but the gate)."""

    def __init__(self, playwright: Any, path: str, where: str, shared: str | None) -> None:
        self.playwright = playwright
        self.path = path
        self.where = where
        self.shared = shared
        self.contexts: list[Any] = []

    async def new_context(self, **options: Any) -> Any:
        """A ``BrowserContext`` made with ``options`` (``args``: switches besides
        ``CHROMIUM_ARGS``; ``floor=False``: launched without ``launch_options``): of a
        new Chromium, or, given a shared one, a new context of it."""
        from robotgate.integrations.playwright import launch_options, preloading_off

        floor = options.pop("floor", True)
        args = [*CHROMIUM_ARGS, *options.pop("args", ())]
        if self.shared is not None and floor and "proxy" not in options and len(args) == len(
                CHROMIUM_ARGS):
            browser = await self.playwright.chromium.connect_over_cdp(self.shared)
            context = await browser.new_context(**options)
            self.contexts.append(context)
            return context
        profile = preloading_off(tempfile.mkdtemp(dir=self.where))
        launch = launch_options(*args) if floor else {"args": args}
        context = await self.playwright.chromium.launch_persistent_context(
            profile, executable_path=self.path, **{**launch, **options})
        self.contexts.append(context)
        return context


@contextmanager
def shared_chromium() -> Iterator[str]:
    """One system Chromium on a profile that preloads nothing, with no network but the
    gate, for many tests: its DevTools endpoint, for :func:`chromium`.  Started with
    ``--enable-automation``, so that ``attach`` can ask it its switches."""
    pytest.importorskip("playwright.async_api",
                        reason="Playwright is not installed (pip install playwright)")
    from robotgate.integrations.playwright import BLACK_HOLE, LAUNCH_ARGS, preloading_off

    # Chromium's helpers may still write its profile a moment after it exits.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as where:
        profile = preloading_off(Path(where) / "profile")
        with _devtools_chromium(profile, f"--proxy-server={BLACK_HOLE}", *LAUNCH_ARGS,
                                "--enable-automation") as endpoint:
            yield endpoint


@contextmanager
def plain_chromium() -> Iterator[str]:
    """A system Chromium without robotgate's floor, reaching the network itself (to
    compare with what the gate does): its DevTools endpoint."""
    pytest.importorskip("playwright.async_api",
                        reason="Playwright is not installed (pip install playwright)")
    with (tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as where,
          _devtools_chromium(Path(where)) as endpoint):
        yield endpoint


@contextmanager
def _devtools_chromium(profile: Path, *switches: str) -> Iterator[str]:
    """The system Chromium on ``profile`` with ``switches``: its DevTools endpoint."""
    process = subprocess.Popen(
        [chromium_path(), *CHROMIUM_ARGS, *switches, "--remote-debugging-port=0",
         f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port = profile / "DevToolsActivePort"
        for _ in range(300):  # Chromium writes its port once it listens
            if port.is_file() and port.read_text().strip():
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("Chromium did not open its DevTools port in 15 s")
        yield f"http://127.0.0.1:{port.read_text().split()[0]}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@asynccontextmanager
async def chromium(shared: str | None = None) -> AsyncIterator[Chromium]:
    """The system Chromium, to make contexts of (see :class:`Chromium`); ``shared``:
    the endpoint of one :func:`shared_chromium` gives."""
    async_api = pytest.importorskip(
        "playwright.async_api", reason="Playwright is not installed (pip install playwright)")
    path = chromium_path()
    # Chromium may still be writing its profile as the directory goes, as in the two above.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as where:
        async with async_api.async_playwright() as playwright:
            browser = Chromium(playwright, path, where, shared)
            try:
                yield browser
            finally:
                for context in browser.contexts:
                    await context.close()
