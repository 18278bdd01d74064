"""Per-host settings on loopback: a server's own delay and cap, and robots.txt still wins."""

from __future__ import annotations

import asyncio

import pytest

from robotgate import HostSettings, RobotGate
from robotgate.events import Event, TurnWaited
from tests.contract.test_request_paths import AGENT, PRIVATE, PUBLIC, Site, _gaps


async def _sites(*sites: Site) -> list[Site]:
    return [await site.start() for site in sites]


@pytest.mark.slow
async def test_each_host_keeps_its_own_delay() -> None:
    slow, fast = await _sites(Site(PUBLIC, robots=""), Site(PRIVATE, robots=""))
    try:
        hosts = {PUBLIC: HostSettings(delay=0.4), PRIVATE: HostSettings(delay=0.0)}
        async with RobotGate(AGENT, delay=0.1, hosts=hosts) as gate:
            await asyncio.gather(*(gate.fetch(slow.url(f"/p{i}")) for i in range(3)),
                                 *(gate.fetch(fast.url(f"/p{i}")) for i in range(3)))
            assert gate.server_wait(slow.url("/")).interval == 0.4
            assert gate.server_wait(fast.url("/")).interval == 0.0  # faster than the gate's
            said = gate.describe()
        assert "host setting delay 0.4s" in said and "host setting delay 0s" in said
        assert min(_gaps(slow.times())) >= 0.39
        assert len(fast.paths()) == 3
    finally:
        await slow.close()
        await fast.close()


@pytest.mark.slow
async def test_a_hosts_own_cap_lets_that_many_in_flight() -> None:
    [site] = await _sites(Site(PUBLIC, robots=""))
    try:
        hosts = {PUBLIC: HostSettings(delay=0.0, max_per_host=3)}
        async with RobotGate(AGENT, delay=0.0, max_per_host=1, hosts=hosts) as gate:
            await asyncio.gather(*(gate.fetch(site.url(f"/p{i}?hold=0.4")) for i in range(6)))
        assert site.peak == 3  # not the gate's 1, and never more than its own 3
    finally:
        await site.close()


@pytest.mark.slow
async def test_a_setting_faster_than_crawl_delay_is_overruled_and_says_so() -> None:
    [site] = await _sites(Site(PUBLIC, robots="User-agent: *\nCrawl-delay: 0.4\n"))
    heard: list[Event] = []
    try:
        async with RobotGate(AGENT, delay=0.0, hosts={PUBLIC: HostSettings(delay=0.05)},
                             on_event=heard.append) as gate:
            for i in range(3):
                await gate.fetch(site.url(f"/p{i}"))
            said = gate.describe()
            assert gate.server_wait(site.url("/")).interval == 0.4
        assert "host setting delay 0.05s (overruled: robots.txt asks 0.4s)" in said
        assert min(_gaps(site.times())) >= 0.39
        waits = [e.reason for e in heard if isinstance(e, TurnWaited)]
        assert waits and set(waits) == {"crawl-delay"}, waits
    finally:
        await site.close()


@pytest.mark.slow
async def test_a_host_settings_delay_is_said_to_be_the_delay_on_every_path() -> None:
    # One owner names the reason: gate.fetch's turn, gate.server_wait and gate.crawl agree.
    [site] = await _sites(Site(PUBLIC, robots=""))
    heard: list[Event] = []
    crawled: list[str] = []

    async def handler(url: str, resp: object) -> None:
        return None

    try:
        async with RobotGate(AGENT, delay=0.05, hosts={PUBLIC: HostSettings(delay=0.3)},
                             on_event=heard.append) as gate:
            await asyncio.gather(*(gate.fetch(site.url(f"/p{i}")) for i in range(2)))
            assert gate.server_wait(site.url("/")).reason == "delay"
            summary = await gate.crawl([site.url(f"/c{i}") for i in range(3)], handler,
                                       on_result=lambda r: crawled.append(r.wait_reason))
        assert summary.pages == 3
        waits = {e.reason for e in heard if isinstance(e, TurnWaited)}
        assert waits == {"delay"}, waits
        assert set(crawled) - {""} == {"delay"}, crawled
    finally:
        await site.close()


def test_the_cli_and_scrapy_settings_give_host_settings() -> None:
    import pytest

    from robotgate.cli.args import UsageError, build_parser
    from robotgate.integrations.scrapy.settings import read_settings

    args = build_parser().parse_args([
        "fetch", "--agent", "Bot/1", "--host-delay", "own.example=0.1",
        "--host-delay", "*.example.org=5", "https://own.example/"])
    assert args.host_delay == [("own.example", 0.1), ("*.example.org", 5.0)]
    for bad in ("own.example", "=1", "own.example=-1", "own.example=soon"):
        with pytest.raises(UsageError, match="host-delay"):
            build_parser().parse_args(["fetch", "--agent", "Bot/1", "--host-delay", bad, "x"])
    hosts = {"own.example": {"delay": 0.1, "max_per_host": 4}, "*.example.org": {"delay": 5}}
    for given in (hosts, '{"own.example": {"delay": 0.1, "max_per_host": 4}, '
                         '"*.example.org": {"delay": 5}}'):
        read = read_settings({"USER_AGENT": "Bot/1", "ROBOTGATE_HOSTS": given})
        assert read.options["hosts"] == {"own.example": HostSettings(0.1, 4),
                                         "*.example.org": HostSettings(5)}
    for bad_hosts in ({"own.example": {"speed": 1}}, {"own.example": {"delay": -1}}, "[1]"):
        with pytest.raises(ValueError, match="ROBOTGATE_HOSTS"):
            read_settings({"USER_AGENT": "Bot/1", "ROBOTGATE_HOSTS": bad_hosts})
