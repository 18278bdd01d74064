"""The gate's option objects: ``pacing=Pacing(...)``, ``network=Network(...)`` and
``policy=FetchPolicy(...)`` are applied; the keywords they replaced are unknown keywords."""

from __future__ import annotations

from typing import Any

import pytest

from robotgate import FetchPolicy, Network, Pacing, RobotGate
from robotgate.policy.fetch_flow import RobotsResponse
from tests.support.transports import FakeTransport

AGENT = "OptionsBot/1.0"
SLOW = b"User-agent: *\nCrawl-delay: 120\nDisallow: /x\n"


def robots(body: bytes) -> FakeTransport:
    """Every origin answers ``body`` for its robots.txt."""
    return FakeTransport(lambda request: RobotsResponse(200, {}, body))


async def test_pacing_honour_keeps_a_long_crawl_delay_that_skip_refuses() -> None:
    async with RobotGate(AGENT, network=Network(robots_transport=robots(SLOW))) as gate:
        skipped = await gate.decide("http://slow.example/page")
    assert not skipped.allowed and "exceeds max_crawl_delay" in skipped.reason
    async with RobotGate(AGENT, pacing=Pacing(on_long_delay="honour"),
                         network=Network(robots_transport=robots(SLOW))) as gate:
        assert (await gate.decide("http://slow.example/page")).allowed
        assert gate.server_wait("http://slow.example/page").interval == 120.0


async def test_plain_max_crawl_delay_applies_beside_a_pacing_object() -> None:
    async with RobotGate(AGENT, max_crawl_delay=200, pacing=Pacing(max_backoff=5),
                         network=Network(robots_transport=robots(SLOW))) as gate:
        assert (await gate.decide("http://slow.example/page")).allowed


async def test_pacing_without_crawl_delay_ignores_it() -> None:
    async with RobotGate(AGENT, delay=0.5, pacing=Pacing(respect_crawl_delay=False),
                         network=Network(robots_transport=robots(SLOW))) as gate:
        assert (await gate.decide("http://slow.example/page")).allowed
        assert gate.server_wait("http://slow.example/page").interval == 0.5


async def test_network_max_origins_bounds_the_robots_tables() -> None:
    urls = [f"http://site{i}.example/page" for i in range(4)]

    async def fetches(network: Network) -> int:
        transport = robots(b"User-agent: *\nDisallow:\n")
        network = Network(robots_transport=transport, max_origins=network.max_origins)
        async with RobotGate(AGENT, network=network) as gate:
            for url in urls + urls:
                await gate.allowed(url)
        return len(transport.requests)

    assert await fetches(Network()) == 4  # each origin once, then from the cache
    assert await fetches(Network(max_origins=2)) > 4  # evicted origins are fetched again


async def test_network_private_redirects_and_transport() -> None:
    assert RobotGate(AGENT).refuse_private
    assert not RobotGate(AGENT, network=Network(allow_private_redirects=True)).refuse_private
    transport = robots(SLOW)
    async with RobotGate(AGENT, network=Network(robots_transport=transport)) as gate:
        await gate.allowed("http://a.example/")
    assert [request.url for request in transport.requests] == ["http://a.example/robots.txt"]


@pytest.mark.parametrize("keyword", [
    "respect_crawl_delay", "on_long_delay", "max_backoff", "pacing_margin", "recheck_visits",
    "max_origins", "allow_private_redirects", "robots_transport", "lwp_conventions",
])
def test_a_removed_keyword_is_an_unknown_keyword(keyword: str) -> None:
    options: dict[str, Any] = {keyword: None}
    with pytest.raises(TypeError, match=keyword):
        RobotGate(AGENT, **options)


def test_bad_options_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="on_long_delay"):
        Pacing(on_long_delay="always")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_backoff"):
        Pacing(max_backoff=-1)
    with pytest.raises(ValueError, match="max_origins"):
        Network(max_origins=0)
    with pytest.raises(ValueError, match="recheck_visits"):
        FetchPolicy(recheck_visits=0)
    with pytest.raises(TypeError, match=r"pacing must be a robotgate\.Pacing"):
        RobotGate(AGENT, pacing={"on_long_delay": "honour"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"network must be a robotgate\.Network"):
        RobotGate(AGENT, network={"max_origins": 2})  # type: ignore[arg-type]


def test_the_plain_keywords_are_no_fields_of_the_objects() -> None:
    # One place per setting: nothing to reconcile between a keyword and a field.
    for name in ("delay", "max_crawl_delay", "latency_factor"):
        fields: dict[str, Any] = {name: 1.0}
        with pytest.raises(TypeError, match=name):
            Pacing(**fields)


def test_the_facade_keeps_its_collaborators_private() -> None:
    gate = RobotGate(AGENT)
    for name in ("client", "scheduler", "cache", "admission", "fetcher", "keys", "pacing",
                 "tdm_cache", "events"):
        assert not hasattr(gate, name), name
