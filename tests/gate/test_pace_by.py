"""Issue 14 on loopback: one budget per server (host, domain or IP), back-off that settles.

Intervals are measured at the server, which notes when each request arrives on
any of its listeners.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from robotgate import RobotGate
from tests.support.arrivals import Arrivals, self_signed

pytestmark = pytest.mark.slow

AGENT = "PaceBot/1.0 (+https://example.com/bot)"
DELAY = 0.3


@pytest.fixture
async def server() -> AsyncIterator[Arrivals]:
    arrivals = Arrivals()
    yield arrivals
    await arrivals.close()


async def _fetch_all(gate: RobotGate, urls: list[str]) -> list[int]:
    statuses = []
    for resp in await asyncio.gather(*(gate.fetch(u) for u in urls)):
        statuses.append(resp.status)
    return statuses


async def test_two_ports_of_one_host_share_one_budget(server: Arrivals) -> None:
    a, b = await server.listen(), await server.listen()
    urls = [f"http://127.0.0.1:{port}/p{i}" for i in range(4) for port in (a, b)]
    async with RobotGate(AGENT, delay=DELAY) as gate:
        assert gate.pace_key(urls[0]) == gate.pace_key(urls[1]) == "host:127.0.0.1"
        await _fetch_all(gate, urls)
    assert len(server.times) == 10  # 2 robots.txt + 8 pages
    assert min(server.gaps()) >= DELAY


async def test_pace_by_origin_keeps_ports_apart(server: Arrivals) -> None:
    a, b = await server.listen(), await server.listen()
    urls = [f"http://127.0.0.1:{port}/p{i}" for i in range(3) for port in (a, b)]
    async with RobotGate(AGENT, delay=DELAY, pace_by="origin") as gate:
        assert gate.pace_key(urls[0]) != gate.pace_key(urls[1])
        await _fetch_all(gate, urls)
    # Two budgets: the two origins' requests interleave closer than the delay.
    assert min(server.gaps()) < DELAY / 2


async def test_http_and_https_of_one_host_share_one_budget(
    server: Arrivals, tmp_path: Path
) -> None:
    context, cert = self_signed(tmp_path)
    plain, secure = await server.listen(), await server.listen(tls=context)
    client_ssl = ssl.create_default_context(cafile=str(cert))
    urls = [u for i in range(3) for u in (f"http://127.0.0.1:{plain}/p{i}",
                                          f"https://127.0.0.1:{secure}/p{i}")]
    connector = aiohttp.TCPConnector(ssl=client_ssl)
    async with aiohttp.ClientSession(connector=connector) as session, RobotGate(
        AGENT, delay=DELAY, session=session
    ) as gate:
        statuses = await _fetch_all(gate, urls)
    assert statuses == [200] * 6
    assert server.robots_requests == 2  # robots.txt stays per origin
    assert min(server.gaps()) >= DELAY


class _MapResolver(aiohttp.abc.AbstractResolver):
    """Every name resolves to 127.0.0.1, as a test's DNS."""

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[Any]:
        return [{"hostname": host, "host": "127.0.0.1", "port": port, "family": socket.AF_INET,
                 "proto": 0, "flags": socket.AI_NUMERICHOST}]

    async def close(self) -> None:
        pass


async def test_subdomains_share_one_budget_with_pace_by_domain(server: Arrivals) -> None:
    port = await server.listen()
    names = ("a.example.com", "b.example.com", "c.example.com")
    urls = [f"http://{name}:{port}/p{i}" for i in range(2) for name in names]
    connector = aiohttp.TCPConnector(resolver=_MapResolver())
    async with aiohttp.ClientSession(connector=connector) as session:
        async with RobotGate(AGENT, delay=DELAY, pace_by="domain", session=session) as gate:
            assert {gate.pace_key(u) for u in urls} == {"domain:example.com"}
            await _fetch_all(gate, urls)
        async with RobotGate(AGENT, delay=DELAY, pace_by="host", session=session) as gate:
            assert len({gate.pace_key(u) for u in urls}) == 3
    assert server.robots_requests == 3
    assert len(server.times) == 9 and min(server.gaps()) >= DELAY


async def test_localhost_and_its_address_share_one_budget_with_pace_by_ip(
    server: Arrivals,
) -> None:
    port = await server.listen()
    urls = [u for i in range(3) for u in (f"http://127.0.0.1:{port}/p{i}",
                                          f"http://localhost:{port}/p{i}")]
    async with RobotGate(AGENT, delay=DELAY, pace_by="ip") as gate:
        await _fetch_all(gate, urls)
        assert gate.host_state(urls[0]) is gate.host_state(urls[1])
        state = gate.host_state(urls[0])
        assert state is not None and state.origin == "ip:127.0.0.1"
    assert server.robots_requests == 2
    assert min(server.gaps()) >= DELAY


@pytest.mark.soak  # 50 requests at 5 a second; CI runs it every time
async def test_back_off_settles_against_a_rate_limited_server(server: Arrivals) -> None:
    # 5 requests/s, 429 without Retry-After beyond that: at most 20% 429s over 50.
    server.rate_limit = 0.2
    port = await server.listen()
    async with RobotGate(AGENT, delay=0) as gate:
        statuses = await asyncio.wait_for(
            _fetch_all(gate, [f"http://127.0.0.1:{port}/p{i}" for i in range(50)]), 25)
        assert gate.stats["backoffs"] == statuses.count(429)
    assert len(statuses) == 50
    assert statuses.count(429) <= 10, statuses
