"""The paths that send a page, each with a place where the loop stands still between
the request's turn and its first bytes (tests/contract/test_fleet_last_look.py,
tests/contract/test_local_last_look.py).

Each path is an async context manager of the gate's options (``RobotGate(AGENT,
**options)``), pytest's monkeypatch and a :class:`Lag`: it yields the gate and a
function sending one page (its URL) and returning its status.  The loop stands still
at the page's connection's open for the aiohttp paths (made or taken from the pool),
as httpcore's pool is asked for a connection for httpx's, and, for crawlee's clients
(which tell nothing as their bytes go), at robotgate's last step before the request is
handed to the client (the loop alone can stand still there: no request of theirs
waits on its own before the hand-over).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from robotgate import RobotGate

AGENT = "LastLookBot/1.0 (+https://example.com/bot)"
ROOT = Path(__file__).resolve().parents[2]
CLOSED_PORT = "http://127.0.0.1:1/"  # nothing listens: refused at once

#: The gate's options (``RobotGate(AGENT, **options)``).
Options = dict[str, Any]


class Lag:
    """Holds the page ``late`` (its path) up once on its way, for ``seconds``: the whole
    loop stands still (``blocking``), or that request alone waits while the rest go on
    (a slow connect)."""

    def __init__(self, seconds: float, late: str, blocking: bool = True) -> None:
        self.seconds = seconds
        self.late = late
        self.blocking = blocking
        self.armed = False
        self.done = False

    def _due(self, target: str) -> bool:
        if self.armed and not self.done and target.startswith(self.late):
            self.done = True
            return True
        return False

    def __call__(self, target: str) -> None:
        """Where nothing can be awaited: the loop stands still."""
        assert self.blocking, "this place can only stand the whole loop still"
        if self._due(target):
            time.sleep(self.seconds)  # the whole loop stands still: nothing else moves

    async def on_the_way(self, target: str) -> None:
        if self._due(target):
            if self.blocking:
                time.sleep(self.seconds)
            else:
                await asyncio.sleep(self.seconds)  # this request alone


# -- the paths: each gets a page's URL and returns its status -------------------------------

Get = Callable[[str], Any]
Opened = AsyncIterator[tuple[RobotGate, Get]]


def gate_on(options: Options, **more: Any) -> RobotGate:
    return RobotGate(AGENT, **options, **more)


def at_connection_open(monkeypatch: pytest.MonkeyPatch, lag: Lag) -> None:
    """aiohttp: the loop stands still once the connection is open (made or taken from
    the pool), before the request is written on it."""
    connect = aiohttp.BaseConnector.connect

    async def slow(self: aiohttp.BaseConnector, req: aiohttp.ClientRequest, *args: Any,
                   **kwargs: Any) -> Any:
        conn = await connect(self, req, *args, **kwargs)
        await lag.on_the_way(req.url.raw_path)
        return conn

    monkeypatch.setattr(aiohttp.BaseConnector, "connect", slow)


@asynccontextmanager
async def fetch(options: Options, monkeypatch: pytest.MonkeyPatch, lag: Lag) -> Opened:
    """``gate.fetch`` on the gate's own session (its trace looked at last already)."""
    at_connection_open(monkeypatch, lag)
    async with gate_on(options) as gate:
        async def get(url: str) -> int:
            async with gate.fetch(url) as resp:
                return resp.status

        yield gate, get


@asynccontextmanager
async def fetch_on_your_session(options: Options, monkeypatch: pytest.MonkeyPatch,
                                lag: Lag) -> Opened:
    """``gate.fetch`` through ``RobotGate(session=...)``."""
    at_connection_open(monkeypatch, lag)
    async with aiohttp.ClientSession() as session, gate_on(options, session=session) as gate:
        async def get(url: str) -> int:
            async with gate.fetch(url) as resp:
                return resp.status

        yield gate, get


@asynccontextmanager
async def middleware(options: Options, monkeypatch: pytest.MonkeyPatch, lag: Lag) -> Opened:
    """``gate.middleware`` in your session."""
    at_connection_open(monkeypatch, lag)
    async with gate_on(options) as gate, \
            aiohttp.ClientSession(middlewares=(gate.middleware,)) as session:
        async def get(url: str) -> int:
            async with session.get(url) as resp:
                await resp.read()
                return resp.status

        yield gate, get


@asynccontextmanager
async def httpx_transport(options: Options, monkeypatch: pytest.MonkeyPatch,
                          lag: Lag) -> Opened:
    """``RobotGateTransport`` over httpx's own transport."""
    httpx = pytest.importorskip("httpx", reason="pip install 'robotgate[httpx]'")
    import httpcore

    from robotgate.integrations.httpx import RobotGateTransport

    handle = httpcore.AsyncConnectionPool.handle_async_request

    async def slow(self: httpcore.AsyncConnectionPool, request: httpcore.Request) -> Any:
        await lag.on_the_way(request.url.target.decode())  # as the pool is asked
        return await handle(self, request)

    monkeypatch.setattr(httpcore.AsyncConnectionPool, "handle_async_request", slow)
    async with gate_on(options) as gate, \
            httpx.AsyncClient(transport=RobotGateTransport(gate)) as client:
        async def get(url: str) -> int:
            return int((await client.get(url)).status_code)

        yield gate, get


@asynccontextmanager
async def crawlee(options: Options, monkeypatch: pytest.MonkeyPatch, lag: Lag) -> Opened:
    """``RobotGateHttpClient.send_request`` over crawlee's default client (impit)."""
    pytest.importorskip("crawlee", reason="pip install 'robotgate[crawlee]'")
    from urllib.parse import urlsplit

    from robotgate.integrations.crawlee import RobotGateHttpClient

    where = RobotGateHttpClient._where

    def slow(*args: Any) -> Any:
        found = where(*args)
        lag(urlsplit(found[0]).path)  # robotgate's last step before the client has it
        return found

    monkeypatch.setattr(RobotGateHttpClient, "_where", staticmethod(slow))
    async with gate_on(options) as gate, RobotGateHttpClient(gate) as client:
        # impit makes its client on its first request, on the loop, after the hand-over
        # (0.4 s here): made first, so the row holds up robotgate's own step alone.
        with suppress(Exception):
            await client.inner.send_request(CLOSED_PORT)

        async def get(url: str) -> int:
            return int((await client.send_request(url)).status_code)

        yield gate, get


@asynccontextmanager
async def browser(options: Options, monkeypatch: pytest.MonkeyPatch, lag: Lag) -> Opened:
    """Playwright's route (crawlee's PlaywrightCrawler and crawl4ai attach the same way):
    each page a navigation, sent on the attachment's own aiohttp session."""
    pytest.importorskip("playwright.async_api", reason="pip install 'robotgate[playwright]'")
    from robotgate.integrations.playwright import attach
    from tests.support.browser import chromium

    at_connection_open(monkeypatch, lag)
    async with chromium() as chrome, gate_on(options) as gate:
        context = await chrome.new_context(service_workers="block")
        try:
            await attach(gate, context)

            async def get(url: str) -> int:
                page = await context.new_page()
                try:
                    response = await page.goto(url)
                finally:
                    await page.close()
                assert response is not None
                return response.status

            yield gate, get
        finally:
            await context.close()


PATHS: dict[str, Callable[[Options, pytest.MonkeyPatch, Lag], Any]] = {
    "fetch": fetch, "fetch-on-your-session": fetch_on_your_session,
    "middleware": middleware, "httpx": httpx_transport, "crawlee": crawlee,
    "browser": browser,
}


async def scrapy_ran(config: dict[str, Any]) -> dict[str, Any]:
    """Scrapy's row: tests/contract/scrapy_last_look_runner.py run in a subprocess (a
    fresh reactor) with ``config``; what it printed, the pages' statuses first."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.contract.scrapy_last_look_runner", json.dumps(config),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    lines = out.decode().strip().splitlines()
    assert lines, err.decode()[-3000:]
    ran: dict[str, Any] = json.loads(lines[-1])
    assert ran["lagged"], "the loop never stood still on the late page's way"
    ran["stderr"] = err.decode()[-3000:]
    return ran
