"""Every request carries who pointed at it, and takes its route and its turn, on every
plain-HTTP path: ``gate.fetch``, ``gate.middleware``, the httpx transport, Scrapy.

- A request's provenance is a value given where it is made (``pointed_by=``, the
  middleware's ``middleware_for``, httpx's ``robotgate_pointed_by`` extension, Scrapy's
  ``robotgate_pointed_by`` meta): a page stored as public or private is taken at its
  word, not looked up again.
- robots.txt travels the pages' route: through the proxy a page goes through.
- A resend is a request: when a server drops a kept-alive connection after reading a
  request, the client's resend waits its turn, or does not happen.

On loopback: 127.0.0.1 plays a public site, 127.0.0.2 a private network (as in
``test_request_paths``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp import web

from robotgate import Disallowed, RobotGate
from robotgate.policy.hops import REFUSED
from robotgate.policy.provenance import Provenance
from tests.contract.test_request_paths import (
    AGENT,
    PUBLIC,
    ROOT,
    Result,
    Site,
    private,
    public,
    public_loopback_1,
)

httpx = pytest.importorskip("httpx")
pytest.importorskip("scrapy")

from robotgate.integrations.httpx import POINTED_BY, RobotGateTransport  # noqa: E402

pytestmark = pytest.mark.slow  # loopback servers, a Scrapy child process

__all__ = ["private", "public"]

PATHS = ["fetch", "middleware", "httpx", "scrapy"]


@dataclass
class Ask:
    """One request: its URL, who pointed at it (None: the caller's input), and the
    proxy it goes through (None: direct)."""

    url: str
    pointed_by: Provenance | str | None = None
    proxy: str | None = None


def _refusal(no: Disallowed) -> Result:
    return Result(refused=no.decision.outcome or "rule", reason=no.decision.reason)


async def run(path: str, asks: list[Ask], **options: Any) -> list[Result]:
    """The requests one after the other through ``path``."""
    if path == "scrapy":
        return await _scrapy(asks, options)
    async with RobotGate(AGENT, is_private=public_loopback_1, **options) as gate:
        if path == "fetch":
            return [await _fetch(gate, ask) for ask in asks]
        if path == "middleware":
            async with aiohttp.ClientSession(middlewares=(gate.middleware,)) as session:
                return [await _middleware(gate, session, ask) for ask in asks]
        proxies = {ask.proxy for ask in asks}
        [proxy] = proxies  # httpx: the proxy is the inner transport's, one for the client
        inner = httpx.AsyncHTTPTransport(proxy=proxy)
        async with httpx.AsyncClient(transport=RobotGateTransport(gate, inner),
                                     follow_redirects=True) as client:
            return [await _httpx(client, ask) for ask in asks]


async def _fetch(gate: RobotGate, ask: Ask) -> Result:
    try:
        resp = await gate.fetch(ask.url, pointed_by=ask.pointed_by, proxy=ask.proxy)
    except Disallowed as no:
        return _refusal(no)
    except aiohttp.ClientError as exc:
        return Result(error=type(exc).__name__)
    return Result(status=resp.status)


async def _middleware(gate: RobotGate, session: aiohttp.ClientSession, ask: Ask) -> Result:
    extra: dict[str, Any] = {"proxy": ask.proxy}
    if ask.pointed_by is not None:
        extra["middlewares"] = (gate.middleware_for(ask.pointed_by),)
    try:
        async with session.get(ask.url, **extra) as resp:
            await resp.read()
    except Disallowed as no:
        return _refusal(no)
    except aiohttp.ClientError as exc:
        return Result(error=type(exc).__name__)
    return Result(status=resp.status)


async def _httpx(client: Any, ask: Ask) -> Result:
    extensions = {POINTED_BY: ask.pointed_by} if ask.pointed_by is not None else {}
    try:
        resp = await client.get(ask.url, extensions=extensions)
    except Disallowed as no:
        return _refusal(no)
    except httpx.TransportError as exc:
        return Result(error=type(exc).__name__)
    return Result(status=resp.status_code)


async def _scrapy(asks: list[Ask], options: dict[str, Any], **extra: Any) -> list[Result]:
    metas: list[dict[str, Any]] = []
    for ask in asks:
        meta: dict[str, Any] = {}
        if isinstance(ask.pointed_by, Provenance):
            meta["robotgate_pointed_by"] = {"page": ask.pointed_by.page,
                                            "public": ask.pointed_by.public}
        elif ask.pointed_by is not None:
            meta["robotgate_pointed_by"] = ask.pointed_by
        if ask.proxy is not None:
            meta["proxy"] = ask.proxy
        metas.append(meta)
    settings: dict[str, Any] = {
        "ROBOTGATE_IS_PRIVATE": "tests.contract.test_request_paths.public_loopback_1",
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16, "DOWNLOAD_DELAY": 0,
        "ROBOTGATE_DELAY": options.get("delay", 0), **extra.pop("settings", {})}
    config = json.dumps({"urls": [ask.url for ask in asks], "meta": metas, "sequential": True,
                         "settings": settings, **extra})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.contract.scrapy_paths_runner", config, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()[-3000:]
    lines = out.decode().strip().splitlines()
    assert lines, err.decode()[-3000:]
    return [Result(**entry) if entry is not None else Result(error="no answer")
            for entry in json.loads(lines[-1])]


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# -- provenance, as stored -----------------------------------------------------------------


async def test_a_pages_stored_public_bit_is_taken_at_its_word(
        path: str, public: Site, private: Site) -> None:
    # A page stored as public (whatever its host answers now) may not point into the
    # private network; one stored as private may, even where its name no longer
    # resolves; a public page's link given by its URL is judged by a look-up.
    asks = [Ask(private.url("/secret/1"), Provenance(private.url("/page"), public=True)),
            Ask(private.url("/secret/2"), Provenance("http://intranet.invalid/", public=False)),
            Ask(private.url("/secret/3"), public.url("/page"))]
    stored_public, stored_private, looked_up = await run(path, asks, delay=0)
    assert stored_public.refused == REFUSED, stored_public
    assert stored_private.status == 200, stored_private
    assert looked_up.refused == REFUSED, looked_up
    assert private.paths() == ["/secret/2"]


POINTERS_MIDDLEWARE = {"robotgate.integrations.scrapy.RobotGatePointersMiddleware": 50}


@asynccontextmanager
async def served(handler: Any) -> AsyncIterator[int]:
    """A public loopback site answering every path with ``handler``: its port."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, PUBLIC, 0).start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def test_a_scrapy_spiders_link_is_its_pages_pointer(private: Site) -> None:
    # A public page links into the private network: the spider follows the link, and
    # the pointers middleware makes it the page's pointer, refused as gate.crawl refuses.
    async def page(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(text=f'<a href="{private.url("/secret")}">x</a>',
                            content_type="text/html")

    async with served(page) as port:
        results = await _scrapy([Ask(f"http://{PUBLIC}:{port}/page")], {}, follow=True,
                                settings={"SPIDER_MIDDLEWARES": POINTERS_MIDDLEWARE})
    start, link = results
    assert start.status == 200, results
    assert link.refused == REFUSED, link
    assert private.paths() == [] and private.robots_hits == 0


@pytest.mark.parametrize("obey", [True, False])
async def test_a_scrapy_spider_follows_no_link_of_a_nofollow_page(obey: bool) -> None:
    # The page says nofollow (meta tag, and a second page by X-Robots-Tag): the pointers
    # middleware drops the requests its callback yields, as gate.crawl drops its links.
    asked: list[str] = []

    async def page(request: web.Request) -> web.Response:
        asked.append(request.path)
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/meta":
            return web.Response(text='<meta name="robots" content="nofollow">'
                                     '<a href="/from-meta">x</a>', content_type="text/html")
        if request.path == "/header":
            return web.Response(text='<a href="/from-header">x</a>', content_type="text/html",
                                headers={"X-Robots-Tag": "nofollow"})
        return web.Response(text="<p>a page</p>", content_type="text/html")

    async with served(page) as port:
        results = await _scrapy(
            [Ask(f"http://{PUBLIC}:{port}/meta"), Ask(f"http://{PUBLIC}:{port}/header")], {},
            follow=True, sequential=False, settings={"SPIDER_MIDDLEWARES": POINTERS_MIDDLEWARE,
                                                     "ROBOTGATE_OBEY_NOFOLLOW": obey})
    assert [r.status for r in results[:2]] == [200, 200], results
    followed = {"/from-meta", "/from-header"} & set(asked)
    assert followed == (set() if obey else {"/from-meta", "/from-header"}), asked


# -- robots.txt travels the pages' route ---------------------------------------------------


_S = TypeVar("_S", bound="StreamServer")


class StreamServer:
    """A loopback server of raw connections, each handed to ``_serve``."""

    port: int = 0
    _server: asyncio.Server | None = None

    async def start(self: _S) -> _S:
        self._server = await asyncio.start_server(self._serve, PUBLIC, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


@dataclass
class ForwardProxy(StreamServer):
    """A loopback HTTP forward proxy: it alone knows ``web.invalid`` (the public site).
    Every request it forwards is recorded; each connection carries one request."""

    site_port: int = 0
    forwarded: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{PUBLIC}:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            line, *headers = head.decode("latin-1").split("\r\n")
            method, target, version = line.split(" ")
            path = "/" + target.split("://", 1)[1].split("/", 1)[1]
            self.forwarded.append(path)
            kept = [h for h in headers if h and not h.lower().startswith(
                ("connection", "proxy-", "keep-alive"))]
            up_reader, up_writer = await asyncio.open_connection(PUBLIC, self.site_port)
            up_writer.write(f"{method} {path} {version}\r\n".encode("latin-1")
                            + "".join(f"{h}\r\n" for h in kept).encode("latin-1")
                            + b"Connection: close\r\n\r\n")
            await up_writer.drain()
            answer = await asyncio.wait_for(up_reader.read(), 5)
            up_writer.close()
            writer.write(answer)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError, IndexError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def forward_proxy(site: Site) -> AsyncIterator[ForwardProxy]:
    proxy = await ForwardProxy(site.port).start()
    try:
        yield proxy
    finally:
        await proxy.close()


async def test_robots_txt_is_asked_through_the_proxy_its_page_goes_through(
        path: str, public: Site) -> None:
    # The crawler reaches web.invalid only through the proxy: robots.txt asked direct
    # could not be fetched, and the page would be refused for it.
    async with forward_proxy(public) as proxy:
        url = f"http://web.invalid:{public.port}"
        results = await run(path, [Ask(f"{url}/page/1", proxy=proxy.url),
                                   Ask(f"{url}/no/x", proxy=proxy.url)], delay=0)
    page, refused = results
    assert page.status == 200, page
    assert refused.refused == "rule" and "Disallow: /no/" in refused.reason, refused
    assert proxy.forwarded == ["/robots.txt", "/page/1"]
    assert public.robots_hits == 1


# -- a resend is a request -----------------------------------------------------------------


@dataclass
class DroppingServer(StreamServer):
    """A loopback server on kept-alive connections that, the first time it is asked for
    ``/drop``, reads the request and closes the connection without an answer; it
    records when each request arrived (the kernel's order, read as they come)."""

    arrivals: list[tuple[str, float]] = field(default_factory=list)
    dropped: int = 0

    def url(self, path: str) -> str:
        return f"http://{PUBLIC}:{self.port}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for _ in range(100):  # requests on one connection, bounded
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                path = head.split(b" ", 2)[1].decode("latin-1")
                self.arrivals.append((path, time.monotonic()))
                if path == "/drop" and self.dropped == 0:
                    self.dropped += 1
                    return  # read, then the connection closes unanswered
                body = (b"User-agent: *\nAllow: /\n" if path == "/robots.txt" else b"page")
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            writer.close()


async def test_a_resend_after_a_dropped_connection_waits_its_turn(path: str) -> None:
    server = await DroppingServer().start()
    try:
        results = await run(path, [Ask(server.url("/page/1")), Ask(server.url("/drop"))],
                            delay=0.5)
    finally:
        await server.close()
    assert results[0].status == 200, results
    assert server.dropped == 1
    pages = [t for p, t in server.arrivals if p != "/robots.txt"]
    gaps = [b - a for a, b in itertools.pairwise(pages)]
    # The dropped request was a request: anything sent after it, its resend too, waited
    # the interval; or the resend did not happen and the caller got the client's error.
    assert gaps and min(gaps) >= 0.49, (server.arrivals, results)
    assert results[1].status == 200 or results[1].error is not None, results
