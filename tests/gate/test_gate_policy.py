"""The gate's robots.txt fetch policy, with HTTP mocked by aioresponses (RFC 9309 2.3)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aioresponses import aioresponses

from robotgate import FetchPolicy, RobotGate

AGENT = "MockBot/1.0"
SITE = "http://site.example"
ROBOTS = SITE + "/robots.txt"


class _Response(aiohttp.ClientResponse):
    """aioresponses 0.7.9 builds responses without aiohttp 3.14's ``stream_writer``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("stream_writer", SimpleNamespace(output_size=0))
        super().__init__(*args, **kwargs)


class _Mock(aioresponses):
    def add(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        kwargs.setdefault("response_class", _Response)
        super().add(*args, **kwargs)


@pytest.fixture
async def mocked() -> AsyncIterator[aioresponses]:
    with _Mock() as m:
        yield m


async def test_2xx_rules_apply(mocked: aioresponses) -> None:
    mocked.get(ROBOTS, status=200, body="User-agent: *\nDisallow: /private\n")
    async with RobotGate(AGENT) as gate:
        assert await gate.allowed(SITE + "/public") is True
        d = await gate.decide(SITE + "/private/x")
        assert not d.allowed and d.rule is not None and d.rule.line == 2


async def test_charset_from_content_type(mocked: aioresponses) -> None:
    body = "User-agent: *\nDisallow: /café\n".encode("latin-1")
    mocked.get(ROBOTS, status=200, body=body, content_type="text/plain; charset=iso-8859-1")
    async with RobotGate(AGENT) as gate:
        assert await gate.allowed(SITE + "/caf%C3%A9/menu") is False


async def test_utf8_bom_and_invalid_bytes(mocked: aioresponses) -> None:
    body = b"\xef\xbb\xbfUser-agent: *\nDisallow: /x\xff\nDisallow: /y\n"
    mocked.get(ROBOTS, status=200, body=body)
    async with RobotGate(AGENT) as gate:
        assert await gate.allowed(SITE + "/y") is False  # BOM line counted, bad byte harmless


async def test_body_read_is_capped(mocked: aioresponses) -> None:
    # (aioresponses cannot feed bodies past aiohttp's buffer limit: the loopback
    # tests cover the real 500 KiB cap with a 2 MB robots.txt.)
    filler = b"# " + b"x" * 100 + b"\n"
    body = b"User-agent: *\nDisallow: /early\n" + filler * 20 + b"Disallow: /late\n"
    mocked.get(ROBOTS, status=200, body=body)
    async with RobotGate(AGENT, policy=FetchPolicy(max_bytes=1000)) as gate:
        assert await gate.allowed(SITE + "/early") is False
        assert await gate.allowed(SITE + "/late") is True  # past max_bytes: ignored
        entry = await gate.robots_entry(SITE + "/")
        assert entry.body is not None and len(entry.body) == 1000


async def test_redirect_to_another_origin_is_followed(mocked: aioresponses) -> None:
    other = "http://cdn.example/robots.txt"
    mocked.get(ROBOTS, status=301, headers={"Location": other})
    mocked.get(other, status=200, body="User-agent: *\nDisallow: /\n")
    async with RobotGate(AGENT) as gate:
        d = await gate.decide(SITE + "/x")
        assert not d.allowed
        assert (await gate.robots_entry(SITE + "/")).final_url == other


async def test_six_redirects_count_as_unavailable(mocked: aioresponses) -> None:
    mocked.get(ROBOTS, status=302, headers={"Location": "/r1"})
    for i in range(1, 7):
        mocked.get(f"{SITE}/r{i}", status=302, headers={"Location": f"/r{i + 1}"})
    async with RobotGate(AGENT) as gate:
        d = await gate.decide(SITE + "/x")
        assert d.allowed and d.outcome == "unavailable" and "more than 5" in d.reason


async def test_five_redirects_are_followed(mocked: aioresponses) -> None:
    mocked.get(ROBOTS, status=302, headers={"Location": "/r1"})
    for i in range(1, 5):
        mocked.get(f"{SITE}/r{i}", status=302, headers={"Location": f"/r{i + 1}"})
    mocked.get(f"{SITE}/r5", status=200, body="User-agent: *\nDisallow: /x\n")
    async with RobotGate(AGENT) as gate:
        assert await gate.allowed(SITE + "/x") is False


@pytest.mark.parametrize("status", [401, 403, 404, 410])
async def test_4xx_allows_everything(mocked: aioresponses, status: int) -> None:
    mocked.get(ROBOTS, status=status)
    async with RobotGate(AGENT) as gate:
        assert await gate.allowed(SITE + "/anything") is True


@pytest.mark.parametrize("status", [401, 403])
async def test_classic_option_401_403_keep_out(mocked: aioresponses, status: int) -> None:
    mocked.get(ROBOTS, status=status)
    async with RobotGate(AGENT, policy=FetchPolicy(forbidden_disallows_all=True)) as gate:
        d = await gate.decide(SITE + "/anything")
        assert not d.allowed and d.outcome == "forbidden"


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_429_5xx_disallow_everything(mocked: aioresponses, status: int) -> None:
    mocked.get(ROBOTS, status=status)
    async with RobotGate(AGENT) as gate:
        d = await gate.decide(SITE + "/anything")
        assert not d.allowed and f"answered {status}" in d.reason


@pytest.mark.parametrize(
    "exc", [asyncio.TimeoutError(), aiohttp.ClientConnectionError("refused"), OSError("reset")]
)
async def test_timeouts_and_network_errors_disallow_everything(
    mocked: aioresponses, exc: Exception
) -> None:
    mocked.get(ROBOTS, exception=exc)
    async with RobotGate(AGENT) as gate:
        d = await gate.decide(SITE + "/anything")
        assert not d.allowed and d.outcome == "unreachable"


async def test_good_copy_used_while_unreachable(mocked: aioresponses) -> None:
    mocked.get(ROBOTS, status=200, body="User-agent: *\nDisallow: /x\n",
               headers={"Cache-Control": "max-age=0"})
    mocked.get(ROBOTS, status=503)
    async with RobotGate(AGENT, policy=FetchPolicy(min_freshness=0)) as gate:
        assert await gate.allowed(SITE + "/x") is False
        assert await gate.allowed(SITE + "/y") is True  # refetch answered 503: old copy stands
        entry = await gate.robots_entry(SITE + "/")
        assert entry.failures == 1 and "using the copy" in entry.detail


async def test_max_age_zero_still_fresh_for_min_freshness(mocked: aioresponses) -> None:
    mocked.get(ROBOTS, status=200, body="User-agent: *\nDisallow: /x\n",
               headers={"Cache-Control": "no-cache"})
    async with RobotGate(AGENT) as gate:
        for _ in range(3):
            assert await gate.allowed(SITE + "/x") is False
    assert sum(len(calls) for calls in mocked.requests.values()) == 1


async def test_max_age_then_304_keeps_rules(mocked: aioresponses) -> None:
    mocked.get(ROBOTS, status=200, body="User-agent: *\nDisallow: /x\n",
               headers={"ETag": '"v1"', "Cache-Control": "max-age=0"})
    mocked.get(ROBOTS, status=304, headers={"ETag": '"v1"'})
    async with RobotGate(AGENT, policy=FetchPolicy(min_freshness=0)) as gate:
        assert await gate.allowed(SITE + "/x") is False
        assert await gate.allowed(SITE + "/x") is False
        entry = await gate.robots_entry(SITE + "/")
        assert "304" in entry.detail and entry.body == b"User-agent: *\nDisallow: /x\n"
    requests = [k for k in mocked.requests if str(k[1]) == ROBOTS]
    calls = mocked.requests[requests[0]]
    assert len(calls) == 2
    assert calls[1].kwargs["headers"]["If-None-Match"] == '"v1"'
