"""The gate at a machine's default open-file limits (issue 91).

A crawl of more origins than ``ulimit -n`` allows sockets must still fetch every
page: the gate's session holds a bounded number of connections, and a socket that
cannot be opened is this machine's failure, never the site's "robots.txt
unreachable".  The crawls run in a child process whose limit is lowered, against the
loopback server in a process of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from robotgate import FetchPolicy, Network, RobotGate
from robotgate.events import Event, LocalShortage, RobotsFetched
from robotgate.gate import aiohttp_robots
from robotgate.gate.connections import BoundedConnector
from robotgate.policy.fetch import LocalFailure
from robotgate.policy.fetch_flow import RobotsRequest, RobotsResponse
from testbed.children import child_env
from testbed.server import BenchServer, HostPlan, host_addresses
from tests.support.transports import FakeTransport

RULES = b"User-agent: *\nDisallow: /private\n"


class ShortOfFiles(FakeTransport):
    """A robots.txt transport that runs out of file descriptors ``failures`` times,
    as aiohttp does (its connector error is an OSError carrying EMFILE), then answers."""

    def __init__(self, failures: int) -> None:
        super().__init__(RobotsResponse(200, {"Content-Type": "text/plain"}, RULES))
        self.failures = failures

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        if self.failures > 0:
            self.failures -= 1
            self.requests.append(request)
            raise OSError(errno.EMFILE, "Too many open files")
        return await super().send(request)


async def test_a_shortage_of_descriptors_is_never_the_sites_verdict() -> None:
    transport = ShortOfFiles(failures=1_000)  # more than the fetch's timeout lets it try
    heard: list[Event] = []
    gate = RobotGate("LimitBot/1.0", delay=0, policy=FetchPolicy(timeout=0.3),
                     network=Network(robots_transport=transport), on_event=heard.append)
    async with gate:
        with pytest.raises(LocalFailure) as raised:
            await asyncio.wait_for(gate.allowed("http://site.test/page"), 10)  # hang guard
        assert raised.value.errno == errno.EMFILE
        assert "ulimit -n" in str(raised.value) and "site.test" in str(raised.value)
        assert len(transport.requests) > 1  # asked again while it lasted
        assert await gate.store.load_robots("http://site.test") is None  # nothing kept
        # The crawler is told, each time, and when it gave up; no robots.txt was fetched.
        shortages = [e for e in heard if isinstance(e, LocalShortage)]
        assert len(shortages) == len(transport.requests)
        assert all(e.origin == "http://site.test" and "EMFILE" in e.resource
                   for e in shortages)
        assert [e.given_up for e in shortages][-1:] == [True]
        assert not any(e.given_up for e in shortages[:-1])
        assert not any(isinstance(e, RobotsFetched) for e in heard)
        transport.failures = 0  # the descriptors free
        assert await gate.allowed("http://site.test/page")
        assert not await gate.allowed("http://site.test/private")


async def test_a_fetch_that_runs_short_is_asked_again_when_the_resource_frees() -> None:
    transport = ShortOfFiles(failures=2)
    gate = RobotGate("LimitBot/1.0", delay=0, network=Network(robots_transport=transport))
    async with gate:
        assert await asyncio.wait_for(gate.allowed("http://site.test/page"), 10)  # hang guard
        entry = await gate.store.load_robots("http://site.test")
        assert entry is not None and entry.outcome == "ok" and entry.failures == 0
        assert len(transport.requests) == 3  # two short, then the answer


def _open_sockets() -> int:
    fds = os.listdir("/proc/self/fd")
    count = 0
    for fd in fds:
        with contextlib.suppress(OSError):  # closed meanwhile (the listing's own)
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return count


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc (Linux)")
async def test_idle_connections_are_bounded_however_many_origins() -> None:
    origins = 40
    bound = 6
    async with BenchServer([HostPlan("partial") for _ in range(origins)]) as server:
        before = _open_sockets()
        async with RobotGate("LimitBot/1.0", delay=0,
                             network=Network(max_connections=bound)) as gate:
            for i in range(origins):
                async with gate.fetch(server.url(i, "/page/0")) as resp:
                    assert resp.status == 200
                    await resp.read()
            # Each connection is two sockets here (the server's end too); the server
            # closes its end once the gate has closed the other.
            for _ in range(200):  # hang guard: 2 s at most
                held = _open_sockets() - before
                if held <= 2 * bound:
                    break
                await asyncio.sleep(0.01)
            assert held <= 2 * bound, f"{held} sockets open for {origins} origins"


async def test_the_least_recently_used_idle_connection_is_closed_first() -> None:
    async with (BenchServer([HostPlan("allow") for _ in range(3)]) as server,
                RobotGate("LimitBot/1.0", delay=0,
                          network=Network(max_connections=2)) as gate):
        async def visit(i: int) -> None:
            async with gate.fetch(server.url(i, "/page/0")) as resp:
                await resp.read()

        await visit(0)  # robots.txt, then the page, on one connection
        await visit(1)
        await visit(0)  # host 0's connection used again: host 1's is the older
        connector = gate.session.connector
        assert isinstance(connector, BoundedConnector)
        assert connector.closed_for_room == 0
        await visit(2)  # room for it: host 1's idle connection goes
        assert connector.closed_for_room == 1 and connector.open_connections == 2
        idle_hosts = {key.host for key in connector._conns}
        assert idle_hosts == {server.hosts[0], server.hosts[2]}


@pytest.mark.slow
async def test_a_request_waits_for_a_connection_before_its_turn_not_after() -> None:
    # One connection for three servers, each taking three requests at once and 0.1 s to
    # answer a page: a request that waited for the connection after its server's turn
    # would arrive closer to the next one than the interval.
    delay = 0.15
    async with (BenchServer([HostPlan("allow", page_delay=0.1) for _ in range(3)]) as server,
                RobotGate("LimitBot/1.0", delay=delay, max_per_host=3,
                          network=Network(max_connections=1)) as gate):
        async def visit(i: int, page: int) -> None:
            async with gate.fetch(server.url(i, f"/page/{page}")) as resp:
                await resp.read()

        await asyncio.wait_for(asyncio.gather(
            *(visit(i, page) for i in range(3) for page in range(3))), 60)  # hang guard
        for i in range(3):
            stats = server.host_stats(i)
            arrivals = sorted(stats.robots_times + stats.page_times)
            assert len(arrivals) == 4
            gaps = [b - a for a, b in itertools.pairwise(arrivals)]
            assert min(gaps) >= delay, (i, gaps)
            assert stats.max_concurrent_pages == 1


_CRAWL = textwrap.dedent("""
    import asyncio, json, resource, sys
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), hard))
    from robotgate import RobotGate

    async def main(port, addresses, concurrency):
        statuses, private = {}, 0
        async def handler(url, resp):
            statuses[url] = resp.status
            await resp.read()
        async with RobotGate("LimitBot/1.0", delay=0) as gate:
            urls = [f"http://{a}:{port}/{p}" for a in addresses for p in ("page/0", "private/1")]
            summary = await gate.crawl(urls, handler, concurrency=concurrency)
            allowed = sum([await gate.allowed(f"http://{a}:{port}/page/1") for a in addresses])
        print(json.dumps({"pages": summary.pages, "unreachable": summary.unreachable,
                          "skipped": summary.skipped, "errors": summary.errors,
                          "ok": sum(s == 200 for s in statuses.values()),
                          "private": sum("/private/" in u for u in statuses),
                          "allowed": allowed}))

    asyncio.run(main(int(sys.argv[2]), json.loads(sys.stdin.read()), int(sys.argv[3])))
""")


@pytest.mark.soak
@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs resource.setrlimit")
def test_a_crawl_of_many_origins_at_ulimit_256() -> None:
    origins = 1_500
    server = subprocess.Popen(
        [sys.executable, "-m", "testbed.server", "--hosts", str(origins), "--mix", "partial=1",
         "--pages", "2", "--duration", "300"],
        stdout=subprocess.PIPE, env=child_env(), text=True)
    try:
        assert server.stdout is not None
        ready = json.loads(server.stdout.readline())
        port = ready["port"]
        addresses = host_addresses(origins)
        crawl = subprocess.run(
            [sys.executable, "-c", _CRAWL, "256", str(port), "64"], input=json.dumps(addresses),
            capture_output=True, text=True, env=child_env(), timeout=240)  # hang guard
        assert crawl.returncode == 0, crawl.stderr[-3000:]
        seen = json.loads(crawl.stdout.strip().splitlines()[-1])
    finally:
        server.terminate()
        server.wait(30)
        if server.stdout is not None:
            server.stdout.close()
    print(seen)
    assert seen["unreachable"] == 0, seen
    assert seen["ok"] == origins and seen["pages"] == origins, seen
    assert seen["private"] == 0 and seen["skipped"] == origins, seen
    assert seen["allowed"] == origins, seen


_SCRAPY_CRAWL = textwrap.dedent("""
    import asyncio, errno, json, logging, os, resource, sys
    import scrapy
    from scrapy.crawler import CrawlerProcess

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), hard))
    warm_up, *urls = json.loads(sys.argv[2])
    seen = {"pages": [], "dropped": [], "told": []}

    class Told(logging.Handler):
        def emit(self, record):
            seen["told"].append(record.getMessage())

    logging.getLogger("robotgate.robots").addHandler(Told(logging.WARNING))
    hog = []

    def run_short():
        # Every descriptor left is taken: the robots.txt fetch's socket cannot be made.
        while True:
            try:
                hog.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as exc:
                assert exc.errno == errno.EMFILE, exc
                return

    def free():
        while hog:
            os.close(hog.pop())

    class Site(scrapy.Spider):
        name = "site"

        async def start(self):
            # A first page, so that what a download imports on its first use is loaded.
            yield scrapy.Request(warm_up, callback=self.short, errback=self.failed)

        def short(self, response):
            run_short()
            asyncio.get_running_loop().call_later(float(sys.argv[3]), free)
            return [scrapy.Request(url, callback=self.parse, errback=self.failed)
                    for url in urls]  # a list: Scrapy reads a generator's source

        def parse(self, response):
            seen["pages"].append(response.url)

        def failed(self, failure):
            decision = getattr(failure.value, "decision", None)
            seen["dropped"].append([type(failure.value).__name__, str(failure.value),
                                    getattr(decision, "outcome", None)])

    process = CrawlerProcess(settings={
        "ROBOTSTXT_OBEY": True, "TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "ERROR",
        "USER_AGENT": "LimitBot/1.0", "ROBOTGATE_DELAY": 0,
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
            "robotgate.integrations.scrapy.RobotGateMiddleware": 100}})
    process.crawl(Site)
    process.start()
    free()
    print(json.dumps(seen))
""")


@pytest.mark.skipif(sys.platform == "win32", reason="needs resource.setrlimit")
async def test_scrapys_robots_txt_fetch_out_of_descriptors_is_the_crawlers_failure() -> None:
    # Twisted's connection errors carry no cause chain: the errno is in their osError.
    # Old code read the shortage as the site's "robots.txt unreachable" and dropped
    # the page; now the fetch is asked again once the descriptors free.
    pytest.importorskip("scrapy", reason="Scrapy is not installed")
    async with BenchServer([HostPlan("partial") for _ in range(3)]) as server:
        urls = [server.url(i, "/page/0") for i in range(1, 3)]
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _SCRAPY_CRAWL, "128",
            json.dumps([server.url(0, "/page/0"), *urls]), "1.0",
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=child_env())
        try:
            out, err = await asyncio.wait_for(child.communicate(), 60)  # hang guard
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
        robots = [server.host_stats(i).robots_requests for i in range(1, 3)]
    assert child.returncode == 0, err.decode()[-3000:]
    seen = json.loads(out.decode().strip().splitlines()[-1])
    assert seen["dropped"] == [], seen
    assert sorted(seen["pages"]) == sorted(urls), seen
    assert robots == [1, 1]  # the shortages never reached the server
    # The crawler is told, naming the limit and what to raise.
    assert seen["told"], seen
    assert all("EMFILE, ulimit -n 128" in line and "raise the limit" in line
               for line in seen["told"]), seen["told"]


_FETCH = textwrap.dedent("""
    import asyncio, contextlib, json, os, resource, sys
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), hard))
    from robotgate import FetchPolicy, RobotGate

    def sockets():
        try:
            fds = os.listdir("/proc/self/fd")
        except OSError:  # out of descriptors: the listing's own could not open
            return sys.maxsize
        count = 0
        for fd in fds:
            with contextlib.suppress(OSError):
                count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        return count

    async def main(port, addresses, concurrency):
        before, most, errors, ok, done = sockets(), 0, {}, 0, False
        async def sample():
            nonlocal most
            while not done:
                most = max(most, sockets())
                await asyncio.sleep(0.002)
        # A loaded CI once called 13 of 1,500 sites unreachable at the default 30 s;
        # robots.txt's wait for a free socket no longer counts (issue 97), but that the
        # wait was the cause is not shown.  This test is about the sockets: the timeout
        # does not bite.
        policy = FetchPolicy(timeout=300)
        async with RobotGate("LimitBot/1.0", delay=0, policy=policy) as gate:
            client = session = None
            if path == "middleware":
                # A session of the user's, with the connector docs/gate.md tells them to give it.
                import aiohttp
                from robotgate.gate.connections import BoundedConnector, connection_budget
                session = aiohttp.ClientSession(
                    connector=BoundedConnector(connection_budget()),
                    middlewares=(gate.middleware,))
            if path == "httpx":
                import httpx
                from robotgate.integrations.httpx import RobotGateTransport
                client = httpx.AsyncClient(transport=RobotGateTransport(gate))
            sampling = asyncio.ensure_future(sample())
            room = asyncio.Semaphore(concurrency)
            async def visit(address):
                nonlocal ok
                async with room:
                    url = f"http://{address}:{port}/page/0"
                    try:
                        if client is not None:
                            status = (await client.get(url)).status_code
                            ok += status == 200
                            if status != 200:
                                name = f"status {status}"
                                errors[name] = errors.get(name, 0) + 1
                            return
                        if session is not None:
                            async with session.get(url) as resp:
                                await resp.read()
                                ok += resp.status == 200
                            return
                        async with gate.fetch(url) as resp:
                            await resp.read()
                            ok += resp.status == 200
                    except Exception as exc:
                        name = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
                        errors[name] = errors.get(name, 0) + 1
            await asyncio.gather(*(visit(a) for a in addresses))
            done = True
            await sampling
            if client is not None:
                # The sockets httpx's own pool may hold (the gate's session is unused).
                budget = client._transport.inner._pool._max_connections
                await client.aclose()
            elif session is not None:
                budget = session.connector.max_connections
                await session.close()
            else:
                budget = gate.session.connector.max_connections
        print(json.dumps({"ok": ok, "most": most - before, "budget": budget,
                          "errors": errors}))

    path = sys.argv[4]
    asyncio.run(main(int(sys.argv[2]), json.loads(sys.stdin.read()), int(sys.argv[3])))
""")


@pytest.mark.soak  # 3,000 origins in children: CI runs it every time
@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc (Linux)")
@pytest.mark.parametrize(("limit", "origins", "concurrency"),
                         [(256, 1_500, 200), (1024, 1_500, 1_000)])
def test_gate_fetch_holds_the_connection_bound(limit: int, origins: int,
                                               concurrency: int) -> None:
    # More requests at once than the bound: a connection closed to make room, or
    # released closed, keeps its socket until the loop's next pass; a new one opened
    # meanwhile passed the bound (248 sockets at 192) and ran out of descriptors.
    seen = _crawl_at_limit("fetch", limit, origins, concurrency)
    assert seen["budget"] == limit - limit // 4, seen
    assert seen["errors"] == {} and seen["ok"] == origins, seen
    assert seen["most"] <= seen["budget"], seen


@pytest.mark.soak
@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc (Linux)")
@pytest.mark.parametrize(("limit", "concurrency"), [(256, 200), (1024, 1_000)])
def test_the_httpx_transport_holds_the_connection_bound(limit: int, concurrency: int) -> None:
    # The transport's own inner transport is httpx's pool: its sockets within the
    # gate's documented bound (three quarters of the limit), no page lost.  At 1024,
    # more requests at once than the bound: they wait for a place in the pool before
    # their turn (httpcore's own queue timed out at httpx's 5 s pool timeout), and the
    # pool keeps few idle connections (with 768 idle, httpcore's look through them for
    # each request kept the loop too busy to connect within 5 s: 383 of 1,500 lost).
    origins = 1_500
    seen = _crawl_at_limit("httpx", limit, origins, concurrency)
    assert seen["budget"] == limit - limit // 4, seen
    assert seen["errors"] == {} and seen["ok"] == origins, seen
    assert seen["most"] <= seen["budget"], seen


@pytest.mark.soak
@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc (Linux)")
@pytest.mark.parametrize(("limit", "concurrency"), [(256, 200), (1024, 1_000)])
def test_the_middleware_holds_the_connection_bound_of_the_connector_docs_name(
        limit: int, concurrency: int) -> None:
    # gate.middleware in a session of the user's whose connector is the one docs/gate.md
    # names (BoundedConnector(connection_budget())): robots.txt and the pages within it,
    # no page lost (aiohttp's TCPConnector(limit=...) counts no idle connection: its
    # sockets passed the limit and ran out of descriptors).
    origins = 1_500
    seen = _crawl_at_limit("middleware", limit, origins, concurrency)
    assert seen["budget"] == limit - limit // 4, seen
    assert seen["errors"] == {} and seen["ok"] == origins, seen
    assert seen["most"] <= seen["budget"], seen


def _crawl_at_limit(path: str, limit: int, origins: int, concurrency: int) -> dict[str, Any]:
    """One page of each of ``origins`` loopback origins fetched through ``path``
    (``gate.fetch``, ``middleware`` through a session of the user's, or ``httpx``
    through the transport) in a child at ``ulimit -n``
    ``limit``: pages fetched, errors, the most sockets sampled."""
    server = subprocess.Popen(
        [sys.executable, "-m", "testbed.server", "--hosts", str(origins), "--mix", "partial=1",
         "--pages", "2", "--duration", "300"],
        stdout=subprocess.PIPE, env=child_env(), text=True)
    try:
        assert server.stdout is not None
        port = json.loads(server.stdout.readline())["port"]
        fetch = subprocess.run(
            [sys.executable, "-c", _FETCH, str(limit), str(port), str(concurrency), path],
            input=json.dumps(host_addresses(origins)), capture_output=True, text=True,
            env=child_env(), timeout=240)  # hang guard
        assert fetch.returncode == 0, fetch.stderr[-3000:]
        seen = json.loads(fetch.stdout.strip().splitlines()[-1])
    finally:
        server.terminate()
        server.wait(30)
        if server.stdout is not None:
            server.stdout.close()
    return seen


class OutOfFiles(aiohttp.TCPConnector):
    """A connector whose every connection fails as aiohttp's does out of descriptors."""

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        raise aiohttp.ClientConnectorError(req.connection_key,
                                           OSError(errno.EMFILE, "Too many open files"))


async def test_a_page_gate_fetch_could_not_send_is_a_local_failure() -> None:
    # Not aiohttp's bare ClientConnectorError [Too many open files], which a crawler
    # would count as the site's failure and drop the page (issue 97).
    transport = FakeTransport(RobotsResponse(200, {"Content-Type": "text/plain"}, RULES))
    async with (aiohttp.ClientSession(connector=OutOfFiles()) as session,
                RobotGate("LimitBot/1.0", delay=0, session=session,
                          network=Network(robots_transport=transport)) as gate):
        with pytest.raises(LocalFailure) as raised:
            await gate.fetch("http://127.0.0.1:9/page")
        assert raised.value.errno == errno.EMFILE
        assert "127.0.0.1:9/page" in str(raised.value) and "ulimit -n" in str(raised.value)
        assert await gate.allowed("http://127.0.0.1:9/page")  # robots.txt stands


async def test_a_page_the_middleware_could_not_send_is_a_local_failure() -> None:
    # As through gate.fetch: robotgate's LocalFailure, and an aiohttp error still (issue 97).
    transport = FakeTransport(RobotsResponse(200, {"Content-Type": "text/plain"}, RULES))
    async with RobotGate("LimitBot/1.0", delay=0,
                         network=Network(robots_transport=transport)) as gate:
        async with aiohttp.ClientSession(connector=OutOfFiles(),
                                         middlewares=(gate.middleware,)) as session:
            with pytest.raises(aiohttp.ClientError) as raised:
                await session.get("http://127.0.0.1:9/page")
        assert isinstance(raised.value, LocalFailure)
        assert raised.value.errno == errno.EMFILE
        assert "127.0.0.1:9/page" in str(raised.value) and "ulimit -n" in str(raised.value)
        assert await gate.allowed("http://127.0.0.1:9/page")  # robots.txt stands


async def _read_slowly(session: aiohttp.ClientSession, url: str) -> None:
    async with session.get(url) as resp:
        await resp.read()


@contextlib.asynccontextmanager
async def _one_socket_held(whose: str) -> AsyncIterator[
        tuple[BenchServer, RobotGate, aiohttp.ClientSession, asyncio.Future[None]]]:
    """One socket, held 1.5 s by a slow page of host 0 once this yields; robots.txt's
    timeout 0.5 s.  ``whose``: the gate's own session (``Network(max_connections=1)``,
    held by a request around the gate's turns), or a session of the user's
    (``TCPConnector(limit=1)``) given to the gate ("session") or carrying
    ``gate.middleware`` ("middleware").  Yields the server, the gate, the session and the
    request holding the socket."""
    async with BenchServer([HostPlan("allow", page_delay=1.5), HostPlan("partial")]) as server:
        policy = FetchPolicy(timeout=0.5)
        if whose == "gate":
            gate = RobotGate("LimitBot/1.0", delay=0, policy=policy,
                             network=Network(max_connections=1))
            session = gate.session
        elif whose == "session":
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1))
            gate = RobotGate("LimitBot/1.0", delay=0, policy=policy, session=session)
        else:
            gate = RobotGate("LimitBot/1.0", delay=0, policy=policy)
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1),
                                            middlewares=(gate.middleware,))
        async with gate, contextlib.AsyncExitStack() as stack:
            if whose != "gate":
                await stack.enter_async_context(session)
            holding = asyncio.ensure_future(_read_slowly(session, server.url(0, "/page/0")))
            while server.host_stats(0).page_requests == 0:  # hang guard: the test's timeout
                await asyncio.sleep(0.01)
            yield server, gate, session, holding


@pytest.mark.slow
@pytest.mark.parametrize("whose", ["gate", "session", "middleware"])
async def test_robots_txts_wait_for_a_free_socket_is_not_counted_against_its_timeout(
        whose: str) -> None:
    # It waits for the socket, then is fetched (it used to time out waiting: the site
    # disallowed).  The gate's session tells the wait (its trace); on a session of the
    # user's, aiohttp's per-request timers leave it out.
    async with _one_socket_held(whose) as (server, gate, session, holding):
        if whose == "middleware":
            async with asyncio.timeout(30):  # hang guard
                async with session.get(server.url(1, "/page/0")) as resp:
                    assert resp.status == 200
        else:
            assert await asyncio.wait_for(gate.allowed(server.url(1, "/page/0")), 30)
        assert holding.done()  # it did wait for the socket
        await holding
        assert not await gate.allowed(server.url(1, "/private/1"))
        entry = await gate.store.load_robots(server.base_url(1))
        assert entry is not None and entry.outcome == "ok"


@pytest.mark.slow
@pytest.mark.parametrize(("whose", "named"), [("gate", "max_connections"),
                                              ("session", "the session")])
async def test_robots_txts_wait_for_a_free_socket_has_a_bound_of_its_own(
        monkeypatch: pytest.MonkeyPatch, whose: str, named: str) -> None:
    # Past it, the crawler's shortage: LocalFailure, nothing kept for the site.
    monkeypatch.setattr(aiohttp_robots, "SOCKET_WAIT", 0.3)
    async with _one_socket_held(whose) as (server, gate, _, holding):
        with pytest.raises(LocalFailure) as raised:
            await asyncio.wait_for(gate.allowed(server.url(1, "/page/0")), 30)
        assert "free sockets" in str(raised.value) and named in str(raised.value)
        assert await gate.store.load_robots(server.base_url(1)) is None
        await holding
        assert server.host_stats(1).robots_requests == 0
