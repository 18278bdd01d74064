"""A fleet slot's last look, on every path that sends a page (promise 3 across a fleet).

In a fleet each page request leaves within the slot Redis granted it: no later than
``asked + wait + slack`` (:class:`~robotgate.politeness.fleet_slots.Slot`), so that it
is never closer than the delay to another worker's request.  ``leaving()`` looks at the
slot before the client is called; what happens after (a connection opened or waited
for, a busy loop) must be looked at again as close to the first bytes as the client
lets robotgate: past the slot, the request is not sent (``LateSlot``), the slot is given
up and the next one taken.

Each row sends two pages through one path of a gate on Redis and stands the whole loop
still (``time.sleep``) between ``leaving()`` and the second page's first bytes, past its
slot's deadline: at its connection's open for the aiohttp paths, as httpcore's pool is
asked for a connection for httpx's, and, for crawlee's clients (which tell nothing as
their bytes go), at robotgate's last step before the request is handed to the client.
The server's kernel stamps each arrival: none may be later than its slot's deadline,
the late slot was given up (``FleetSlots.late``) and the page was answered all the same.

Scrapy's row runs Scrapy in a subprocess (tests/contract/scrapy_last_look_runner.py),
held up as Twisted's pool gives the connection.
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
from robotgate.store.redis import RedisStore
from testbed.server import BenchServer, HostPlan, HostStats

pytestmark = pytest.mark.slow

AGENT = "LastLookBot/1.0 (+https://example.com/bot)"
ROOT = Path(__file__).resolve().parents[2]
DELAY = 0.2
# How long the loop stands still before the second page's first bytes: well past the
# slack a slot starts with (0.01 s), so the slot it held is surely past.
LAG = 0.3
LATE_PAGE = "/page/2"
CLOSED_PORT = "http://127.0.0.1:1/"  # nothing listens: refused at once

#: Each slot Redis granted, on the loop's clock: (asked, wait, slack).
Grants = list[tuple[float, float, float]]


def recording(store: RedisStore) -> Grants:
    """Wrap ``store.reserve``: every slot it grants is recorded."""
    grants: Grants = []
    reserve = store.reserve

    async def recorded(key: str, interval: float, slack: float = 0.0) -> float | None:
        asked = asyncio.get_running_loop().time()
        wait = await reserve(key, interval, slack)
        grants.append((asked, wait or 0.0, slack))
        return wait

    store.reserve = recorded  # type: ignore[method-assign]
    return grants


class Lag:
    """Stands the loop still once, for ``LAG``, when the late page is on its way."""

    def __init__(self) -> None:
        self.armed = False
        self.done = False

    def __call__(self, target: str) -> None:
        if self.armed and not self.done and target.startswith(LATE_PAGE):
            self.done = True
            time.sleep(LAG)  # the whole loop stands still: nothing else moves


# -- the paths: each gets a page's URL and returns its status -------------------------------

Get = Callable[[str], Any]
Opened = AsyncIterator[tuple[RobotGate, Get]]


def gate_on(store: RedisStore, **options: Any) -> RobotGate:
    return RobotGate(AGENT, delay=DELAY, store=store, **options)


def at_connection_open(monkeypatch: pytest.MonkeyPatch, lag: Lag) -> None:
    """aiohttp: the loop stands still once the connection is open (made or taken from
    the pool), before the request is written on it."""
    connect = aiohttp.BaseConnector.connect

    async def slow(self: aiohttp.BaseConnector, req: aiohttp.ClientRequest, *args: Any,
                   **kwargs: Any) -> Any:
        conn = await connect(self, req, *args, **kwargs)
        lag(req.url.raw_path)
        return conn

    monkeypatch.setattr(aiohttp.BaseConnector, "connect", slow)


@asynccontextmanager
async def fetch(store: RedisStore, monkeypatch: pytest.MonkeyPatch, lag: Lag) -> Opened:
    """``gate.fetch`` on the gate's own session (its trace looked at last already)."""
    at_connection_open(monkeypatch, lag)
    async with gate_on(store) as gate:
        async def get(url: str) -> int:
            async with gate.fetch(url) as resp:
                return resp.status

        yield gate, get


@asynccontextmanager
async def fetch_on_your_session(store: RedisStore, monkeypatch: pytest.MonkeyPatch,
                                lag: Lag) -> Opened:
    """``gate.fetch`` through ``RobotGate(session=...)``."""
    at_connection_open(monkeypatch, lag)
    async with aiohttp.ClientSession() as session, gate_on(store, session=session) as gate:
        async def get(url: str) -> int:
            async with gate.fetch(url) as resp:
                return resp.status

        yield gate, get


@asynccontextmanager
async def middleware(store: RedisStore, monkeypatch: pytest.MonkeyPatch, lag: Lag) -> Opened:
    """``gate.middleware`` in your session."""
    at_connection_open(monkeypatch, lag)
    async with gate_on(store) as gate, \
            aiohttp.ClientSession(middlewares=(gate.middleware,)) as session:
        async def get(url: str) -> int:
            async with session.get(url) as resp:
                await resp.read()
                return resp.status

        yield gate, get


@asynccontextmanager
async def httpx_transport(store: RedisStore, monkeypatch: pytest.MonkeyPatch,
                          lag: Lag) -> Opened:
    """``RobotGateTransport`` over httpx's own transport."""
    httpx = pytest.importorskip("httpx", reason="pip install 'robotgate[httpx]'")
    import httpcore

    from robotgate.integrations.httpx import RobotGateTransport

    handle = httpcore.AsyncConnectionPool.handle_async_request

    async def slow(self: httpcore.AsyncConnectionPool, request: httpcore.Request) -> Any:
        lag(request.url.target.decode())  # as the pool is asked for a connection
        return await handle(self, request)

    monkeypatch.setattr(httpcore.AsyncConnectionPool, "handle_async_request", slow)
    async with gate_on(store) as gate, \
            httpx.AsyncClient(transport=RobotGateTransport(gate)) as client:
        async def get(url: str) -> int:
            return int((await client.get(url)).status_code)

        yield gate, get


@asynccontextmanager
async def crawlee(store: RedisStore, monkeypatch: pytest.MonkeyPatch, lag: Lag) -> Opened:
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
    async with gate_on(store) as gate, RobotGateHttpClient(gate) as client:
        # impit makes its client on its first request, on the loop, after the hand-over
        # (0.4 s here): made first, so the row holds up robotgate's own step alone.
        with suppress(Exception):
            await client.inner.send_request(CLOSED_PORT)

        async def get(url: str) -> int:
            return int((await client.send_request(url)).status_code)

        yield gate, get


@asynccontextmanager
async def browser(store: RedisStore, monkeypatch: pytest.MonkeyPatch, lag: Lag) -> Opened:
    """Playwright's route (crawlee's PlaywrightCrawler and crawl4ai attach the same way):
    each page a navigation, sent on the attachment's own aiohttp session."""
    pytest.importorskip("playwright.async_api", reason="pip install 'robotgate[playwright]'")
    from robotgate.integrations.playwright import attach
    from tests.support.browser import chromium

    at_connection_open(monkeypatch, lag)
    async with chromium() as chrome, gate_on(store) as gate:
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


PATHS: dict[str, Callable[[RedisStore, pytest.MonkeyPatch, Lag], Any]] = {
    "fetch": fetch, "fetch-on-your-session": fetch_on_your_session,
    "middleware": middleware, "httpx": httpx_transport, "crawlee": crawlee,
    "browser": browser,
}


@pytest.mark.parametrize("path", list(PATHS))
async def test_a_request_held_up_past_its_slot_is_not_sent_but_in_the_next(
        path: str, redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = RedisStore(redis_url, prefix=prefix)
    grants = recording(store)
    lag = Lag()
    async with BenchServer([HostPlan("allow")]) as srv:
        async with PATHS[path](store, monkeypatch, lag) as (gate, get):
            first = await get(srv.url(0, "/page/1"))  # robots.txt's slot, then its own
            lag.armed = True
            second = await get(srv.url(0, LATE_PAGE))
            fleet = gate._servers.fleet
            assert fleet is not None
            late = fleet.late
        host = srv.host_stats(0)
    assert lag.done, "the loop never stood still on the late page's way"
    assert (first, second) == (200, 200)
    within_slots(path, host, grants, late)


async def test_scrapy_a_request_held_up_past_its_slot_is_not_sent_but_in_the_next(
        redis_url: str, prefix: str) -> None:
    """Scrapy's row, in a subprocess (a fresh reactor): held up as Twisted's pool gives
    the connection, before anything is written on it."""
    async with BenchServer([HostPlan("allow")]) as srv:
        config = json.dumps({
            "urls": [srv.url(0, "/page/1"), srv.url(0, LATE_PAGE)], "lag": LAG,
            "settings": {"ROBOTGATE_STORE": redis_url, "ROBOTGATE_STORE_PREFIX": prefix,
                         "ROBOTGATE_DELAY": DELAY}})
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.contract.scrapy_last_look_runner", config, cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        host = srv.host_stats(0)
    assert proc.returncode == 0, err.decode()[-3000:]
    lines = out.decode().strip().splitlines()
    assert lines, err.decode()[-3000:]
    ran = json.loads(lines[-1])
    assert ran["lagged"], "the loop never stood still on the late page's way"
    assert ran["statuses"] == [200, 200], (ran, err.decode()[-3000:])
    within_slots("scrapy", host, [tuple(grant) for grant in ran["grants"]], ran["late"])


def within_slots(path: str, host: HostStats, grants: Grants, late: int) -> None:
    """Both pages reached the server, each within the slot it left in, and the slot the
    standing loop missed was given up for a new one.  (robots.txt's request takes a slot
    too, the first: its own last look is robots.txt's transport's, tested with it.)"""
    assert host.page_requests == 2 and host.robots_requests == 1, host
    # When each page reached the server (the kernel's stamp, on the loop's clock),
    # against the slot it left in: the last granted before it arrived (one request at a
    # time: the next is asked for only after this one's answer).
    for at in host.page_times:
        asked, wait, slack = max(grant for grant in grants if grant[0] <= at)
        assert at <= asked + wait + slack, (path, at - (asked + wait + slack), grants)
    # A loaded machine may make the loop late for more: one slot a request, one more a miss.
    assert late >= 1 and len(grants) == 3 + late, (late, grants)
