"""A robots.txt request's permit, looked at last on every robots.txt transport.

A robots.txt request is a request to its server, paced as a page is
(:mod:`robotgate.politeness.robots_pacing`): it leaves with a permit (a fleet slot, or
its server's interval from the last request's bytes), which its transport looks at as
its headers go, where a page's is.  A permit that no longer holds sends nothing
(:class:`~robotgate.politeness.permits.LateSlot`: the fetch waits and sends it again);
one that holds is looked at once and the request goes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import aiohttp
import pytest

from robotgate import RobotGate
from robotgate.gate.aiohttp_robots import AiohttpRobotsTransport
from robotgate.policy.fetch_flow import RobotsRequest, RobotsResponse
from robotgate.politeness.permits import LateSlot, Permit, TooSoon
from testbed.server import BenchServer, HostPlan
from tests.contract.held_up_paths import ROOT

AGENT = "RobotsLookBot/1.0 (+https://example.com/bot)"

Send = Callable[[RobotsRequest], Awaitable[RobotsResponse]]


class Looked(Permit):
    """A permit that holds (``holds``) or not, counting its looks."""

    def __init__(self, holds: bool) -> None:
        self.holds = holds
        self.looks = 0

    def check(self, now: float) -> None:
        self.looks += 1
        if not self.holds:
            raise TooSoon


@asynccontextmanager
async def gates_session() -> AsyncIterator[Send]:
    async with RobotGate(AGENT, delay=0) as gate:
        yield AiohttpRobotsTransport(gate._client).send


@asynccontextmanager
async def your_session() -> AsyncIterator[Send]:
    async with aiohttp.ClientSession() as yours, RobotGate(AGENT, delay=0,
                                                           session=yours) as gate:
        yield AiohttpRobotsTransport(gate._client).send


@asynccontextmanager
async def httpx_transport() -> AsyncIterator[Send]:
    httpx = pytest.importorskip("httpx", reason="pip install 'robotgate[httpx]'")
    from robotgate.integrations.httpx import HttpxRobotsTransport

    robots = HttpxRobotsTransport(httpx.AsyncHTTPTransport(), {"User-Agent": AGENT})
    try:
        yield robots.send
    finally:
        await robots.inner.aclose()


TRANSPORTS = {"gate's session": gates_session, "your session": your_session,
              "httpx": httpx_transport}


@pytest.mark.parametrize("transport", list(TRANSPORTS))
async def test_a_robots_request_goes_only_while_its_permit_holds(transport: str) -> None:
    refused, held = Looked(holds=False), Looked(holds=True)
    async with BenchServer([HostPlan("allow")]) as srv, TRANSPORTS[transport]() as send:
        url = srv.url(0, "/robots.txt")
        with pytest.raises(LateSlot):
            await send(RobotsRequest(url, headers={"User-Agent": AGENT}, permit=refused))
        unsent = srv.host_stats(0).robots_requests
        answer = await send(RobotsRequest(url, headers={"User-Agent": AGENT}, permit=held))
        host = srv.host_stats(0)
    assert refused.looks == 1 and unsent == 0
    assert answer.status == 200 and held.looks == 1 and host.robots_requests == 1


async def test_a_robots_request_through_scrapys_engine_goes_only_while_its_permit_holds(
        ) -> None:
    # Scrapy's robots.txt requests are looked at where its pages are: as its handler is
    # handed them, and as Twisted writes them (twice for one that goes).
    pytest.importorskip("scrapy", reason="pip install 'robotgate[scrapy]'")
    async with BenchServer([HostPlan("allow"), HostPlan("allow")]) as srv:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.contract.scrapy_robots_look_runner",
            srv.url(0, "/robots.txt"), srv.url(1, "/robots.txt"), cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0 and out.strip(), err.decode()[-3000:]
        ran = json.loads(out.decode().strip().splitlines()[-1])
        refused_host, held_host = srv.host_stats(0), srv.host_stats(1)
    assert ran["refused"] == "TooSoon" and ran["refused_looks"] == 1, ran
    assert refused_host.robots_requests == 0
    assert ran["status"] == 200 and ran["held_looks"] == 2 and held_host.robots_requests == 1
