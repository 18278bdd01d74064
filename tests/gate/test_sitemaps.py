"""gate.sitemaps against a loopback server that counts every request (issue 58).

Each sitemap is fetched through the gate: robots.txt checked (a disallowed one is
never requested), paced like a page, once for all the iterators walking it.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from robotgate import InvalidURL, RobotGate, SitemapEntry

AGENT = "MapBot/1.0 (+https://example.com/bot)"
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Site:
    """One loopback host; ``routes`` maps a path to a body or a handler; every
    request is noted with its arrival time."""

    def __init__(self) -> None:
        self.routes: dict[str, bytes | Handler] = {}
        self.requests: list[tuple[str, float]] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def start(self) -> Site:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.origin + path

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.path, time.monotonic()))
        route = self.routes.get(request.path)
        if route is None:
            return web.Response(status=404, text="no such page")
        if isinstance(route, bytes):
            await asyncio.sleep(0.02)  # long enough for every iterator to ask meanwhile
            return web.Response(body=route, content_type="application/octet-stream")
        return await route(request)

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.requests if p == path)


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    s = await Site().start()
    yield s
    await s.close()


def urlset(*locs: str) -> bytes:
    items = "".join(f"<url><loc>{loc}</loc><lastmod>2024-05-01</lastmod></url>" for loc in locs)
    return f'<?xml version="1.0"?><urlset xmlns="{NS}">{items}</urlset>'.encode()


def index(*locs: str) -> bytes:
    items = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<sitemapindex xmlns="{NS}">{items}</sitemapindex>'.encode()


BOMB = ('<?xml version="1.0"?><!DOCTYPE b [<!ENTITY a "aaaaaaaaaa">'
        + "".join(f'<!ENTITY a{i} "{("&a" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
        + f']><urlset xmlns="{NS}"><url><loc>&a9;</loc></url></urlset>').encode()


def big_sitemap(site: Site, sent: list[int]) -> Handler:
    """60 MB: a URL, then 65,000 blanks, over and over, streamed as it is written."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/xml"})
        await resp.prepare(request)
        await resp.write(f'<urlset xmlns="{NS}">'.encode())
        pad = b" " * 65_000
        try:
            for i in range(60 * 1024 * 1024 // len(pad)):
                await resp.write(f"<url><loc>{site.url(f'/big/{i}')}</loc></url>".encode() + pad)
                sent[0] += len(pad)
            await resp.write(b"</urlset>")
        except (ConnectionError, RuntimeError):
            pass  # the reader stopped at the protocol's limit
        return resp

    return handler


def the_issue_site(site: Site, sent: list[int]) -> None:
    """An index with a gzipped child, a text sitemap, an entity bomb, a 60 MB file and
    sitemaps on a disallowed path (one named by robots.txt, one by the index)."""
    site.routes.update({
        "/robots.txt": (f"User-agent: *\nDisallow: /private/\n"
                        f"Sitemap: {site.url('/maps/index.xml')}\n"
                        f"Sitemap: {site.url('/private/hidden.xml')}\n").encode(),
        "/maps/index.xml": index(site.url("/maps/a.xml.gz"), site.url("/maps/list.txt"),
                                 site.url("/private/inner.xml"), site.url("/maps/bomb.xml"),
                                 site.url("/maps/big.xml")),
        "/maps/a.xml.gz": gzip.compress(urlset(site.url("/a/1"), site.url("/a/2"))),
        "/maps/list.txt": f"{site.url('/t/1')}\n{site.url('/t/2')}\n".encode(),
        "/maps/bomb.xml": BOMB,
        "/maps/big.xml": big_sitemap(site, sent),
        "/private/hidden.xml": urlset(site.url("/secret")),
        "/private/inner.xml": urlset(site.url("/secret")),
    })


@pytest.mark.slow
async def test_the_issue_site_through_20_concurrent_iterators(site: Site) -> None:
    sent = [0]
    the_issue_site(site, sent)

    async with RobotGate(AGENT, delay=0) as gate:
        async def walk() -> tuple[list[SitemapEntry], list[str]]:
            sitemaps = gate.sitemaps(site.url("/"))
            entries = [entry async for entry in sitemaps]
            return entries, [str(p) for p in sitemaps.problems]

        walks = await asyncio.gather(*(walk() for _ in range(20)))

    entries, problems = walks[0]
    assert all(w == walks[0] for w in walks)  # every iterator got every entry
    urls = [e.url for e in entries]
    big = [u for u in urls if "/big/" in u]
    assert urls[:4] == [site.url("/a/1"), site.url("/a/2"), site.url("/t/1"), site.url("/t/2")]
    assert urls[4:] == big and big[0] == site.url("/big/0") and 800 <= len(big) <= 807
    assert entries[0] == SitemapEntry(site.url("/a/1"), "2024-05-01", site.url("/maps/a.xml.gz"))
    assert entries[2].sitemap == site.url("/maps/list.txt") and entries[2].lastmod is None
    # Each sitemap fetched once for the 20; the disallowed ones never.
    for path in ("/robots.txt", "/maps/index.xml", "/maps/a.xml.gz", "/maps/list.txt",
                 "/maps/bomb.xml", "/maps/big.xml"):
        assert site.count(path) == 1, (path, site.requests)
    assert not any(p.startswith("/private/") for p, _ in site.requests)
    assert sent[0] < 60 * 1024 * 1024  # the big one was not read to its end
    said = "\n".join(problems)
    for path in ("/private/hidden.xml", "/private/inner.xml"):
        assert f"{site.url(path)}: not fetched: disallowed by 'Disallow: /private/'" in said
    assert f"{site.url('/maps/bomb.xml')}: the XML declares the entity 'a': refused" in said
    assert (f"{site.url('/maps/big.xml')}: the file is larger than the protocol's 52,428,800 "
            "bytes uncompressed") in said


async def walked_with_peak(site: Site) -> tuple[int, int]:
    """How many entries ``gate.sitemaps`` walks on ``site``, and the walk's peak memory."""
    async with RobotGate(AGENT, delay=0) as gate:
        await gate.rules(site.url("/"))  # robots.txt first: its own memory is not the point
        tracemalloc.start()
        try:
            count = 0
            async for _ in gate.sitemaps(site.url("/")):
                count += 1
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return count, peak


@pytest.mark.slow
async def test_a_60_mb_sitemap_through_the_gate_stays_in_bounded_memory(site: Site) -> None:
    sent = [0]
    site.routes["/robots.txt"] = f"Sitemap: {site.url('/big.xml')}\n".encode()
    site.routes["/big.xml"] = big_sitemap(site, sent)
    count, peak = await walked_with_peak(site)
    assert 800 <= count <= 807
    # The stated bound: 16 MiB for the client, the parser and the entries kept.
    assert peak < 16 * 1024 * 1024, f"peak {peak:,} bytes"


def streamed(body: bytes) -> Handler:
    """``body`` sent 64 KiB at a time, each written when the last has gone."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/xml"})
        await resp.prepare(request)
        view = memoryview(body)
        for start in range(0, len(body), 1 << 16):
            await resp.write(view[start:start + (1 << 16)])
        await resp.write_eof()
        return resp

    return handler


@pytest.mark.slow
async def test_a_full_urlset_streams_through_the_gate_in_a_few_mb(site: Site) -> None:
    # 50,000 URLs, about 11 MB: the walk holds a few network chunks' entries, not the file's.
    items = "".join(
        f"<url><loc>{site.url(f'/articles/2024/05/a-rather-long-article-slug-about-blue-cotton-widgets-{i:06d}.html')}"
        f"</loc><lastmod>2024-05-{i % 28 + 1:02d}T12:00:00+00:00</lastmod>"
        "<changefreq>daily</changefreq><priority>0.8</priority></url>\n" for i in range(50_000))
    body = f'<?xml version="1.0"?><urlset xmlns="{NS}">\n{items}</urlset>'.encode()
    assert len(body) > 11_000_000
    site.routes["/robots.txt"] = f"Sitemap: {site.url('/full.xml')}\n".encode()
    site.routes["/full.xml"] = streamed(body)
    count, peak = await walked_with_peak(site)
    assert count == 50_000
    assert peak < 4 * 1024 * 1024, f"peak {peak:,} bytes"


@pytest.mark.slow
async def test_a_walk_ended_early_lets_its_sitemap_s_read_go(site: Site) -> None:
    # The read waits for the walk; the walk gone, the read ends: the rest is not fetched.
    sent = [0]
    site.routes["/robots.txt"] = f"Sitemap: {site.url('/big.xml')}\n".encode()
    site.routes["/big.xml"] = big_sitemap(site, sent)
    async with RobotGate(AGENT, delay=0) as gate:
        walk = gate.sitemaps(site.url("/"))
        first = [(await walk.__anext__()).url for _ in range(10)]
        await walk.aclose()
        for _ in range(50):  # the server's writes fail once the connection is gone
            await asyncio.sleep(0.02)
    assert first[-1] == site.url("/big/9")
    # Of 60 MB (read to the protocol's 50 MB when the walk is not waited for), what the
    # sockets' buffers took before the read let go.
    assert sent[0] < 20 * 1024 * 1024, sent


@pytest.mark.slow
async def test_sitemaps_are_paced_like_pages(site: Site) -> None:
    site.routes.update({
        "/robots.txt": f"Sitemap: {site.url('/index.xml')}\n".encode(),
        "/index.xml": index(site.url("/1.xml"), site.url("/2.xml")),
        "/1.xml": urlset(site.url("/p/1")),
        "/2.xml": urlset(site.url("/p/2")),
    })
    async with RobotGate(AGENT, delay=0.2) as gate:
        entries = [e.url async for e in gate.sitemaps(site.url("/"))]
        await gate.fetch(site.url("/p/1"))
    assert entries == [site.url("/p/1"), site.url("/p/2")]
    times = [t for _, t in site.requests]
    assert [p for p, _ in site.requests] == ["/robots.txt", "/index.xml", "/1.xml", "/2.xml",
                                             "/p/1"]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 0.18, gaps  # the host's interval (0.2 s), arrivals seen by the server


async def test_without_sitemap_lines_the_origins_sitemap_xml_is_read(site: Site) -> None:
    site.routes["/robots.txt"] = b"User-agent: *\nDisallow: /private/\n"
    site.routes["/sitemap.xml"] = urlset(site.url("/deep/x"), "http://elsewhere.example/x")
    async with RobotGate(AGENT, delay=0) as gate:
        sitemaps = gate.sitemaps(site.url("/any/page?q=1"))
        assert [e.url async for e in sitemaps] == [site.url("/deep/x")]
        assert [str(p) for p in sitemaps.problems] == [
            f"{site.url('/sitemap.xml')}: 1 URL outside the sitemap's scope ({site.origin}/) "
            "dropped, e.g. http://elsewhere.example/x"]
        assert sitemaps.read == [site.url("/sitemap.xml")]


async def test_an_unreachable_robots_txt_keeps_the_sitemap_unfetched(site: Site) -> None:
    async def down(request: web.Request) -> web.Response:
        return web.Response(status=503)

    site.routes["/robots.txt"] = down
    site.routes["/sitemap.xml"] = urlset(site.url("/x"))
    async with RobotGate(AGENT, delay=0) as gate:
        sitemaps = gate.sitemaps(site.url("/"))
        assert [e async for e in sitemaps] == []
    assert site.count("/sitemap.xml") == 0
    assert len(sitemaps.problems) == 1
    assert "not fetched: robots.txt answered 503" in sitemaps.problems[0].reason


async def test_a_sitemap_url_is_said_without_its_password(site: Site) -> None:
    hidden = site.url("/private/map.xml").replace("://", "://user:secret@")
    site.routes["/robots.txt"] = f"User-agent: *\nDisallow: /private/\nSitemap: {hidden}\n".encode()
    async with RobotGate(AGENT, delay=0) as gate:
        sitemaps = gate.sitemaps(site.url("/"))
        assert [e async for e in sitemaps] == []
    assert [p.sitemap for p in sitemaps.problems] == [hidden.replace("secret", "***")]
    assert "secret" not in str(sitemaps.problems[0])


async def test_failures_are_said_and_the_walk_goes_on(site: Site) -> None:
    async def reset(request: web.Request) -> web.StreamResponse:
        # The body is cut after its first URL: the connection drops mid-answer.
        body = urlset(site.url("/r/1"), site.url("/r/2"))
        resp = web.StreamResponse(headers={"Content-Length": str(len(body))})
        await resp.prepare(request)
        await resp.write(body[: body.index(b"/r/2")])
        await asyncio.sleep(0.05)
        assert request.transport is not None
        request.transport.abort()
        return resp

    async def cut_text(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Length": "1000"})
        await resp.prepare(request)
        await resp.write(f"{site.url('/t/1')}\n{site.url('/t/2')}".encode())  # "/t/2..." cut
        await asyncio.sleep(0.05)
        assert request.transport is not None
        request.transport.abort()
        return resp

    async def to_private(request: web.Request) -> web.Response:
        return web.Response(status=301, headers={"Location": site.url("/private/x.xml")})

    site.routes.update({
        "/robots.txt": (f"User-agent: *\nDisallow: /private/\n"
                        f"Sitemap: {site.url('/index.xml')}\n").encode(),
        "/index.xml": index(*(site.url(p) for p in (
            "/missing.xml", "/reset.xml", "/reset.txt", "/moved.xml", "/cut.xml", "/html.xml",
            "/ok.xml"))),
        "/reset.xml": reset,
        "/reset.txt": cut_text,
        "/moved.xml": to_private,
        "/cut.xml": urlset(site.url("/c/1"), site.url("/c/2"))[:-40],
        "/html.xml": b"<html><body>Welcome</body></html>",
        "/ok.xml": urlset(site.url("/ok")),
    })
    async with RobotGate(AGENT, delay=0) as gate:
        sitemaps = gate.sitemaps(site.url("/"))
        assert [e.url async for e in sitemaps] == [site.url("/r/1"), site.url("/t/1"),
                                                   site.url("/c/1"), site.url("/ok")]
    why: dict[str, str] = {}
    for problem in sitemaps.problems:  # the first said of each
        why.setdefault(problem.sitemap.rsplit("/", 1)[1], problem.reason)
    assert why["missing.xml"] == "answered 404: not read"
    assert why["reset.xml"].startswith("the fetch failed (ClientPayloadError")
    assert why["reset.txt"].startswith("the fetch failed (ClientPayloadError")
    assert [p.reason for p in sitemaps.problems if p.sitemap.endswith("/reset.txt")][-1] == (
        "the last line is cut short: not read")
    assert why["moved.xml"].startswith("not fetched: disallowed by 'Disallow: /private/'")
    assert why["cut.xml"].startswith("the XML is broken")
    assert why["html.xml"].startswith("not a sitemap: the root element is <html>")
    assert site.count("/private/x.xml") == 0


async def test_indexes_are_followed_to_a_bounded_depth_and_count(site: Site) -> None:
    site.routes.update({
        "/robots.txt": f"Sitemap: {site.url('/i0.xml')}\n".encode(),
        "/i0.xml": index(site.url("/i1.xml"), site.url("/i0.xml")),  # itself: read once
        "/i1.xml": index(site.url("/i2.xml")),
        "/i2.xml": index(site.url("/leaf.xml")),
        "/leaf.xml": urlset(site.url("/x")),
    })
    async with RobotGate(AGENT, delay=0) as gate:
        deep = gate.sitemaps(site.url("/"))
        assert [e async for e in deep] == []
        assert any("an index 2 levels down (max_depth=2)" in p.reason for p in deep.problems)
        deeper = gate.sitemaps(site.url("/"), max_depth=3)
        assert [e.url async for e in deeper] == [site.url("/x")]
        few = gate.sitemaps(site.url("/"), max_depth=3, max_sitemaps=2)
        assert [e async for e in few] == []
        assert any("more than 2 sitemaps (max_sitemaps)" in p.reason for p in few.problems)
    assert site.count("/i0.xml") == 3  # once a walk, these walks one after the other


async def test_gate_crawl_takes_the_entries(site: Site) -> None:
    site.routes["/robots.txt"] = (f"Sitemap: {site.url('/s.txt')}\n"
                                  "User-agent: *\nDisallow: /no/\n").encode()
    site.routes["/s.txt"] = "\n".join(site.url(p) for p in ("/a", "/b", "/no/c")).encode()
    site.routes["/a"] = site.routes["/b"] = b"page"
    seen: list[str] = []

    async def handler(url: str, resp: object) -> None:
        seen.append(url)

    async with RobotGate(AGENT, delay=0) as gate:
        summary = await gate.crawl(gate.sitemaps(site.url("/")), handler)
    assert sorted(seen) == [site.url("/a"), site.url("/b")]
    assert summary.pages == 2 and summary.skipped == 1
    assert site.count("/no/c") == 0


async def test_a_cancelled_iterator_leaves_the_read_to_the_others(site: Site) -> None:
    release = asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(body=urlset(site.url("/x")))

    site.routes["/robots.txt"] = f"Sitemap: {site.url('/slow.xml')}\n".encode()
    site.routes["/slow.xml"] = slow
    async with RobotGate(AGENT, delay=0) as gate:
        async def walk() -> list[str]:
            return [e.url async for e in gate.sitemaps(site.url("/"))]

        first = asyncio.ensure_future(walk())
        second = asyncio.ensure_future(walk())
        while site.count("/slow.xml") == 0:
            await asyncio.sleep(0.01)
        first.cancel()
        release.set()
        assert await second == [site.url("/x")]
        with pytest.raises(asyncio.CancelledError):
            await first
    assert site.count("/slow.xml") == 1


async def test_an_origin_that_is_no_http_url_is_refused_at_once() -> None:
    async with RobotGate(AGENT, delay=0) as gate:
        with pytest.raises(InvalidURL) as bad:
            gate.sitemaps("ftp://user:secret@example.com/")
        assert isinstance(bad.value, ValueError) and "secret" not in str(bad.value)
