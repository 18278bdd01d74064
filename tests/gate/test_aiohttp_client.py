"""The aiohttp adapter (src/robotgate/gate/aiohttp_client.py): where the middleware's
robots.txt requests go."""

from __future__ import annotations

import asyncio
import itertools
import time
import tracemalloc
from typing import Literal

import aiohttp
import pytest
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

import robotgate
from robotgate import BodyTooLarge, Disallowed, GateClosed, InvalidURL, RobotGate
from robotgate.gate.aiohttp_client import MAX_BODY, AiohttpRobotsTransport, Handler, yarl_form
from robotgate.policy.fetch import FetchPolicy
from robotgate.policy.fetch_flow import RobotsRequest
from testbed.redis_server import free_port
from tests.support.arrivals import Arrivals
from tests.support.hostile import MIB, HostileServer, robots_bomb

AGENT = "ViaBot/1.0"
ROBOTS = "User-agent: *\nDisallow: /private\n"


class Site:
    """One loopback site that records which client port sent each request."""

    def __init__(self, robots_status: int = 200, robots_wait: float = 0.0,
                 robots: str = ROBOTS) -> None:
        self.robots = robots
        self.seen: list[tuple[str, int]] = []
        self.headers: list[CIMultiDict[str]] = []  # each request's, in order
        self.robots_status = robots_status
        self.robots_wait = robots_wait
        self.robots_arrived = asyncio.Event()
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.seen.append((request.path, peer[1] if peer else -1))
        self.headers.append(request.headers.copy())
        if request.path == "/robots.txt":
            self.robots_arrived.set()
            if self.robots_wait and len(self.seen) == 1:
                await asyncio.sleep(self.robots_wait)
            return web.Response(status=self.robots_status, text=self.robots)
        if request.path == "/hop":
            raise web.HTTPFound("/page")
        return web.Response(text="page")


async def serve(site: Site) -> web.AppRunner:
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", site.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = runner.addresses[0][1]
    site.url = f"http://127.0.0.1:{port}"
    return runner


async def test_the_middleware_asks_robots_txt_over_the_users_own_connection() -> None:
    site = Site()
    runner = await serve(site)
    try:
        async with RobotGate(AGENT, delay=0) as gate, aiohttp.ClientSession(
                middlewares=[gate.middleware]) as session:
            async with session.get(site.url + "/page") as resp:
                assert resp.status == 200
            with pytest.raises(Disallowed):
                await session.get(site.url + "/private/secret")
    finally:
        await runner.cleanup()
    assert [path for path, _ in site.seen] == ["/robots.txt", "/page"]
    assert site.seen[0][1] == site.seen[1][1]  # one connection, not one per session


@pytest.mark.parametrize("given", [False, True], ids=["owned session", "given session"])
async def test_fetch_sends_its_agent_over_the_sessions_and_the_calls_headers(given: bool) -> None:
    # robots.txt was read for this agent: every hop of gate.fetch says so, and the
    # session's and the call's other headers still go out.
    site = Site()
    runner = await serve(site)
    try:
        theirs = {"User-Agent": "Theirs/1", "X-Session": "s"}
        async with aiohttp.ClientSession(headers=theirs) as session, RobotGate(
                AGENT, from_="ops@example.com", delay=0,
                session=session if given else None) as gate:
            plain = await gate.fetch(site.url + "/page")
            called = await gate.fetch(site.url + "/hop",
                                      headers={"user-agent": "Call/2", "X-Call": "c"})
    finally:
        await runner.cleanup()
    assert plain.status == called.status == 200
    assert [path for path, _ in site.seen] == ["/robots.txt", "/page", "/hop", "/page"]
    for sent in site.headers:
        assert sent.getall("User-Agent") == [AGENT] and sent.getall("From") == ["ops@example.com"]
    assert [h.get("X-Session") for h in site.headers] == ["s" if given else None] * 4
    assert [h.get("X-Call") for h in site.headers] == [None, None, "c", "c"]


@pytest.mark.parametrize("traced", [False, True], ids=["plain session", "traced session"])
async def test_a_fetched_body_is_read_whole_and_its_connection_kept(traced: bool) -> None:
    # A page that came whole with its headers is taken as it is: the response reads
    # again as aiohttp's does, its connection goes back to the pool for the next page,
    # and a session's trace still hears the body read.
    site = Site()
    runner = await serve(site)
    heard: list[bytes] = []

    async def chunk(session: aiohttp.ClientSession, ctx: object,
                    params: aiohttp.TraceResponseChunkReceivedParams) -> None:
        heard.append(params.chunk)

    trace = aiohttp.TraceConfig()
    trace.on_response_chunk_received.append(chunk)
    try:
        async with aiohttp.ClientSession(trace_configs=[trace] if traced else None) as session, \
                RobotGate(AGENT, delay=0, session=session) as gate:
            first = await gate.fetch(site.url + "/page")
            async with gate.fetch(site.url + "/page") as second:
                assert await second.text() == "page"
            assert await first.read() == b"page" and await first.read() == b"page"
    finally:
        await runner.cleanup()
    assert [path for path, _ in site.seen] == ["/robots.txt", "/page", "/page"]
    assert len({port for _, port in site.seen}) == 1  # one connection, kept alive
    assert heard == ([b"page", b"page"] if traced else [])


async def test_fetch_on_a_session_with_middlewares_runs_none_of_them() -> None:
    # A user's session may carry the gate's own middleware (and others): gate.fetch
    # checks and paces each hop itself, so none of them runs, with or without the
    # call's headers; each request goes out once, with the gate's agent.
    site = Site()
    runner = await serve(site)
    ran: list[str] = []

    async def counting(req: aiohttp.ClientRequest, handler: Handler) -> aiohttp.ClientResponse:
        ran.append(req.url.path)
        return await handler(req)

    try:
        async with RobotGate(AGENT, delay=0) as gate, aiohttp.ClientSession(
                middlewares=[counting, gate.middleware]) as session, RobotGate(
                AGENT, delay=0, session=session) as gate_on_it:
            plain = await asyncio.wait_for(gate_on_it.fetch(site.url + "/hop"), 10)
            called = await asyncio.wait_for(
                gate_on_it.fetch(site.url + "/page", headers={"X-Call": "c"}), 10)
    finally:
        await runner.cleanup()
    assert plain.status == called.status == 200
    assert ran == []
    assert [path for path, _ in site.seen] == ["/robots.txt", "/hop", "/page", "/page"]
    assert all(h.getall("User-Agent") == [AGENT] for h in site.headers)
    assert site.headers[-1].get("X-Call") == "c"


async def reached(srv: HostileServer, path: str) -> None:
    """Wait until a request for ``path`` has reached the server."""
    for _ in range(200):
        if path in srv.paths():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never reached the server")


async def test_too_many_redirects_is_robotgates_error_and_aiohttps() -> None:
    site = Site()
    runner = await serve(site)
    try:
        async with RobotGate(AGENT, delay=0) as gate:
            login = site.url.replace("http://", "http://user:secret@")
            with pytest.raises(robotgate.TooManyRedirects) as raised:
                await gate.fetch(login + "/hop", max_redirects=0)
    finally:
        await runner.cleanup()
    many = raised.value
    assert isinstance(many, robotgate.Error) and isinstance(many, aiohttp.TooManyRedirects)
    assert many.limit == 0 and [r.status for r in many.history] == [302]
    assert "secret" not in str(many) and "secret" not in many.url, str(many)
    assert [path for path, _ in site.seen] == ["/robots.txt", "/hop"]


@pytest.mark.parametrize("first", ["options", "no redirects", "no hops"])
async def test_a_new_host_s_first_page_goes_with_the_call_s_options(first: str) -> None:
    # A new host's first page waits for robots.txt: the call's redirect options must
    # reach it as any other page's (a lever that sends it from elsewhere carries them).
    site = Site()
    runner = await serve(site)
    try:
        async with RobotGate(AGENT, delay=0) as gate:
            if first == "no hops":
                with pytest.raises(aiohttp.TooManyRedirects):
                    await gate.fetch(site.url + "/hop", max_redirects=0)
            else:
                moved = await gate.fetch(site.url + "/hop", allow_redirects=first == "options")
                assert moved.status == (200 if first == "options" else 302)
            again = await gate.fetch(site.url + "/hop", allow_redirects=False)
    finally:
        await runner.cleanup()
    assert again.status == 302
    hops = ["/hop", "/page"] if first == "options" else ["/hop"]
    assert [path for path, _ in site.seen] == ["/robots.txt", *hops, "/hop"]


@pytest.mark.slow
async def test_a_new_host_s_first_page_cancelled_on_its_way_lets_its_slot_go() -> None:
    # Its server's only slot, taken after robots.txt, is let go when the caller is cancelled.
    async with HostileServer() as srv, RobotGate(AGENT, delay=0, max_per_host=1) as gate:
        asking = asyncio.ensure_future(gate.fetch(srv.url("/slow/30")))
        await reached(srv, "/slow/30")
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking
        # The one slot of the server is free again: the slow request was ended.
        page = await asyncio.wait_for(gate.fetch(srv.url("/page/1")), 5)
        assert page.status == 200


async def test_a_session_that_raises_for_status_still_reads_a_missing_robots_txt() -> None:
    site = Site(robots_status=404)
    runner = await serve(site)
    try:
        async with RobotGate(AGENT, delay=0) as gate, aiohttp.ClientSession(
                middlewares=[gate.middleware], raise_for_status=True) as session:
            async with session.get(site.url + "/private/anything") as resp:
                assert resp.status == 200  # 404: no rules, everything allowed
            decision = await gate.decide(site.url + "/private/x")
            assert decision.allowed and decision.outcome == "unavailable"
    finally:
        await runner.cleanup()


@pytest.mark.slow
async def test_a_user_session_closed_mid_fetch_does_not_poison_robots_txt() -> None:
    site = Site(robots_wait=0.5)
    runner = await serve(site)
    try:
        async with RobotGate(AGENT, delay=0) as gate:
            first = aiohttp.ClientSession(middlewares=[gate.middleware])
            asking = asyncio.ensure_future(first.get(site.url + "/page"))
            await asyncio.wait_for(site.robots_arrived.wait(), 10)
            async with aiohttp.ClientSession(middlewares=[gate.middleware]) as second:
                waiting = asyncio.ensure_future(second.get(site.url + "/page"))
                await asyncio.sleep(0.05)
                await first.close()  # the robots.txt request in flight goes down with it
                # Its own request fails however aiohttp fails on a closed session.
                lost = await asyncio.wait_for(asyncio.gather(asking, return_exceptions=True), 10)
                assert isinstance(lost[0], BaseException)
                resp = await asyncio.wait_for(waiting, 10)
                assert resp.status == 200
                resp.release()
            decision = await gate.decide(site.url + "/private/x")
            assert not decision.allowed and decision.rule is not None  # the rules, read
    finally:
        await runner.cleanup()
    assert [path for path, _ in site.seen].count("/robots.txt") == 2


@pytest.mark.slow
@pytest.mark.parametrize("session", ["the gate's", "yours"])
async def test_the_robots_transport_ends_a_request_at_its_deadline(session: str) -> None:
    # The fetcher adds no timer for this transport: its own request must stop.  Through a
    # session of yours aiohttp's timers leave the wait for a socket out, and a body
    # dripping faster than sock_read is ended by its own deadline.
    async with (HostileServer() as srv, aiohttp.ClientSession() as yours,
                RobotGate(AGENT, delay=0,
                          session=yours if session == "yours" else None) as gate):
        transport = AiohttpRobotsTransport(gate._client)
        assert transport.enforces_deadline
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(asyncio.TimeoutError):
            await transport.send(RobotsRequest(srv.url("/trickle/5"),
                                               deadline=time.time() + 0.3))
        assert loop.time() - start < 2.0  # not the 5 s the body would take


async def test_a_refused_hop_names_the_file_fetched() -> None:
    # A public site's redirect into a loopback literal: refused before any request.
    async with RobotGate(AGENT, delay=0) as gate:
        transport = AiohttpRobotsTransport(gate._client)
        for path, name in (("/robots.txt", "robots.txt"),
                           ("/.well-known/tdmrep.json", "tdmrep.json")):
            answer = await transport.send(RobotsRequest(
                "http://127.0.0.1" + path, previous="http://93.184.216.34" + path, name=name))
            assert answer.refused is not None
            assert answer.refused.startswith(f"{name} refused a redirect from a public site")


@pytest.mark.slow
@pytest.mark.parametrize("coding", ["gzip", "br"])
async def test_a_compressed_robots_txt_is_read_as_far_as_the_limit(coding: str) -> None:
    # As through httpx and Scrapy (tests/integrations): the raw bytes are inflated
    # within the limit, so 64 MiB of comments compressed to a few KB cost a few MiB.
    robots_bomb(coding)  # made before memory is traced
    async with HostileServer(robots_coding=coding) as srv, RobotGate(AGENT, delay=0) as gate:
        tracemalloc.start()
        try:
            decision = await gate.decide(srv.url("/private/1"))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        entry = await gate.robots_entry(srv.url("/"))
    assert not decision.allowed and decision.rule is not None and decision.rule.line == 2
    assert entry.body is not None and len(entry.body) == 500 * 1024
    assert peak < 8 * MIB


async def test_a_robots_txt_that_came_whole_is_still_read_only_to_the_limit() -> None:
    # 3 KB arrive with their headers: read from the buffer at once, to max_bytes only.
    site = Site(robots="User-agent: *\n" + "#" * 1000 + "\nDisallow: /x\n" + "#" * 2000 + "\n"
                       "Disallow: /y\n")
    runner = await serve(site)
    try:
        async with RobotGate(AGENT, delay=0, policy=FetchPolicy(max_bytes=1100)) as gate:
            assert not await gate.allowed(site.url + "/x")
            assert await gate.allowed(site.url + "/y")  # past the limit: never read
            entry = await gate.robots_entry(site.url + "/")
        assert entry.body is not None and len(entry.body) == 1100
    finally:
        await runner.cleanup()


async def test_a_robots_txt_request_whose_connection_drops_is_not_sent_again() -> None:
    # aiohttp sends a GET again when its connection drops before the answer: for
    # robots.txt that would be a second request; the origin is unreachable instead.
    asked: list[bytes] = []

    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        asked.append((await reader.readuntil(b"\r\n\r\n")).split(b" ", 2)[1])
        writer.close()  # no answer

    server = await asyncio.start_server(drop, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with RobotGate(AGENT, delay=0) as gate:
            decision = await gate.decide(f"http://127.0.0.1:{port}/page")
    finally:
        server.close()
        await server.wait_closed()
    assert asked == [b"/robots.txt"]
    assert not decision.allowed and decision.outcome == "unreachable"
    assert "ServerDisconnectedError" in decision.reason


async def test_a_robots_txt_request_that_cannot_connect_says_so() -> None:
    # Never sent, so nothing to send again: the connector's own error is the reason.
    async with RobotGate(AGENT, delay=0) as gate:
        decision = await gate.decide(f"http://127.0.0.1:{free_port()}/page")
    assert not decision.allowed and decision.outcome == "unreachable"
    assert "(ClientConnectorError" in decision.reason


@pytest.mark.slow
async def test_a_robots_txt_slower_than_the_timeout_is_unreachable() -> None:
    site = Site(robots_wait=5)
    runner = await serve(site)
    try:
        async with RobotGate(AGENT, delay=0, policy=FetchPolicy(timeout=0.3)) as gate:
            start = asyncio.get_running_loop().time()
            decision = await gate.decide(site.url + "/page")
            assert asyncio.get_running_loop().time() - start < 2.0
            assert not decision.allowed and "did not answer within 0.3s" in decision.reason
    finally:
        await runner.cleanup()


async def test_a_streamed_fetch_holds_its_servers_slot_until_its_block_exits() -> None:
    async with HostileServer() as srv, RobotGate(AGENT, delay=0, max_per_host=1) as gate:
        async with gate.fetch(srv.url("/sized/100"), stream=True) as resp:
            waiting = asyncio.ensure_future(gate.fetch(srv.url("/page/1")))
            await asyncio.sleep(0.2)
            assert not waiting.done()  # the server's one slot is this block's
            assert len(await resp.content.read()) == 100  # unread until now
        assert (await asyncio.wait_for(waiting, 5)).status == 200
        with pytest.raises(KeyError):  # the block's error is the caller's
            async with gate.fetch(srv.url("/sized/10"), stream=True):
                raise KeyError("mine")
        # Its slot was let go all the same.
        assert (await asyncio.wait_for(gate.fetch(srv.url("/page/2")), 5)).status == 200


@pytest.mark.slow
async def test_fetch_refuses_a_body_longer_than_max_bytes_and_reads_one_within_it() -> None:
    mib = 1 << 20
    async with HostileServer() as srv, RobotGate(AGENT, delay=0) as gate:
        # A gzip bomb: 16 MiB once decoded, a few KB on the wire.
        with pytest.raises(BodyTooLarge) as caught:
            await gate.fetch(srv.url("/bomb/gzip/16").replace("//", "//u:secret@"),
                             max_bytes=mib)
        assert caught.value.limit == mib and "secret" not in str(caught.value)
        assert "stream=True" in str(caught.value)
        with pytest.raises(BodyTooLarge):
            await gate.fetch(srv.url(f"/sized/{mib + 1}"), max_bytes=mib)
        with pytest.raises(BodyTooLarge):  # whole in its first packet, still too long
            await gate.fetch(srv.url("/sized/100"), max_bytes=99)
        assert len(await (await gate.fetch(srv.url("/sized/100"), max_bytes=100)).read()) == 100
        exact = await gate.fetch(srv.url(f"/sized/{mib}"), max_bytes=mib)
        assert len(await exact.read()) == mib
        bomb = await gate.fetch(srv.url("/bomb/br/1"), max_bytes=mib)
        assert await bomb.read() == b"\0" * mib and len(await bomb.text()) == mib
        # No length given and no end: the default limit ends it.
        with pytest.raises(BodyTooLarge) as endless:
            await gate.fetch(srv.url("/endless"))
        assert endless.value.limit == MAX_BODY
        unlimited = await gate.fetch(srv.url("/bomb/gzip/2"), max_bytes=None)
        assert len(await unlimited.read()) == 2 * mib
        page = await gate.fetch(srv.url("/page/1"))  # the gate and the pool go on
        assert page.status == 200 and await page.text()


async def test_fetch_takes_a_yarl_url_as_aiohttp_does() -> None:
    async with HostileServer() as srv, RobotGate(AGENT, delay=0) as gate:
        page = await gate.fetch(URL(srv.url("/page/1")))
        assert page.status == 200
        with pytest.raises(Disallowed):
            await gate.fetch(URL(srv.url("/private/1")))
    assert srv.paths().count("/private/1") == 0


@pytest.mark.slow
async def test_close_while_a_request_awaits_its_headers_raises_gate_closed() -> None:
    async with HostileServer() as srv:
        gate = RobotGate(AGENT, delay=0)
        await gate.open()
        asking = asyncio.ensure_future(gate.fetch(srv.url("/slow/30")))
        await reached(srv, "/slow/30")
        await gate.close()
        with pytest.raises(GateClosed, match="closed while requesting"):
            await asyncio.wait_for(asking, 5)


@pytest.mark.parametrize(("dialect", "rule", "path", "sent"), [
    ("rfc9309", "/a%20b", "/a b", "/a%20b"),
    ("rfc9309", "/a%7Cb", "/a|b", "/a%7Cb"),
    ("rfc9309", "/a!b", "/a%21b", "/a!b"),
    ("rfc9309", "/s?q=a+b", "/s?q=a b", "/s?q=a+b"),
    ("classic", "/private", "/%70rivate", "/private"),
    ("classic", "/a~b", "/a%7eb", "/a~b"),
])
async def test_a_url_is_judged_as_aiohttp_sends_it(
        dialect: Literal["rfc9309", "classic"], rule: str, path: str, sent: str) -> None:
    # yarl rewrites the URL before it goes out: the rule for what goes out decides.
    site = Site(robots=f"User-agent: *\nDisallow: {rule}\n")
    runner = await serve(site)
    try:
        async with RobotGate(AGENT, delay=0, dialect=dialect) as gate:
            assert yarl_form(site.url + path) == site.url + sent
            with pytest.raises(Disallowed):
                await gate.fetch(site.url + path)
            async with aiohttp.ClientSession(middlewares=[gate.middleware]) as session:
                with pytest.raises(Disallowed):
                    await session.get(site.url + path)
    finally:
        await runner.cleanup()
    assert [p for p, _ in site.seen] == ["/robots.txt"]


async def test_the_calls_params_are_judged_with_the_url() -> None:
    # aiohttp adds params= to the URL it sends: robots.txt judges that URL, and a hop's
    # Location is the whole next URL (no params added to it).
    site = Site(robots="User-agent: *\nDisallow: /*secret\n")
    runner = await serve(site)
    try:
        async with RobotGate(AGENT, delay=0) as gate:
            with pytest.raises(Disallowed):
                await gate.fetch(site.url + "/page", params={"q": "secret"})
            resp = await gate.fetch(site.url + "/hop", params={"q": "a b"})
            assert resp.status == 200
    finally:
        await runner.cleanup()
    assert [p for p, _ in site.seen] == ["/robots.txt", "/hop", "/page"]
    assert str(resp.url) == site.url + "/page"


@pytest.mark.parametrize("url", ["https://9[%]@?x", "http://u:p@[%]@h/x"])
async def test_a_url_yarl_cannot_parse_is_invalid_url(url: str) -> None:
    # yarl raises IndexError on some authorities: gate.fetch raises InvalidURL.
    async with RobotGate("T/1", delay=0) as gate:
        with pytest.raises(InvalidURL) as info:
            await gate.fetch(url)
        assert "p@" not in str(info.value)
        assert info.value.__context__ is None  # not yarl's error, which may show the password


async def test_a_url_the_client_refuses_is_invalid_url_without_its_password(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Should the client refuse a URL robotgate accepted, its error (which quotes the
    # URL, password and all) becomes InvalidURL with the password hidden.
    server = Arrivals()
    base = f"http://user:s3cret@127.0.0.1:{await server.listen()}"
    try:
        async with RobotGate("T/1", delay=0) as gate:
            assert await gate.allowed(f"{base}/x")  # robots.txt cached: the page is sent

            def refuse(self: aiohttp.ClientSession, method: str, url: str,
                       **kwargs: object) -> None:
                raise aiohttp.InvalidUrlClientError(url)

            monkeypatch.setattr(aiohttp.ClientSession, "request", refuse)
            with pytest.raises(InvalidURL) as info:
                await gate.fetch(f"{base}/x")
            assert "s3cret" not in str(info.value) and "user:***@" in str(info.value)
            assert info.value.__cause__ is None and info.value.__suppress_context__
    finally:
        await server.close()


@pytest.mark.parametrize(("url", "kind"), [
    ("ftp://user:s3cret@127.0.0.1/x", aiohttp.NonHttpUrlClientError),
    ("http://user:s3cret@127.0.0.1:99999/x", aiohttp.InvalidUrlClientError),
    ("https://user:s3cret@[%]@h/x", aiohttp.InvalidUrlClientError),
])
async def test_a_bad_url_is_aiohttps_own_error_too(url: str, kind: type[Exception]) -> None:
    # What plain aiohttp raises for the URL (`except aiohttp.ClientError` catches it),
    # and robotgate's InvalidURL, the password hidden.
    async with RobotGate("T/1", delay=0) as gate:
        for params in (None, {"q": "1"}):
            with pytest.raises(kind) as info:
                await gate.fetch(url, params=params)
            assert isinstance(info.value, InvalidURL)
            assert isinstance(info.value, aiohttp.InvalidURL)
            assert "s3cret" not in str(info.value) and "s3cret" not in str(info.value.url)
        with pytest.raises(aiohttp.InvalidURL, match="not a string"):
            gate.fetch(None)  # type: ignore[arg-type]


async def test_pointed_by_is_a_url_a_provenance_or_none() -> None:
    async with RobotGate(AGENT, delay=0) as gate:
        with pytest.raises(TypeError, match="pointed_by is a page's URL, a Provenance or None"):
            gate.fetch("http://127.0.0.1:9/", pointed_by=123)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="pointed_by"):
            await gate.allowed("http://127.0.0.1:9/", pointed_by=b"http://a.example/")  # type: ignore[arg-type]


async def test_a_users_sessions_resend_after_close_is_not_sent_but_gate_closed() -> None:
    # The gate closes while a page waits for its answer over the user's session (which
    # close() leaves open); the server then drops the connection: aiohttp would send the
    # page again by itself, and the gate's fetch ends with GateClosed instead.
    arrived: list[str] = []
    drop = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for _ in range(10):  # requests on one connection, bounded
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                path = head.split(b" ", 2)[1].decode("latin-1")
                arrived.append(path)
                if path != "/robots.txt":
                    await asyncio.wait_for(drop.wait(), 10)
                    return  # closed unanswered
                body = b"User-agent: *\nAllow: /\n"
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(body), body))
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        async with aiohttp.ClientSession() as session:
            gate = RobotGate(AGENT, delay=0, session=session)
            await gate.open()
            assert await gate.allowed(url + "/page")
            page = asyncio.ensure_future(gate.fetch(url + "/page"))
            for _ in range(200):  # bounded: until the page is at the server
                if "/page" in arrived:
                    break
                await asyncio.sleep(0.01)
            await gate.close()
            drop.set()
            with pytest.raises(GateClosed):
                await asyncio.wait_for(page, 10)
    finally:
        server.close()
        await server.wait_closed()
    assert arrived == ["/robots.txt", "/page"]


@pytest.mark.slow
async def test_a_users_sessions_resend_through_gate_fetch_waits_its_turn() -> None:
    from tests.contract.test_provenance_paths import DroppingServer

    server = await DroppingServer().start()
    try:
        async with aiohttp.ClientSession() as session, RobotGate(
                AGENT, delay=0.5, session=session) as gate:
            first = await gate.fetch(server.url("/page/1"))
            second = await gate.fetch(server.url("/drop"))
    finally:
        await server.close()
    assert first.status == second.status == 200 and server.dropped == 1
    pages = [t for path, t in server.arrivals if path != "/robots.txt"]
    assert len(pages) == 3  # /page/1, /drop dropped, /drop sent again
    assert min(b - a for a, b in itertools.pairwise(pages)) >= 0.49, server.arrivals


def test_too_many_redirects_says_no_query_value_in_its_repr() -> None:
    # aiohttp's own repr shows the request's URL whole (a canary found a token there).
    from robotgate.gate.aiohttp_client import AiohttpTooManyRedirects

    url = "http://h.example/landed?token=CANARY"
    info = aiohttp.RequestInfo(URL(url), "GET", CIMultiDict(), URL(url))
    error = AiohttpTooManyRedirects(url, 10, info, ())
    assert "CANARY" not in repr(error) and "CANARY" not in str(error)
    assert isinstance(error, aiohttp.TooManyRedirects)
