"""RobotGateTransport: the gate's promises through httpx, checked at loopback servers."""

from __future__ import annotations

import asyncio
import errno
import tracemalloc
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from robotgate import Disallowed, FetchPolicy, LocalFailure, Pacing, RobotGate
from robotgate.policy.fetch_flow import RobotsRequest
from robotgate.urls import InvalidURL
from testbed.server import BenchServer, HostPlan, page_paths
from tests.support.hostile import MIB, RULES, HostileServer, robots_bomb

httpx = pytest.importorskip("httpx")
import anyio  # noqa: E402  (httpx's own dependency)
import httpcore  # noqa: E402  (httpx's own dependency)

from robotgate.integrations.httpx import HttpxRobotsTransport, RobotGateTransport  # noqa: E402

AGENT = "TestBot/1.0 (+https://example.com/bot)"


@pytest.mark.slow
async def test_500_concurrent_requests_one_robots_fetch_per_origin() -> None:
    async with BenchServer([HostPlan("slow", slow_seconds=0.5) for _ in range(5)]) as srv:
        urls = [srv.url(i, p) for i in range(5) for p in page_paths(100)]
        async with RobotGate(AGENT, delay=0, max_per_host=4) as gate, httpx.AsyncClient(
                transport=RobotGateTransport(gate)) as client:

            async def get(url: str) -> int | str:
                try:
                    return (await client.get(url)).status_code
                except Disallowed as no:
                    assert no.decision.rule is not None and no.decision.rule.line == 2
                    return "disallowed"

            results = await asyncio.wait_for(asyncio.gather(*(get(u) for u in urls)), 60)
            assert gate._session is None  # no aiohttp session was ever opened
            assert gate.stats["robots_requests"] == 5
        hosts = [srv.host_stats(i) for i in range(5)]
    assert results.count("disallowed") == 100
    assert results.count(200) == 400
    for host in hosts:
        assert host.robots_requests == 1
        assert host.disallowed_page_requests == 0
        assert host.page_requests == 80


async def test_unreachable_robots_txt_disallows_everything() -> None:
    async with BenchServer([HostPlan("503_retry", retry_after=30), HostPlan("reset")]) as srv:
        async with RobotGate(AGENT, delay=0) as gate, httpx.AsyncClient(
                transport=RobotGateTransport(gate)) as client:
            for i in range(2):
                for path in page_paths(5, 0):
                    with pytest.raises(Disallowed) as no:
                        await client.get(srv.url(i, path))
                    assert no.value.decision.outcome == "unreachable"
        hosts = [srv.host_stats(i) for i in range(2)]
    assert [h.robots_requests for h in hosts] == [1, 1]
    assert [h.page_requests for h in hosts] == [0, 0]


@pytest.mark.slow
async def test_crawl_delay_is_honoured_at_the_server() -> None:
    async with BenchServer([HostPlan("crawl_delay", crawl_delay=0.5)]) as srv:
        async with RobotGate(AGENT, delay=0, max_per_host=3) as gate, httpx.AsyncClient(
                transport=RobotGateTransport(gate)) as client:
            urls = [srv.url(0, p) for p in page_paths(5, 0)]
            await asyncio.wait_for(asyncio.gather(*(client.get(u) for u in urls)), 30)
        host = srv.host_stats(0)
    assert host.page_requests == 5
    assert host.min_interval is not None and host.min_interval >= 0.5
    assert host.page_times[0] - host.robots_times[0] >= 0.5


@pytest.mark.slow
async def test_two_gates_on_redis_share_robots_txt_and_the_pace(
        redis_url: str, prefix: str) -> None:
    from robotgate.store.redis import RedisStore

    async def worker(urls: list[str]) -> None:
        store = RedisStore(redis_url, prefix=prefix)
        # A fleet's requests leave at least interval + margin apart (docs/fleet.md); the
        # margin covers a loaded loop between the last look at the slot and the socket.
        async with RobotGate(AGENT, delay=0, store=store,
                             pacing=Pacing(margin=0.05)) as gate, httpx.AsyncClient(
                transport=RobotGateTransport(gate)) as client:
            await asyncio.gather(*(client.get(u) for u in urls))

    async with BenchServer([HostPlan("crawl_delay", crawl_delay=0.5)]) as srv:
        paths = page_paths(8, 0)
        await asyncio.wait_for(asyncio.gather(
            worker([srv.url(0, p) for p in paths[:4]]),
            worker([srv.url(0, p) for p in paths[4:]])), 30)
        host = srv.host_stats(0)
    assert host.robots_requests == 1
    assert host.page_requests == 8
    assert host.min_interval is not None and host.min_interval >= 0.5


@pytest.mark.slow
async def test_retry_after_rests_one_host_only() -> None:
    plans = [HostPlan("allow", page_status=429, page_retry_after=2, page_status_times=1),
             HostPlan("allow")]
    async with BenchServer(plans) as srv:
        async with RobotGate(AGENT, delay=0) as gate, httpx.AsyncClient(
                transport=RobotGateTransport(gate)) as client:
            urls = [srv.url(0, p) for p in page_paths(3, 0)] + [
                srv.url(1, p) for p in page_paths(20, 0)]
            await asyncio.wait_for(asyncio.gather(*(client.get(u) for u in urls)), 30)
        rested, plain = srv.host_stats(0), srv.host_stats(1)
    assert rested.page_log[0].status == 429
    assert rested.page_times[1] - rested.page_times[0] >= 2.0
    assert plain.page_requests == 20
    assert max(plain.page_times) < rested.page_times[1]


# -- a small server of our own: redirects, and every request's headers -------------------


class Site:
    """robots.txt disallowing /private/, redirects, and a log of every request."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str | None, str | None]] = []  # path, User-Agent, From
        self.port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.log.append((path, request.headers.get("User-Agent"), request.headers.get("From")))
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow: /private/\n")
        if path.startswith("/go/"):
            raise web.HTTPFound(path[len("/go"):])
        return web.Response(text=f"page {path}")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def paths(self) -> list[str]:
        return [p for p, _, _ in self.log]


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    site = Site()
    server = web.Server(site.handle)
    runner = web.ServerRunner(server)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    site.port = runner.addresses[0][1]
    try:
        yield site
    finally:
        await runner.cleanup()


async def test_a_redirect_into_a_disallowed_path_is_refused(site: Site) -> None:
    async with RobotGate(AGENT, delay=0) as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate), follow_redirects=True) as client:
        with pytest.raises(Disallowed) as no:
            await client.get(site.base + "/go/private/secret")
        assert no.value.decision.rule is not None
        resp = await client.get(site.base + "/go/public/page")
        assert resp.status_code == 200 and resp.text == "page /public/page"
        assert [str(r.url) for r in resp.history] == [site.base + "/go/public/page"]
    assert "/private/secret" not in site.paths()
    assert site.paths().count("/robots.txt") == 1


async def test_the_gates_user_agent_and_from_on_every_request(site: Site) -> None:
    async with RobotGate(AGENT, from_="ops@example.com", delay=0) as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate), follow_redirects=True,
            headers={"User-Agent": "something-else/1"}) as client:
        await client.get(site.base + "/a")
        await client.get(site.base + "/go/b")
        await client.get(site.base + "/c", headers={"User-Agent": "another/2"})
    assert site.paths() == ["/robots.txt", "/a", "/go/b", "/b", "/c"]
    assert {(ua, sender) for _, ua, sender in site.log} == {(AGENT, "ops@example.com")}


async def test_pace_by_ip_resolves_without_aiohttp(site: Site) -> None:
    async with RobotGate(AGENT, delay=0, pace_by="ip") as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate)) as client:
        url = f"http://localhost:{site.port}/a"
        assert (await client.get(url)).status_code == 200
        assert gate.pace_key(url).startswith("ip:")
        assert gate.pace_key(url) != "ip:localhost"  # resolved, by the system resolver
        assert gate._session is None


# -- without a network: httpx's MockTransport as the inner transport -----------------------


async def test_a_redirect_from_a_public_site_into_loopback_is_refused() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.path == "/robots.txt":
            return httpx.Response(200, text="User-agent: *\nAllow: /\n")
        return httpx.Response(302, headers={"Location": "http://127.0.0.1/admin"})

    async with RobotGate(AGENT, delay=0) as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate, httpx.MockTransport(answer)),
            follow_redirects=True) as client:
        with pytest.raises(Disallowed) as no:
            await client.get("http://93.184.216.34/start")
    assert no.value.decision.outcome == "redirect-refused"
    assert "non-public address" in no.value.decision.reason
    assert seen == ["http://93.184.216.34/robots.txt", "http://93.184.216.34/start"]


async def test_robots_transport_refuses_private_hops_and_caps_the_body() -> None:
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(str(request.url))
        assert request.headers["User-Agent"] == AGENT
        return httpx.Response(200, content=b"x" * 100_000)

    robots = HttpxRobotsTransport(httpx.MockTransport(answer), {"User-Agent": AGENT})
    refused = await robots.send(RobotsRequest("http://127.0.0.1/robots.txt",
                                              previous="http://93.184.216.34/robots.txt"))
    assert refused.refused is not None and sent == []
    assert refused.refused.startswith("robots.txt refused a redirect")
    tdmrep = await robots.send(RobotsRequest("http://127.0.0.1/.well-known/tdmrep.json",
                                             previous="http://93.184.216.34/robots.txt",
                                             name="tdmrep.json"))
    assert tdmrep.refused is not None and tdmrep.refused.startswith("tdmrep.json refused")
    assert sent == []
    capped = await robots.send(RobotsRequest("http://93.184.216.34/robots.txt", max_bytes=1000))
    assert capped.status == 200 and capped.body == b"x" * 1000


class Body(httpx.AsyncByteStream):
    """A streamed body (MockTransport reads a plain one at once)."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"body"


async def test_the_slot_is_held_until_the_body_is_read() -> None:
    started: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        started.append(request.url.path)
        if request.url.path == "/robots.txt":
            return httpx.Response(200, text="User-agent: *\nAllow: /\n")
        return httpx.Response(200, stream=Body())

    async with RobotGate(AGENT, delay=0, max_per_host=1) as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate, httpx.MockTransport(answer))) as client:
        async with client.stream("GET", "http://93.184.216.34/one") as resp:
            second = asyncio.ensure_future(client.get("http://93.184.216.34/two"))
            await asyncio.sleep(0.2)
            assert started == ["/robots.txt", "/one"]  # /two waits for /one's body
            await resp.aread()
        assert (await asyncio.wait_for(second, 10)).status_code == 200
    assert started == ["/robots.txt", "/one", "/two"]


async def test_aclose_closes_the_inner_transport_not_the_gate() -> None:
    class Inner(httpx.AsyncBaseTransport):
        closed = False

        async def aclose(self) -> None:
            self.closed = True

    inner = Inner()
    async with RobotGate(AGENT) as gate:
        async with httpx.AsyncClient(transport=RobotGateTransport(gate, inner)):
            pass
        assert inner.closed
        assert not gate._closed


# -- what a server sends that the caller did not ask for -------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("coding", ["gzip", "br"])
async def test_a_compressed_robots_txt_is_inflated_only_up_to_the_limit(coding: str) -> None:
    # 64 MiB of comments after the rules, compressed to a few KB, sent although
    # the gate asked for identity: read as far as the 500 KiB limit, no further.
    robots_bomb(coding)  # made (and cached) before memory is traced
    async with HostileServer(robots_coding=coding) as srv:
        robots = HttpxRobotsTransport(httpx.AsyncHTTPTransport(), {"User-Agent": AGENT})
        tracemalloc.start()
        try:
            got = await robots.send(RobotsRequest(srv.url("/robots.txt")))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            await robots.inner.aclose()
        async with RobotGate(AGENT, delay=0) as gate, httpx.AsyncClient(
                transport=RobotGateTransport(gate)) as client:
            assert (await client.get(srv.url("/page/1"))).status_code == 200
            with pytest.raises(Disallowed) as no:
                await client.get(srv.url("/private/1"))
    assert got.body is not None and len(got.body) == 500 * 1024
    assert got.body.startswith(RULES)
    assert peak < 8 * MIB  # inflating a whole chunk as httpx does takes tens of MiB
    assert no.value.decision.rule is not None and no.value.decision.rule.line == 2
    assert "/private/1" not in srv.paths()


async def test_a_redirect_to_an_unusable_url_raises_what_plain_httpx_raises() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/robots.txt":
            return httpx.Response(200, text="User-agent: *\nAllow: /\n")
        return httpx.Response(302, headers={"Location": "ftp://93.184.216.34/file"})

    async with RobotGate(AGENT, delay=0) as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate, httpx.MockTransport(answer)),
            follow_redirects=True) as client:
        # The server's Location is the server's error: one a crawler catching
        # httpx.HTTPError handles, as without the gate.
        with pytest.raises(httpx.UnsupportedProtocol, match=r"ftp://93\.184\.216\.34/file"):
            await client.get("http://93.184.216.34/start")
        # The caller's own URL is the caller's error, as everywhere in robotgate (and
        # httpx's UnsupportedProtocol, as plain httpx raises).
        with pytest.raises(InvalidURL, match=r"ftp://93\.184\.216\.34/x"):
            await client.get("ftp://93.184.216.34/x")


@pytest.mark.parametrize("url", ["ftp://user:s3cret@127.0.0.1/x", "http://user:s3cret@127.0.0.1:99999/x"])
async def test_the_callers_bad_url_is_httpxs_unsupported_protocol_too(url: str) -> None:
    # Plain httpx raises UnsupportedProtocol from its transport for a URL it cannot
    # send: an `except httpx.HTTPError` written for it catches the gate's error too.
    async with RobotGate(AGENT, delay=0) as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate, httpx.MockTransport(
                lambda request: httpx.Response(200)))) as client:
        with pytest.raises(httpx.UnsupportedProtocol) as info:
            await client.get(url)
    assert isinstance(info.value, InvalidURL)  # and robotgate's, as before
    assert info.value.request.url == httpx.URL(url)
    assert "s3cret" not in str(info.value) and "s3cret" not in str(info.value.url)


async def test_async_with_client_enters_and_exits_the_inner_transport() -> None:
    seen: list[str] = []

    class Inner(httpx.AsyncBaseTransport):
        async def __aenter__(self) -> Inner:
            seen.append("enter")
            return self

        async def __aexit__(self, *exc: object) -> None:
            seen.append("exit")

    async with RobotGate(AGENT) as gate:
        async with httpx.AsyncClient(transport=RobotGateTransport(gate, Inner())):
            assert seen == ["enter"]
        assert seen == ["enter", "exit"]
        assert not gate._closed


@pytest.mark.slow
async def test_robots_txts_wait_for_a_connection_of_the_pool_is_not_counted() -> None:
    # A pool of one connection, held 1.5 s by a slow page sent around the gate's turns;
    # robots.txt's timeout 0.5 s: it waits for the connection, then is fetched (it used
    # to time out waiting: the site disallowed).
    inner = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=1))
    async with (BenchServer([HostPlan("allow", page_delay=1.5), HostPlan("partial")]) as srv,
                RobotGate(AGENT, delay=0, policy=FetchPolicy(timeout=0.5)) as gate,
                httpx.AsyncClient(transport=RobotGateTransport(gate, inner)) as client):
        async def hold() -> None:
            resp = await inner.handle_async_request(httpx.Request("GET", srv.url(0, "/page/0")))
            await resp.aread()
            await resp.aclose()

        holding = asyncio.ensure_future(hold())
        while srv.host_stats(0).page_requests == 0:  # hang guard: the test's timeout
            await asyncio.sleep(0.01)
        resp = await asyncio.wait_for(client.get(srv.url(1, "/page/0")), 30)
        assert resp.status_code == 200
        assert holding.done()  # it did wait for the connection
        await holding
        with pytest.raises(Disallowed):
            await client.get(srv.url(1, "/private/1"))


class _ClosesItsIdle(httpx.AsyncBaseTransport):
    """httpcore's pool at its limit, once: the idle connection it gave the request is
    closed (for another origin's) before the request is written on it."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.pages = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/page/"):
            self.pages += 1
            if self.pages == 1:
                try:
                    raise anyio.ClosedResourceError
                except anyio.ClosedResourceError as closed:
                    raise httpx.ReadError("", request=request) from closed
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_page_the_pool_closed_the_connection_under_is_sent_again() -> None:
    # Nothing was sent: the pool's shortage, not the site's failure (it used to reach
    # the caller as a bare httpx.ReadError).
    inner = _ClosesItsIdle()
    async with (BenchServer([HostPlan("allow")]) as srv,
                RobotGate(AGENT, delay=0) as gate,
                httpx.AsyncClient(transport=RobotGateTransport(gate, inner)) as client):
        resp = await asyncio.wait_for(client.get(srv.url(0, "/page/0")), 30)
        assert resp.status_code == 200
        assert inner.pages == 2 and srv.host_stats(0).page_requests == 1


async def test_a_page_the_transport_could_not_send_for_lack_of_descriptors_is_a_local_failure(
        ) -> None:
    # As httpx's own transport raises it out of descriptors: httpx.ConnectError from
    # httpcore's, from the OSError.  Not the site's failure: robotgate's LocalFailure, and
    # still an httpx error, so that `except httpx.HTTPError` catches it (issue 97).
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/robots.txt":
            return httpx.Response(200, text="User-agent: *\nAllow: /\n")
        try:
            try:
                raise OSError(errno.EMFILE, "Too many open files")
            except OSError as exc:
                raise httpcore.ConnectError(str(exc)) from exc
        except httpcore.ConnectError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc

    async with RobotGate(AGENT, delay=0) as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate, httpx.MockTransport(answer))) as client:
        with pytest.raises(httpx.HTTPError) as raised:
            await client.get("http://user:secret@127.0.0.1:9/page")
        assert isinstance(raised.value, LocalFailure)
        assert isinstance(raised.value, httpx.ConnectError)  # as plain httpx's
        assert raised.value.errno == errno.EMFILE
        assert raised.value.request.url.path == "/page"
        assert "127.0.0.1:9/page" in str(raised.value) and "ulimit -n" in str(raised.value)
        assert "secret" not in str(raised.value)
        assert await gate.allowed("http://127.0.0.1:9/page")  # robots.txt stands


@pytest.mark.parametrize("closed", [True, False])
async def test_a_request_the_pool_has_no_place_for_waits_for_one_or_is_a_local_failure(
        closed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # The transport's own pool, of one socket here (768 at ulimit -n 1024): a streamed
    # response holds it.  Another origin's page (its robots.txt read already) waits for a
    # place before its turn, past the client's pool timeout, and is sent once the place
    # is given back; never given back, it is this machine's shortage after SOCKET_WAIT.
    # Before: httpcore's own queue raised a bare httpx.PoolTimeout at the pool timeout
    # (at ulimit -n 1024, 1,000 at once: pages lost).
    import robotgate.integrations.httpx as transport_module

    monkeypatch.setattr(transport_module, "connection_budget", lambda: 1)
    monkeypatch.setattr(transport_module, "SOCKET_WAIT", 0.5)
    timeout = httpx.Timeout(10, pool=0.2)
    async with (BenchServer([HostPlan("allow"), HostPlan("allow")]) as srv,
                RobotGate(AGENT, delay=0) as gate,
                httpx.AsyncClient(transport=RobotGateTransport(gate), timeout=timeout) as client):
        assert (await client.get(srv.url(1, "/page/0"))).status_code == 200
        async with client.stream("GET", srv.url(0, "/page/0")) as held:
            second = asyncio.ensure_future(client.get(srv.url(1, "/page/1")))
            if not closed:
                with pytest.raises(httpx.ConnectError) as raised:
                    await asyncio.wait_for(second, 10)
                assert isinstance(raised.value, LocalFailure)
                assert "free connections" in str(raised.value)
                return
            await asyncio.sleep(0.3)  # past the pool timeout, within SOCKET_WAIT
            assert not second.done()
            await held.aread()
        assert (await asyncio.wait_for(second, 10)).status_code == 200
