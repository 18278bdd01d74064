"""The gate's option objects: ``pacing=Pacing(...)``, ``network=Network(...)`` and
``policy=FetchPolicy(...)`` are applied; the keywords they replaced are unknown keywords,
and ``delay=``, ``max_crawl_delay=`` and ``latency_factor=`` are shorthands for Pacing's."""

from __future__ import annotations

import time
from typing import Any

import pytest

from robotgate import FetchPolicy, Network, Pacing, RobotGate
from robotgate.policy.fetch_flow import RobotsResponse
from robotgate.policy.provenance import INPUT
from robotgate.politeness.request_turn import RequestTurn, answer_of, sent_in_turn
from tests.support.request_path import Calls
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


async def _answered(gate: RobotGate, url: str) -> None:
    """One request to ``url`` through its turn, answered 200 at once (nothing sent)."""
    async def send(turn: RequestTurn) -> int:
        return 200

    await sent_in_turn(gate.request_turn(url, INPUT), Calls(send, answer_of))


@pytest.mark.parametrize("options", [
    {"pacing": Pacing(delay=0.3)},
    {"delay": 0.3},  # the shorthand
    {"delay": 0.3, "pacing": Pacing(max_backoff=5)},
    {"delay": 0.3, "pacing": Pacing(delay=0.3)},  # the same value twice: no conflict
], ids=["pacing", "shorthand", "shorthand-beside-pacing", "both-agree"])
async def test_the_gate_paces_each_server_at_the_pacings_delay(options: dict[str, Any]) -> None:
    url = "http://paced.example/page"
    async with RobotGate(AGENT, network=Network(robots_transport=robots(b"")),
                         **options) as gate:
        assert gate.pacing.delay == gate.delay == 0.3
        before = time.monotonic()
        await _answered(gate, url)
        wait = gate.server_wait(url)
        spent = time.monotonic() - before
        # The next request waits out the delay from the answer, less no more than the time
        # since (however long that took under load).
        assert wait.interval == 0.3
        assert 0.3 - spent <= wait.wait <= 0.3 and wait.reason == "delay", (wait, spent)
        # The turn that follows does not go at once.
        turn = gate.request_turn(url, INPUT)
        pending = turn.begin()
        assert pending is not None
        turn.abandon(pending)


def test_the_shorthands_are_applied_to_the_pacing() -> None:
    assert RobotGate(AGENT).pacing == Pacing()
    gate = RobotGate(AGENT, delay=2, max_crawl_delay=200, latency_factor=5,
                     pacing=Pacing(on_long_delay="honour", margin=0.1))
    assert gate.pacing == Pacing(delay=2.0, max_crawl_delay=200.0, latency_factor=5.0,
                                 on_long_delay="honour", margin=0.1)
    assert RobotGate(AGENT, pacing=Pacing(delay=3)).delay == 3.0


@pytest.mark.parametrize("name", ["delay", "max_crawl_delay", "latency_factor"])
def test_a_shorthand_that_contradicts_the_pacing_is_refused_by_name(name: str) -> None:
    pacing = Pacing(**{name: 7.0})
    with pytest.raises(ValueError, match=rf"^{name}=2\.0 and pacing=Pacing\({name}=7\.0\) "
                                         rf"disagree"):
        RobotGate(AGENT, pacing=pacing, **{name: 2.0})


def test_a_bad_shorthand_is_refused_as_the_pacing_field() -> None:
    with pytest.raises(ValueError, match="Pacing delay must be"):
        RobotGate(AGENT, delay=-1)
    with pytest.raises(ValueError, match="Pacing max_crawl_delay must be"):
        RobotGate(AGENT, max_crawl_delay=float("nan"))


def test_the_facade_keeps_its_collaborators_private() -> None:
    gate = RobotGate(AGENT)
    for name in ("client", "scheduler", "cache", "admission", "fetcher", "keys",
                 "tdm_cache", "events"):
        assert not hasattr(gate, name), name
    assert isinstance(gate.pacing, Pacing)  # the settings are public, frozen
