"""gate.crawl as crawlers write it (issue 65): relative links, page_links, retries,
typed options, and directives read only when something uses them."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

import pytest
from aiohttp import web

from robotgate import CrawlResult, RobotGate, page_links
from robotgate.cli.__init__ import main
from robotgate.crawl import crawl
from tests.crawl.test_frontier import FakeGate, FakeResponse
from tests.support.pages_site import Answer, PagesSite

AGENT = "LinkBot/1.0 (+https://example.com/bot)"


def _page(*hrefs: str, head: str = "") -> Answer:
    return Answer("<html><head>{}</head><body>{}</body></html>".format(
        head, "".join(f'<a href="{h}">x</a>' for h in hrefs)))


def _relative_site() -> dict[str, Answer]:
    return {
        "/robots.txt": Answer("User-agent: *\nAllow: /\n", content_type="text/plain"),
        "/": _page("a.html", "/b", "./c?x=1", "sub/", "mailto:me@example.com",
                   "javascript:void(0)", "/moved"),
        "/a.html": _page("#top", ""),
        "/b": _page("b2.html"),
        "/b2.html": _page(),
        "/c?x=1": _page(),
        "/sub/": _page("deeper.html", "../a.html"),
        "/sub/deeper.html": _page(),
        # A redirect: the page's links resolve against where it led.
        "/moved": Answer("", status=302, headers={"Location": "/dir/final"}),
        "/dir/final": _page("rel.html", head='<base href="/based/">'),
        "/based/rel.html": _page(),
    }


EVERY_PAGE = {"/", "/a.html", "/b", "/b2.html", "/c?x=1", "/sub/", "/sub/deeper.html",
              "/moved", "/dir/final", "/based/rel.html"}


async def test_relative_links_a_handler_returns_are_followed_and_the_rest_explained() -> None:
    async with PagesSite(_relative_site()) as site:
        async def handler(url: str, resp: Any) -> list[str]:
            # As a handler writes it with a regex: hrefs as they are, relative ones too.
            body = await resp.read()
            return [part.split(b'"')[0].decode() for part in body.split(b'<a href="')[1:]]

        async with RobotGate(AGENT, delay=0) as gate:
            summary = await gate.crawl([site.url("/")], handler)
    fetched = {path for path, n in site.hits.items() if n and path != "/robots.txt"}
    assert fetched == EVERY_PAGE
    assert summary.invalid == 0 and summary.errors == 0
    assert summary.other_schemes == 2
    assert any("no http(s) URL" in line for line in summary.explain())
    assert summary.unaccounted() == 0


async def test_follow_links_crawls_a_site_with_a_handler_that_returns_nothing() -> None:
    answers = _relative_site()
    answers["/b2.html"] = Answer('<a rel="nofollow" href="/never">x</a>')
    async with PagesSite(answers) as site:
        async def handler(url: str, resp: Any) -> None:
            return None

        async with RobotGate(AGENT, delay=0) as gate:
            summary = await gate.crawl([site.url("/")], handler, follow_links=True)
    fetched = {path for path, n in site.hits.items() if n and path != "/robots.txt"}
    assert fetched == EVERY_PAGE
    assert summary.rel_nofollow == 1 and site.hits["/never"] == 0
    assert any("rel=nofollow" in line for line in summary.explain())


def test_page_links_is_what_the_readme_handler_returns() -> None:
    body = b'<base href="/docs/"><a href="a.html">a</a><a href="/b?x=1&amp;y=2">b</a>'
    assert page_links(body, "http://h.example/x/page") == [
        "http://h.example/docs/a.html", "http://h.example/b?x=1&y=2"]


async def test_a_misspelt_option_is_a_type_error_naming_it_before_any_request() -> None:
    async with PagesSite(_relative_site()) as site:
        async def handler(url: str, resp: Any) -> None:
            return None

        async with RobotGate(AGENT, delay=0) as gate:
            with pytest.raises(TypeError, match=r"'concurency'.*'concurrency'"):
                await gate.crawl([site.url("/")], handler, concurency=4)  # type: ignore[call-arg]
            with pytest.raises(TypeError, match="'max_retries'"):
                await gate.crawl([site.url("/")], handler, max_retries=1)  # type: ignore[call-arg]
    assert sum(site.hits.values()) == 0


async def test_directives_are_read_only_when_something_uses_them() -> None:
    async with PagesSite(_relative_site()) as site:
        async def no_links(url: str, resp: Any) -> None:
            return None

        async def links(url: str, resp: Any) -> list[str]:
            return page_links(await resp.read(), str(resp.url))

        read: list[str] = []
        seeds = [site.url("/"), site.url("/b")]
        for handler, options, expected in [
            (no_links, {}, 0),                              # nothing to judge: not read
            (no_links, {"record_directives": True}, 2),     # asked for: every page
            (links, {"obey_nofollow": False}, 0),           # links, but nofollow not obeyed
            (links, {"max_depth": 0}, 2),                   # links to judge: read
        ]:
            read.clear()
            records: list[CrawlResult] = []
            async with RobotGate(AGENT, delay=0) as gate:
                def counting(resp: Any, body: bytes | None = None,
                             directives: Any = gate.directives) -> Any:
                    read.append(str(resp.url))
                    return directives(resp, body)

                gate.directives = counting  # type: ignore[method-assign]
                await gate.crawl(seeds, handler, on_result=records.append, **options)
            assert len(read) == expected, (options, read)
            assert all((r.directives is not None) == bool(expected) for r in records)


async def test_connection_errors_are_retried_and_each_attempt_recorded() -> None:
    url = "http://h.example/flaky"
    gate = FakeGate(delay=0.0, fail=[url])
    results: list[CrawlResult] = []

    async def handler(u: str, resp: FakeResponse) -> None:
        return None

    summary = await crawl(gate, [url], handler, on_result=results.append)
    assert [r.kind for r in results] == ["retried", "retried", "error"]
    assert [r.attempts for r in results] == [1, 2, 3]
    assert summary.retried == 2 and summary.errors == 1 and len(gate.starts[
        "http://h.example"]) == 3


class _Flaky:
    """A loopback server whose /page answers 429 with Retry-After: 1 twice, then 200,
    noting when each request arrived (server side)."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self._runner: web.AppRunner | None = None
        self.origin = ""

    async def _answer(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        self.arrivals.append(time.monotonic())
        if len(self.arrivals) <= 2:
            return web.Response(status=429, headers={"Retry-After": "1"}, text="slow down")
        return web.Response(text="<html>done</html>", content_type="text/html")

    async def __aenter__(self) -> _Flaky:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._answer)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.origin = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def gaps(self) -> list[float]:
        return [b - a for a, b in itertools.pairwise(self.arrivals)]


@pytest.mark.slow
async def test_429_with_retry_after_twice_then_200_through_gate_crawl() -> None:
    async with _Flaky() as server:
        results: list[CrawlResult] = []

        async def handler(url: str, resp: Any) -> None:
            return None

        async with RobotGate(AGENT, delay=0) as gate:
            summary = await gate.crawl([server.origin + "/page"], handler,
                                       on_result=results.append)
    assert [(r.kind, r.status, r.attempts) for r in results] == [
        ("retried", 429, 1), ("retried", 429, 2), ("page", 200, 3)]
    assert summary.pages == 1 and summary.retried == 2
    assert len(server.arrivals) == 3
    assert all(gap >= 1.0 for gap in server.gaps()), server.gaps()


@pytest.mark.slow
async def test_429_with_retry_after_twice_then_200_through_robotgate_fetch(
        capsys: pytest.CaptureFixture[str]) -> None:
    async with _Flaky() as server:
        code = await asyncio.to_thread(
            main, ["fetch", "-a", AGENT, "--store", "memory", "-q", "--delay", "0",
                   "--retries", "2", server.origin + "/page"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    assert [(line["status"], line["attempt"], line.get("retried", False)) for line in lines] == [
        (429, 1, True), (429, 2, True), (200, 3, False)]
    assert all(gap >= 1.0 for gap in server.gaps()), server.gaps()


@pytest.mark.slow
async def test_robotgate_fetch_retries_0_records_the_429(
        capsys: pytest.CaptureFixture[str]) -> None:
    async with _Flaky() as server:
        await asyncio.to_thread(
            main, ["fetch", "-a", AGENT, "--store", "memory", "-q", "--delay", "0",
                   "--retries", "0", server.origin + "/page"])
    (line,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert line["status"] == 429 and "retried" not in line and len(server.arrivals) == 1
