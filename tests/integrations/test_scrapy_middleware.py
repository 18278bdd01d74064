"""RobotGateMiddleware in real Scrapy crawls against the loopback server.

Each crawl runs in a subprocess (testbed/scrapy_crawl_runner.py)
with a fresh asyncio reactor; the server records what reached it, so every
check is made where it matters: at the server.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from robotgate.decision import Decision
from robotgate.integrations.scrapy.settings import make_store, read_settings
from robotgate.store import MemoryStore, SQLiteStore
from testbed.children import child_env
from testbed.server import BenchServer, HostPlan, is_disallowed, page_paths
from tests.support.hostile import HostileServer

pytest.importorskip("scrapy", reason="Scrapy is not installed: pip install 'robotgate[scrapy]'")

ROOT = Path(__file__).resolve().parents[2]
RUNNER = "testbed.scrapy_crawl_runner"


async def crawl(config: dict[str, Any], timeout: float = 25) -> dict[str, Any]:
    """Run one crawl; returns the runner's JSON (stats, pages, dropped) and stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", RUNNER, json.dumps(config),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)  # hang guard
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()[-4000:]
    lines = out.decode().strip().splitlines()
    assert lines, err.decode()[-4000:]
    result: dict[str, Any] = json.loads(lines[-1])
    result["stderr"] = err.decode()
    return result


def stat(result: dict[str, Any], name: str) -> int:
    return int(result["stats"].get(name, 0))


# -- robots.txt: once per host, and its verdict before any page --------------------


@pytest.mark.slow
async def test_burst_while_robots_txt_takes_2s_fetches_no_disallowed_page() -> None:
    # Scrapy's own middleware let 6 disallowed pages through in this race (issue 16).
    async with BenchServer([HostPlan("slow", slow_seconds=2.0)]) as srv:
        urls = [srv.url(0, p) for p in page_paths(100)]  # 20 of them under /private/
        result = await crawl({"urls": urls, "settings": {
            "ROBOTGATE_DELAY": 0, "ROBOTGATE_MAX_PER_HOST": 4,
            "CONCURRENT_REQUESTS": 100, "CONCURRENT_REQUESTS_PER_DOMAIN": 100}})
        host = srv.host_stats(0)
    assert host.robots_requests == 1
    assert host.disallowed_page_requests == 0
    assert host.page_requests == 80
    assert stat(result, "robotgate/disallowed") == 20
    assert stat(result, "robotgate/disallowed/rule") == 20
    dropped = result["dropped"]
    assert len(dropped) == 20
    assert {d["error"] for d in dropped} == {"RobotsDisallowed"}
    assert {d["line"] for d in dropped} == {2}  # the decision travels with the exception
    assert all("Disallow: /private/" in d["message"] for d in dropped)


@pytest.mark.slow
async def test_each_robots_outcome_through_scrapys_engine() -> None:
    # 5xx, 429 and network errors disallow the site; 4xx allows it; redirects are
    # followed by the flow; a 2 MiB file is read up to 500 KiB (the rules come first).
    scenarios = ["503_retry", "500", "429", "reset", "404", "redirect_chain", "huge", "allow"]
    # Retry-After 30: robots.txt is asked again only after that (the retry with back-off).
    plans = [HostPlan(s, pages=10, retry_after=30) for s in scenarios]
    async with BenchServer(plans) as srv:
        urls = [srv.url(i, p) for p in page_paths(10) for i in range(len(scenarios))]
        result = await crawl({"urls": urls, "settings": {"ROBOTGATE_DELAY": 0}})
        hosts = [srv.host_stats(i) for i in range(len(scenarios))]
    for scenario, host in zip(scenarios, hosts, strict=True):
        allowed = [p for p in page_paths(10) if not is_disallowed(scenario, p)]
        assert host.robots_requests == 1, scenario
        assert host.disallowed_page_requests == 0, scenario
        assert host.page_requests == len(allowed), scenario
    assert stat(result, "robotgate/disallowed/unreachable") == 40  # 503, 500, 429, reset
    messages = [d["message"] for d in result["dropped"] if d["outcome"] == "unreachable"]
    assert any("robots.txt answered 503" in m for m in messages)
    # No Scrapy retry of robots.txt: the flow's status policy decides.
    assert stat(result, "robotgate/robots/request_count") == len(scenarios) + 3  # 3 hops


@pytest.mark.slow
async def test_a_robots_txt_slower_than_the_timeout_disallows_the_site() -> None:
    async with BenchServer([HostPlan("slow", slow_seconds=4.0), HostPlan("allow")]) as srv:
        urls = [srv.url(i, p) for p in page_paths(5, 0) for i in range(2)]
        result = await crawl({"urls": urls, "settings": {
            "ROBOTGATE_DELAY": 0, "ROBOTGATE_ROBOTS_TIMEOUT": 1}})
        slow, fine = srv.host_stats(0), srv.host_stats(1)
    assert slow.page_requests == 0 and slow.robots_requests == 1
    assert fine.page_requests == 5
    assert stat(result, "robotgate/disallowed/unreachable") == 5
    assert any("did not answer within 1s" in d["message"] for d in result["dropped"])


@pytest.mark.slow
@pytest.mark.parametrize("coding", ["gzip", "br"])
async def test_a_compressed_robots_txt_is_inflated_only_up_to_the_limit(coding: str) -> None:
    # Sent compressed although identity was asked for: 64 MiB of comments after the
    # rules.  Scrapy's HttpCompressionMiddleware would inflate all of it (up to
    # DOWNLOAD_MAXSIZE, 1 GiB); the middleware reads it as far as 500 KiB only.
    async with HostileServer(robots_coding=coding) as srv:
        result = await crawl({"urls": [srv.url("/page/1"), srv.url("/private/1")],
                              "settings": {"ROBOTGATE_DELAY": 0}})
    assert srv.paths() == ["/robots.txt", "/page/1"]
    assert [d["line"] for d in result["dropped"]] == [2]
    assert stat(result, "httpcompression/response_bytes") == 0  # Scrapy inflated nothing
    assert "download warning size" not in result["stderr"]


@pytest.mark.slow
async def test_a_compressed_robots_txt_from_scrapys_http_cache_is_read_alike(
        tmp_path: Path) -> None:
    # The second crawl gets robots.txt from HttpCacheMiddleware's copy, which never
    # passes the downloader: the coding taken off the first time must be kept with it.
    settings = {"ROBOTGATE_DELAY": 0, "HTTPCACHE_ENABLED": True,
                "HTTPCACHE_DIR": str(tmp_path / "cache")}
    async with HostileServer(robots_coding="gzip") as srv:
        urls = [srv.url("/page/1"), srv.url("/private/1")]
        first = await crawl({"urls": urls, "settings": settings})
        second = await crawl({"urls": urls, "settings": settings})
    assert srv.paths() == ["/robots.txt", "/page/1"]  # the second crawl: all from the cache
    assert [d["line"] for d in first["dropped"]] == [2]
    assert [d["line"] for d in second["dropped"]] == [2]


@pytest.mark.slow
async def test_no_password_in_the_middlewares_log() -> None:
    async with HostileServer() as srv:
        url = srv.url("/private/1").replace("http://", "http://someone:hunter2@")
        result = await crawl({"urls": [url], "settings": {
            "ROBOTGATE_DELAY": 0, "LOG_LEVEL": "DEBUG"}})
    ours = [line for line in result["stderr"].splitlines() if "[robotgate" in line]
    assert any("Forbidden by robots.txt: <GET http://someone:***@" in line for line in ours)
    assert not [line for line in ours if "hunter2" in line]


@pytest.mark.slow
async def test_each_page_carries_its_usage_preferences_in_meta() -> None:
    robots = ("User-agent: *\nDisallow: /private/\n"
              "Content-Usage: train-ai=n\nContent-Usage: /open/ train-ai=y\n")

    async def handle(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text=robots)
        header = {"Content-Usage": "train-ai=n, search=y"} if request.path == "/open/2" else {}
        return web.Response(text="page", headers=header)

    runner = web.ServerRunner(web.Server(handle))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        result = await crawl({"urls": [base + p for p in ("/page/1", "/open/1", "/open/2")],
                              "settings": {"ROBOTGATE_DELAY": 0}})
    finally:
        await runner.cleanup()
    # robots.txt's rule for the path, then the header: any "n" wins.
    assert result["usage"] == {
        base + "/page/1": {"train-ai": False},
        base + "/open/1": {"train-ai": True},
        base + "/open/2": {"train-ai": False, "search": True},
    }


@pytest.mark.slow
async def test_one_robots_request_per_host_while_following_links() -> None:
    async with BenchServer([HostPlan("partial", pages=30) for _ in range(3)]) as srv:
        urls = [srv.url(i, "/page/0") for i in range(3)]
        result = await crawl({"urls": urls, "follow": True, "settings": {
            "ROBOTGATE_DELAY": 0, "ROBOTGATE_FROM": "ops@example.com"}})
        hosts = [srv.host_stats(i) for i in range(3)]
    for host in hosts:
        assert host.robots_requests == 1
        assert host.disallowed_page_requests == 0
        assert host.page_requests == 24  # every allowed page, once
        (robots,) = host.robots_log
        assert robots.user_agent == "TestBot/1.0 (+https://example.com/bot)"
        assert robots.from_ == "ops@example.com"
    assert stat(result, "robotgate/disallowed") > 0


# -- pacing ------------------------------------------------------------------------


@pytest.mark.slow
async def test_crawl_delay_gaps_at_the_server_despite_scrapys_jitter() -> None:
    # DOWNLOAD_DELAY 0.5 with Scrapy's +-50 % jitter, 8 requests per domain allowed
    # by Scrapy, 2 in flight allowed by the gate: the gaps still follow Crawl-delay.
    async with BenchServer([HostPlan("crawl_delay", crawl_delay=1.0)]) as srv:
        urls = [srv.url(0, p) for p in page_paths(5, 0)]
        await crawl({"urls": urls, "settings": {
            "DOWNLOAD_DELAY": 0.5, "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
            "ROBOTGATE_MAX_PER_HOST": 2}})
        host = srv.host_stats(0)
    assert host.page_requests == 5
    assert host.min_interval is not None and host.min_interval >= 1.0
    # robots.txt counts as a request to the server: the first page waits too.
    assert host.page_times[0] - host.robots_times[0] >= 1.0


@pytest.mark.slow
async def test_retry_after_rests_one_host_while_another_flows() -> None:
    plans = [HostPlan("allow", page_status=429, page_retry_after=2, page_status_times=1),
             HostPlan("allow")]
    async with BenchServer(plans) as srv:
        # The resting host's requests come first: they must not hold up the other's.
        urls = [srv.url(0, p) for p in page_paths(20, 0)] + [
            srv.url(1, p) for p in page_paths(20, 0)]
        result = await crawl({"urls": urls, "settings": {"ROBOTGATE_DELAY": 0}})
        rested, plain = srv.host_stats(0), srv.host_stats(1)
    first, second = rested.page_log[0], rested.page_log[1]
    assert first.status == 429
    assert second.time - first.time >= 2.0
    assert plain.page_requests == 20
    assert max(plain.page_times) < second.time  # all 20 while the other host rested
    assert rested.distinct_pages == 20  # Scrapy's retry of the 429 went through too
    assert stat(result, "robotgate/backoffs") == 1


# -- stores, settings, reactor ---------------------------------------------------------


@pytest.mark.slow
async def test_sqlite_store_shares_robots_txt_between_crawls(tmp_path: Path) -> None:
    store = str(tmp_path / "robots.db")
    async with BenchServer([HostPlan("partial", pages=10)]) as srv:
        urls = [srv.url(0, p) for p in page_paths(5)]
        settings = {"ROBOTGATE_DELAY": 0, "ROBOTGATE_STORE": store}
        await crawl({"urls": urls, "settings": settings})
        second = await crawl({"urls": urls, "settings": settings})
        host = srv.host_stats(0)
    assert host.robots_requests == 1  # the second crawl read it from the store
    assert stat(second, "robotgate/robots_requests") == 0
    assert host.page_requests == 8
    assert host.disallowed_page_requests == 0


@pytest.mark.slow
async def test_a_fleet_on_redis_fetches_once_and_shares_the_pace(
        redis_url: str, prefix: str) -> None:
    async with BenchServer([HostPlan("crawl_delay", crawl_delay=0.5)]) as srv:
        urls = [srv.url(0, p) for p in page_paths(4, 0)]
        settings = {"ROBOTGATE_STORE": redis_url, "ROBOTGATE_STORE_PREFIX": prefix}
        await asyncio.gather(*(crawl({"urls": urls, "settings": settings}) for _ in range(2)))
        host = srv.host_stats(0)
    assert host.robots_requests == 1
    assert host.page_requests == 8
    assert host.min_interval is not None and host.min_interval >= 0.5


@pytest.mark.slow
async def test_the_asyncio_reactor_is_required() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", RUNNER, json.dumps({"urls": ["http://127.0.0.1:9/"], "settings": {
            "TWISTED_REACTOR": "twisted.internet.selectreactor.SelectReactor"}}),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 25)
    assert "RobotGateMiddleware needs Scrapy's asyncio reactor" in err.decode()


@pytest.mark.slow
async def test_works_without_a_twisted_reactor() -> None:
    # Scrapy 2.19 can run on asyncio alone (AsyncCrawlerProcess, its aiohttp handler).
    async with BenchServer([HostPlan("partial", pages=10)]) as srv:
        urls = [srv.url(0, p) for p in page_paths(10)]
        result = await crawl({"urls": urls, "settings": {
            "ROBOTGATE_DELAY": 0, "TWISTED_REACTOR_ENABLED": False}})
        host = srv.host_stats(0)
    assert host.robots_requests == 1
    assert host.page_requests == 8 and host.disallowed_page_requests == 0
    assert stat(result, "robotgate/disallowed") == 2


def test_not_configured_without_robotstxt_obey() -> None:
    from scrapy.exceptions import NotConfigured
    from scrapy.utils.test import get_crawler

    from robotgate.integrations.scrapy import RobotGateMiddleware

    with pytest.raises(NotConfigured):
        RobotGateMiddleware(get_crawler(settings_dict={"ROBOTSTXT_OBEY": False}))


def test_robots_disallowed_is_an_ignore_request_with_the_decision() -> None:
    from scrapy.exceptions import IgnoreRequest

    from robotgate.integrations.scrapy import RobotsDisallowed

    decision = Decision(False, "robots.txt answered 503: unreachable", outcome="unreachable")
    exc = RobotsDisallowed("http://example.com/x", decision)
    assert isinstance(exc, IgnoreRequest)
    assert exc.decision is decision
    assert "answered 503" in str(exc)


def test_settings_are_read_with_their_names_in_errors() -> None:
    conf = read_settings({"USER_AGENT": "Scrapy/2.19"})
    assert conf.user_agent == "Scrapy/2.19"
    assert conf.options["delay"] == 1.0 and conf.options["pace_by"] == "host"
    assert conf.store == "memory"
    conf = read_settings({"USER_AGENT": "Scrapy/2.19", "ROBOTGATE_USER_AGENT": "MyBot/1",
                          "ROBOTGATE_MAX_PER_HOST": "3", "ROBOTGATE_PACE_BY": "domain",
                          "ROBOTGATE_RESPECT_CRAWL_DELAY": "false"},
                         spider_user_agent="SpiderBot/2", download_delay=2.5)
    assert conf.user_agent == "MyBot/1"
    assert conf.options["max_per_host"] == 3 and conf.options["pace_by"] == "domain"
    assert conf.options["pacing"].respect_crawl_delay is False
    assert conf.options["delay"] == 2.5  # the DOWNLOAD_DELAY the user set
    assert read_settings({"USER_AGENT": "S"}, "SpiderBot/2").user_agent == "SpiderBot/2"
    with pytest.raises(ValueError, match="ROBOTGATE_DELAY"):
        read_settings({"USER_AGENT": "S", "ROBOTGATE_DELAY": "soon"})
    policy = read_settings({"USER_AGENT": "S", "ROBOTGATE_ROBOTS_TIMEOUT": "5",
                            "ROBOTGATE_DIALECT": "classic"}).options["policy"]
    assert policy.timeout == 5.0 and policy.forbidden_disallows_all
    for bad in ("soon", "inf", "0"):
        with pytest.raises(ValueError, match="ROBOTGATE_ROBOTS_TIMEOUT"):
            read_settings({"USER_AGENT": "S", "ROBOTGATE_ROBOTS_TIMEOUT": bad})
    grouped = read_settings({"USER_AGENT": "S", "ROBOTGATE_MAX_ORIGINS": "7",
                             "ROBOTGATE_ON_LONG_DELAY": "honour",
                             "ROBOTGATE_RECHECK_VISITS": ""}).options
    assert grouped["network"].max_origins == 7 and grouped["pacing"].on_long_delay == "honour"
    assert grouped["policy"].recheck_visits is None
    with pytest.raises(ValueError, match="ROBOTGATE_ON_LONG_DELAY"):
        read_settings({"USER_AGENT": "S", "ROBOTGATE_ON_LONG_DELAY": "always"})


def test_store_setting(tmp_path: Path) -> None:
    assert isinstance(make_store("memory"), MemoryStore)
    plain = make_store(str(tmp_path / "a" / "robots.db"))
    prefixed = make_store(f"sqlite:{tmp_path / 'b.db'}")
    assert isinstance(plain, SQLiteStore) and isinstance(prefixed, SQLiteStore)
    assert (tmp_path / "a").is_dir()
    redis = make_store("redis://127.0.0.1:6379/0", prefix="fleet")
    assert type(redis).__name__ == "RedisStore"
    cluster = make_store("redis+cluster://127.0.0.1:7000", prefix="fleet")
    assert type(cluster).__name__ == "RedisStore" and cluster.cluster


async def test_a_page_is_never_lost_for_its_usage_preferences(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from scrapy import Request
    from scrapy.http import Response
    from scrapy.utils.test import get_crawler

    from robotgate.integrations.scrapy.middleware import RobotGateMiddleware
    from robotgate.store.base import StoreError

    middleware = RobotGateMiddleware.from_crawler(get_crawler(settings_dict={
        "ROBOTSTXT_OBEY": True}))

    async def store_down(url: str) -> Decision:
        raise StoreError("Redis at redis://127.0.0.1:1/0 unreachable for 10.0 s")

    monkeypatch.setattr(middleware.gate, "check", lambda url: None)  # rules gone stale
    monkeypatch.setattr(middleware.gate, "decide", store_down)
    request = Request("http://127.0.0.1:9/page")
    response = Response(request.url, request=request)
    assert await middleware.process_response(request, response) is response
    assert "robotgate_usage" not in request.meta


@pytest.mark.slow
async def test_a_redirect_chain_ends_in_scrapys_own_max_redirections_each_hop_paced() -> None:
    # Scrapy's RedirectMiddleware follows (each hop a new Request, in a turn of its own,
    # held to the delay) and stops the chain itself: its IgnoreRequest, no robotgate error.
    arrived: list[tuple[str, float]] = []

    async def handle(request: web.Request) -> web.Response:
        arrived.append((request.path, asyncio.get_running_loop().time()))
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        hop = int(request.path.rsplit("/", 1)[1])
        raise web.HTTPFound(f"/r/{hop + 1}")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/r/0"
        result = await crawl({"urls": [url], "settings": {
            "ROBOTGATE_DELAY": 0.3, "REDIRECT_MAX_TIMES": 3}})
    finally:
        await runner.cleanup()
    [dropped] = result["dropped"]
    assert dropped["error"] == "IgnoreRequest", dropped
    assert "max redirections" in dropped["message"], dropped
    assert [path for path, _ in arrived] == ["/robots.txt", "/r/0", "/r/1", "/r/2", "/r/3"]
    times = [at for _, at in arrived]
    assert min(b - a for a, b in itertools.pairwise(times)) >= 0.3


def test_twisted_errors_that_are_this_machines_shortage_are_recognised() -> None:
    import errno

    from scrapy.exceptions import CannotResolveHostError, DownloadConnectionRefusedError
    from twisted.internet import error

    from robotgate.integrations.scrapy.middleware import shortage_of

    # No socket could be made: Twisted keeps the errno in osError, with no cause.
    made = shortage_of(error.ConnectBindError(errno.EMFILE, "Too many open files"),
                       "http://site.test/robots.txt")
    assert made is not None and made.errno == errno.EMFILE
    assert str(made).startswith("http://site.test/robots.txt: this machine ran out of open files")
    # Wrapped by Scrapy (its own error, Twisted's as the cause).
    try:
        try:
            raise error.ConnectError(errno.EADDRNOTAVAIL, "Cannot assign requested address")
        except error.ConnectError as cause:
            raise CannotResolveHostError("wrapped") from cause
    except CannotResolveHostError as wrapped:
        ports = shortage_of(wrapped, "x")
    assert ports is not None and "local ports" in ports.resource
    # The site's failures stay the site's.
    refused = error.ConnectionRefusedError(errno.ECONNREFUSED, "refused")
    assert shortage_of(refused, "x") is None
    assert shortage_of(DownloadConnectionRefusedError("refused"), "x") is None
    assert shortage_of(error.DNSLookupError("site.test"), "x") is None


_LOOKUP_OUT_OF_DESCRIPTORS = """
import json, resource, socket
from twisted.internet import error
from robotgate.integrations.scrapy.middleware import shortage_of
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while len(held) < 100:  # bounded: the limit is 64
        held.append(socket.socket())
except OSError:
    pass
short = shortage_of(error.DNSLookupError("no results for hostname lookup: site.test"), "x")
while held:
    held.pop().close()
print(json.dumps([None if short is None else short.resource,
                  shortage_of(error.DNSLookupError("site.test"), "x") is None]))
"""


def test_a_name_lookup_failing_while_descriptors_are_out_is_this_machines_shortage() -> None:
    # Twisted's DNSLookupError keeps no errno: a socket made at once tells the shortage.
    done = subprocess.run([sys.executable, "-c", _LOOKUP_OUT_OF_DESCRIPTORS],
                          capture_output=True, text=True, env=child_env(), timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    resource, site_again = json.loads(done.stdout.strip().splitlines()[-1])
    assert resource is not None and "EMFILE" in resource, resource
    assert site_again  # descriptors free again: a failed lookup is the site's
