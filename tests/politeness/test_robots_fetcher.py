"""RobotsFetcher (politeness/robots_fetcher.py) over fake transports: no sockets.

The fetcher drives the pure flow and turns every failure of the transport
(timeouts, network errors, bugs) into an "unreachable" entry; reading at most
``max_bytes`` is the adapter's job, so the fakes here honour it as asked.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import pytest

from robotgate import FetchPolicy, Network, RobotGate
from robotgate.policy.fetch_flow import RobotsRequest, RobotsResponse
from robotgate.politeness.robots_fetcher import RobotsFetcher
from robotgate.records import Outcome, RobotsEntry
from tests.support.transports import FakeTransport

AGENT = "FetcherBot/1.0"
SITE = "http://site.example"
ROBOTS = SITE + "/robots.txt"
RULES = b"User-agent: *\nDisallow: /x\n"

def ok(body: bytes = RULES, **headers: str) -> RobotsResponse:
    return RobotsResponse(200, headers, body)


def good_copy() -> RobotsEntry:
    import time

    now = time.time()
    return RobotsEntry(SITE, Outcome.OK, now - 100, now - 1, status=200, body=RULES,
                       etag='"v1"', good_at=now - 100)


async def test_2xx_entry() -> None:
    transport = FakeTransport({ROBOTS: ok(RULES, ETag='"v1"')})
    fetcher = RobotsFetcher(transport, FetchPolicy())
    entry = await fetcher.fetch(SITE, None)
    assert entry.outcome == Outcome.OK and entry.body == RULES and entry.etag == '"v1"'
    assert fetcher.requests == 1 and len(transport.requests) == 1


async def test_redirects_are_one_fetch_of_several_requests() -> None:
    other = "http://cdn.example/robots.txt"
    transport = FakeTransport({ROBOTS: RobotsResponse(301, {"Location": other}), other: ok()})
    fetcher = RobotsFetcher(transport, FetchPolicy())
    entry = await fetcher.fetch(SITE, None)
    assert entry.final_url == other and fetcher.requests == 1
    assert [r.url for r in transport.requests] == [ROBOTS, other]
    assert transport.requests[1].previous == ROBOTS


async def test_the_transport_is_asked_for_the_cap() -> None:
    body = b"User-agent: *\nDisallow: /\n" + b"#" * 5000
    transport = FakeTransport({ROBOTS: ok(body)})
    entry = await RobotsFetcher(transport, FetchPolicy(max_bytes=1000)).fetch(SITE, None)
    assert transport.requests[0].max_bytes == 1000
    assert entry.body is not None and len(entry.body) == 1000


async def test_previous_copy_makes_a_conditional_request() -> None:
    transport = FakeTransport({ROBOTS: RobotsResponse(304, {})})
    entry = await RobotsFetcher(transport, FetchPolicy()).fetch(SITE, good_copy())
    assert transport.requests[0].headers["If-None-Match"] == '"v1"'
    assert entry.outcome == Outcome.OK and entry.body == RULES and "304" in entry.detail


@pytest.mark.parametrize("exc", [
    asyncio.TimeoutError(),
    aiohttp.ClientConnectionError("refused"),
    aiohttp.ServerDisconnectedError(),
    OSError("reset"),
    ConnectionResetError(),
    ValueError("a bug in the transport"),
    KeyError("oops"),
])
async def test_transport_errors_are_unreachable(exc: Exception) -> None:
    fetcher = RobotsFetcher(FakeTransport(raises=exc), FetchPolicy())
    entry = await fetcher.fetch(SITE, None)
    assert entry.outcome == Outcome.UNREACHABLE and entry.failures == 1
    assert entry.detail.startswith("robots.txt")
    assert entry.fresh_until > entry.fetched_at  # retried later, not at once


async def test_a_hanging_server_times_out() -> None:
    fetcher = RobotsFetcher(FakeTransport(hang=True), FetchPolicy(timeout=0.05))
    entry = await asyncio.wait_for(fetcher.fetch(SITE, None), 10)
    assert entry.outcome == Outcome.UNREACHABLE
    assert "did not answer within 0.05s" in entry.detail


async def test_another_well_known_files_failures_name_that_file() -> None:
    path = "/.well-known/tdmrep.json"
    raised = await RobotsFetcher(FakeTransport(raises=OSError("reset")), FetchPolicy(),
                                 path).fetch(SITE, None)
    assert raised.detail == "tdmrep.json could not be fetched (OSError: reset)"
    hung = await asyncio.wait_for(
        RobotsFetcher(FakeTransport(hang=True), FetchPolicy(timeout=0.05), path).fetch(SITE, None),
        10)
    assert hung.detail == "tdmrep.json did not answer within 0.05s"


async def test_the_timeout_covers_all_redirect_hops() -> None:
    async def slow(request: RobotsRequest) -> RobotsResponse:
        await asyncio.sleep(0.02)
        return RobotsResponse(302, {"Location": request.url + "x"})

    class Slow(FakeTransport):
        async def send(self, request: RobotsRequest) -> RobotsResponse:
            self.requests.append(request)
            return await slow(request)

    transport = Slow()
    entry = await asyncio.wait_for(
        RobotsFetcher(transport, FetchPolicy(timeout=0.05, max_redirects=50)).fetch(SITE, None),
        10)
    assert entry.outcome == Outcome.UNREACHABLE and "did not answer" in entry.detail
    assert len(transport.requests) < 50


async def test_errors_keep_a_previous_good_copy() -> None:
    fetcher = RobotsFetcher(FakeTransport(raises=OSError("reset")), FetchPolicy())
    entry = await fetcher.fetch(SITE, good_copy())
    assert entry.outcome == Outcome.OK and entry.body == RULES
    assert entry.failures == 1 and "using the copy" in entry.detail


async def test_a_bug_in_the_flow_is_unreachable_not_raised() -> None:
    # Location with an unbalanced IPv6 bracket makes urljoin raise inside the flow.
    transport = FakeTransport({ROBOTS: RobotsResponse(301, {"Location": "http://[::1/x"})})
    entry = await RobotsFetcher(transport, FetchPolicy()).fetch(SITE, None)
    assert entry.outcome in (Outcome.UNREACHABLE, Outcome.UNAVAILABLE)


async def test_cancellation_propagates() -> None:
    fetcher = RobotsFetcher(FakeTransport(hang=True), FetchPolicy())
    task = asyncio.ensure_future(fetcher.fetch(SITE, None))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_fetches_are_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="robotgate.robots")
    await RobotsFetcher(FakeTransport({ROBOTS: RobotsResponse(503, {})}),
                        FetchPolicy()).fetch(SITE, None)
    await RobotsFetcher(FakeTransport(raises=OSError("reset")), FetchPolicy()).fetch(SITE, None)
    lines = [r.getMessage() for r in caplog.records if r.name == "robotgate.robots"]
    assert any("answered 503" in line for line in lines)
    assert any("reset" in line for line in lines)
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == "robotgate.robots")


# -- the facade with a fake transport (these once mocked aiohttp itself) --------------------


async def test_gate_uses_the_given_transport() -> None:
    other = "http://cdn.example/robots.txt"
    transport = FakeTransport({ROBOTS: RobotsResponse(301, {"Location": other}),
                               other: ok(b"User-agent: *\nDisallow: /private\n")})
    async with RobotGate(AGENT, network=Network(robots_transport=transport)) as gate:
        assert await gate.allowed(SITE + "/public") is True
        d = await gate.decide(SITE + "/private/x")
        assert not d.allowed and d.rule is not None and d.rule.line == 2
        assert (await gate.robots_entry(SITE + "/")).final_url == other
        assert gate.stats["robots_requests"] == 1


@pytest.mark.parametrize("exc", [asyncio.TimeoutError(), aiohttp.ClientConnectionError("x"),
                                 OSError("reset")])
async def test_gate_network_errors_disallow_everything(exc: Exception) -> None:
    network = Network(robots_transport=FakeTransport(raises=exc))
    async with RobotGate(AGENT, network=network) as gate:
        d = await gate.decide(SITE + "/anything")
        assert not d.allowed and d.outcome == "unreachable"


async def test_gate_no_cache_is_still_fresh_for_min_freshness() -> None:
    transport = FakeTransport({ROBOTS: ok(RULES, **{"Cache-Control": "no-cache"})})
    async with RobotGate(AGENT, network=Network(robots_transport=transport)) as gate:
        for _ in range(3):
            assert await gate.allowed(SITE + "/x") is False
    assert len(transport.requests) == 1


@pytest.mark.slow
async def test_gate_revalidates_with_304() -> None:
    answers = iter([ok(RULES, ETag='"v1"', **{"Cache-Control": "max-age=0"}),
                    RobotsResponse(304, {"ETag": '"v1"'})])
    transport = FakeTransport(lambda request: next(answers))
    async with RobotGate(AGENT, network=Network(robots_transport=transport),
                         policy=FetchPolicy(min_freshness=0)) as gate:
        assert await gate.allowed(SITE + "/x") is False
        assert await gate.allowed(SITE + "/x") is False
        entry = await gate.robots_entry(SITE + "/")
        assert "304" in entry.detail and entry.body == RULES
    assert len(transport.requests) == 2
    assert transport.requests[1].headers["If-None-Match"] == '"v1"'


@pytest.mark.slow
async def test_gate_good_copy_used_while_unreachable() -> None:
    answers = iter([ok(RULES, **{"Cache-Control": "max-age=0"}), RobotsResponse(503, {})])
    transport = FakeTransport(lambda request: next(answers))
    async with RobotGate(AGENT, network=Network(robots_transport=transport),
                         policy=FetchPolicy(min_freshness=0)) as gate:
        assert await gate.allowed(SITE + "/x") is False
        assert await gate.allowed(SITE + "/y") is True  # refetch answered 503: old copy stands
        entry = await gate.robots_entry(SITE + "/")
        assert entry.failures == 1 and "using the copy" in entry.detail
