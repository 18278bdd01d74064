"""Tests for the loopback benchmark server in ``testbed/server.py``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from testbed.server import (
    SCENARIOS,
    BenchServer,
    HostPlan,
    is_disallowed,
    mixed_plans,
    page_paths,
)

PARTIAL_RULES = b"User-agent: *\nDisallow: /private/\n"
# Extra hosts after the one-per-scenario block.
BACKOFF = len(SCENARIOS)
CACHED = len(SCENARIOS) + 1


def _index(scenario: str) -> int:
    return SCENARIOS.index(scenario)


@pytest.fixture
async def srv() -> AsyncIterator[BenchServer]:
    plans = [HostPlan(s, slow_seconds=0.3) for s in SCENARIOS]
    plans.append(HostPlan("partial", page_status=429, page_retry_after=2, page_status_times=1))
    plans.append(HostPlan("partial", max_age=60))
    async with BenchServer(plans) as server:
        yield server


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    timeout = aiohttp.ClientTimeout(total=5)
    async with aiohttp.ClientSession(timeout=timeout) as s:
        yield s


def test_addresses_and_urls() -> None:
    server = BenchServer(["allow"] * 300)
    assert server.hosts[0] == "127.0.1.1"
    assert server.hosts[253] == "127.0.1.254"
    assert server.hosts[254] == "127.0.2.1"  # .255 and .0 are skipped
    assert "127.0.0.1" not in server.hosts
    with pytest.raises(RuntimeError):
        _ = server.port


def test_page_paths_and_disallow_table() -> None:
    paths = page_paths(10)
    assert paths == [
        "/page/0",
        "/page/1",
        "/page/2",
        "/page/3",
        "/private/4",
        "/page/5",
        "/page/6",
        "/page/7",
        "/page/8",
        "/private/9",
    ]
    assert sum(p.startswith("/private/") for p in page_paths(1000)) == 200
    assert page_paths(5, private_fraction=0.0) == [f"/page/{i}" for i in range(5)]
    for scenario in ("partial", "crawl_delay", "slow", "redirect_chain", "huge"):
        assert is_disallowed(scenario, "/private/3")
        assert not is_disallowed(scenario, "/page/3")
    for scenario in ("500", "503_retry", "429", "reset", "garbage"):  # garbage: no text
        assert is_disallowed(scenario, "/page/3")
    for scenario in ("404", "redirect_loop", "allow"):
        assert not is_disallowed(scenario, "/private/3")
    with pytest.raises(ValueError):
        is_disallowed("nope", "/")


def test_mixed_is_deterministic_and_exact() -> None:
    mix = {"partial": 0.5, "allow": 0.3, "crawl_delay": 0.2}
    a = [p.scenario for p in mixed_plans(101, mix, seed=7)]
    b = [p.scenario for p in mixed_plans(101, mix, seed=7)]
    assert a == b
    assert (a.count("partial"), a.count("allow"), a.count("crawl_delay")) == (51, 30, 20)
    server = BenchServer.mixed(10, {"allow": 1}, overrides={3: HostPlan("reset")})
    assert server.scenarios[3] == "reset"
    assert server.scenarios.count("allow") == 9


@pytest.mark.slow
async def test_robots_scenarios(srv: BenchServer, session: aiohttp.ClientSession) -> None:
    async def get(scenario: str) -> tuple[aiohttp.ClientResponse, bytes]:
        async with session.get(srv.url(_index(scenario), "/robots.txt")) as resp:
            return resp, await resp.read()

    resp, body = await get("allow")
    assert (resp.status, body) == (200, b"User-agent: *\nDisallow:\n")
    assert resp.headers["ETag"] and resp.headers["Last-Modified"]
    resp, body = await get("partial")
    assert (resp.status, body) == (200, PARTIAL_RULES)
    resp, body = await get("crawl_delay")
    assert b"Crawl-delay: 0.2\n" in body and b"Disallow: /private/" in body
    assert (await get("404"))[0].status == 404
    assert (await get("500"))[0].status == 500
    resp, _ = await get("503_retry")
    assert (resp.status, resp.headers["Retry-After"]) == (503, "1")
    resp, _ = await get("429")
    assert resp.status == 429 and "Retry-After" not in resp.headers

    started = time.monotonic()
    resp, body = await get("slow")
    assert (resp.status, body) == (200, PARTIAL_RULES)
    assert time.monotonic() - started >= 0.29

    resp, body = await get("redirect_chain")
    assert (resp.status, body) == (200, PARTIAL_RULES)
    assert [r.status for r in resp.history] == [301, 301, 301]
    assert resp.url.path == "/r/3"

    with pytest.raises(aiohttp.TooManyRedirects):
        await get("redirect_loop")
    async with session.get(
        srv.url(_index("redirect_loop"), "/loop/b"), allow_redirects=False
    ) as resp:
        assert resp.headers["Location"].endswith("/loop/a")

    resp, body = await get("huge")
    assert resp.status == 200 and len(body) == 2 * 1024 * 1024
    assert body.startswith(PARTIAL_RULES)
    resp, body = await get("garbage")
    assert resp.status == 200 and len(body) == 10 * 1024
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")

    with pytest.raises(aiohttp.ClientConnectionError):
        await get("reset")

    stats = srv.stats()
    for i, scenario in enumerate(SCENARIOS):
        if scenario != "reset":
            assert stats[srv.hosts[i]].robots_requests == 1, scenario
    # aiohttp (3.14) silently retries an idempotent request once after a reset.
    reset = stats[srv.hosts[_index("reset")]]
    assert 1 <= reset.robots_requests <= 2
    assert {r.status for r in reset.robots_log} == {0}
    chain = stats[srv.hosts[_index("redirect_chain")]]
    assert chain.redirect_hops == 3
    assert [r.path for r in chain.robots_log] == ["/robots.txt", "/r/1", "/r/2", "/r/3"]
    loop = stats[srv.hosts[_index("redirect_loop")]]
    hops = [r.path for r in loop.robots_log[1:-1]]  # the last entry is the direct /loop/b
    assert len(hops) >= 5 and hops[:3] == ["/loop/a", "/loop/b", "/loop/a"]
    assert loop.redirect_hops == len(hops) + 1


async def test_conditional_robots(srv: BenchServer, session: aiohttp.ClientSession) -> None:
    url = srv.url(CACHED, "/robots.txt")
    async with session.get(url, headers={"User-Agent": "bench/1.0", "From": "a@b.c"}) as resp:
        etag = resp.headers["ETag"]
        last_modified = resp.headers["Last-Modified"]
        assert resp.headers["Cache-Control"] == "max-age=60"
    async with session.get(url, headers={"If-None-Match": etag}) as resp:
        assert resp.status == 304
        assert resp.headers["ETag"] == etag
    async with session.get(url, headers={"If-None-Match": '"other"'}) as resp:
        assert resp.status == 200
    async with session.get(url, headers={"If-Modified-Since": last_modified}) as resp:
        assert resp.status == 304

    stats = srv.host_stats(CACHED)
    assert (stats.robots_requests, stats.robots_304) == (4, 2)
    first = stats.robots_log[0]
    assert (first.user_agent, first.from_, first.if_none_match) == ("bench/1.0", "a@b.c", None)
    assert stats.robots_log[1].if_none_match == etag
    assert stats.robots_log[3].if_modified_since == last_modified


async def test_pages_and_disallowed_counts(
    srv: BenchServer, session: aiohttp.ClientSession
) -> None:
    for i, scenario in enumerate(SCENARIOS):
        for path in ("/page/3", "/private/4"):
            async with session.get(srv.url(i, path)) as resp:
                assert resp.status == 200, scenario
                assert resp.content_type == "text/html"
                html = await resp.text()
        assert 900 <= len(html) <= 1300
        assert 'href="/private/4"' in html or 'href="/page/5"' in html

    stats = srv.stats()
    for i, scenario in enumerate(SCENARIOS):
        host = stats[srv.hosts[i]]
        expected = sum(is_disallowed(scenario, p) for p in ("/page/3", "/private/4"))
        assert (host.page_requests, host.disallowed_page_requests) == (2, expected), scenario
        assert host.min_interval is not None and host.min_interval >= 0
    async with session.get(srv.url(0, "/elsewhere")) as resp:
        assert resp.status == 404
    assert srv.host_stats(0).other_requests == 1


async def test_page_backoff_status(srv: BenchServer, session: aiohttp.ClientSession) -> None:
    async with session.get(srv.url(BACKOFF, "/page/1")) as resp:
        assert (resp.status, resp.headers["Retry-After"]) == (429, "2")
    async with session.get(srv.url(BACKOFF, "/page/1")) as resp:
        assert resp.status == 200
    log = srv.host_stats(BACKOFF).page_log
    assert [p.status for p in log] == [429, 200]


async def test_rate_limited_host(session: aiohttp.ClientSession) -> None:
    # One page per 30 s is let through; the rest get 429 without Retry-After.
    async with BenchServer([HostPlan("allow", rate_limit=30.0)]) as server:
        statuses = []
        for path in ("/page/1", "/page/2", "/robots.txt", "/page/3"):
            async with session.get(server.url(0, path)) as resp:
                statuses.append(resp.status)
                assert "Retry-After" not in resp.headers
        assert statuses == [200, 429, 200, 429]
        assert [p.status for p in server.host_stats(0).page_log] == [200, 429, 429]
    with pytest.raises(ValueError):
        HostPlan("allow", rate_limit=0)


async def test_extra_port_serves_the_same_hosts(session: aiohttp.ClientSession) -> None:
    async with BenchServer([HostPlan("allow")] * 2, extra_ports=1) as server:
        assert len(set(server.ports)) == 2 and server.ports[0] == server.port
        for port in server.ports:
            async with session.get(f"http://{server.hosts[1]}:{port}/page/1") as resp:
                assert resp.status == 200
        assert server.host_stats(1).page_requests == 2
        assert server.info()["ports"] == server.ports


async def test_control_endpoints(srv: BenchServer, session: aiohttp.ClientSession) -> None:
    for path in ("/robots.txt", "/page/0", "/page/1"):
        async with session.get(srv.url(_index("partial"), path)) as resp:
            await resp.read()
    async with session.get(f"{srv.control_url}/__stats") as resp:
        data = await resp.json()
    host = data["hosts"][srv.hosts[_index("partial")]]
    assert host["robots_requests"] == 1 and host["page_requests"] == 2
    assert len(host["page_times"]) == 2 and host["robots_log"][0]["has_user_agent"]
    assert host["min_interval"] == pytest.approx(host["page_times"][1] - host["page_times"][0])
    assert data["totals"]["page_requests"] == 2

    query = {"host": srv.hosts[_index("partial")], "times": "0", "log": "0"}
    async with session.get(f"{srv.control_url}/__stats", params=query) as resp:
        small = await resp.json()
    assert list(small["hosts"]) == [query["host"]]
    assert "page_times" not in small["hosts"][query["host"]]

    async with session.post(f"{srv.control_url}/__reset") as resp:
        assert resp.status == 200
    assert srv.stats_json()["totals"]["page_requests"] == 0
    async with session.get(f"{srv.control_url}/__info") as resp:
        assert (await resp.json())["port"] == srv.port
