"""Issue 57: each client shows the page's directives where its users look.

aiohttp: ``gate.directives(resp)``; httpx: ``response.extensions["robotgate_directives"]``;
Scrapy: ``response.meta["robotgate_directives"]``.  Headers and, for HTML, the
meta tags of the body's head.
"""

from __future__ import annotations

import gzip
from typing import Any

import httpx
import pytest

from robotgate import RobotGate
from robotgate.decision import Decision
from robotgate.integrations.httpx import RobotGateTransport
from tests.support.pages_site import Answer, PagesSite

AGENT = "DirBot/1.0 (+https://example.com/bot)"
META_NOFOLLOW = '<html><head><meta name="robots" content="nofollow"></head><body>x</body></html>'


def _site() -> dict[str, Answer]:
    return {
        "/robots.txt": Answer("User-agent: *\nAllow: /\n", content_type="text/plain"),
        "/header": Answer("<p>x</p>", headers={"X-Robots-Tag": "noindex"}),
        "/meta": Answer(META_NOFOLLOW),
        "/gzip": Answer(gzip.compress(META_NOFOLLOW.encode()),
                        headers={"Content-Encoding": "gzip"}),
        "/other": Answer(META_NOFOLLOW.replace('"robots"', '"otherbot"')),
        "/text": Answer(META_NOFOLLOW, content_type="text/plain"),
    }


async def test_aiohttp_gate_directives_reads_headers_and_the_body_fetch_read() -> None:
    async with PagesSite(_site()) as site, RobotGate(AGENT, delay=0) as gate:
        async with gate.fetch(site.url("/meta")) as resp:
            assert gate.directives(resp).nofollow
        async with gate.fetch(site.url("/header")) as resp:
            found = gate.directives(resp)
        assert found.noindex and not found.nofollow
        async with gate.fetch(site.url("/text")) as resp:
            assert not gate.directives(resp).nofollow  # not HTML: no meta tags
        async with gate.fetch(site.url("/meta"), stream=True) as resp:
            assert not gate.directives(resp).nofollow  # nothing read yet
            body = await resp.content.read()
            assert gate.directives(resp, body).nofollow


async def test_httpx_extensions_carry_the_directives() -> None:
    async with PagesSite(_site()) as site, RobotGate(AGENT, delay=0) as gate:
        transport = RobotGateTransport(gate)
        async with httpx.AsyncClient(transport=transport) as client:
            got: dict[str, Any] = {}
            for path in ("/header", "/meta", "/gzip", "/other", "/text"):
                resp = await client.get(site.url(path))
                got[path] = resp.extensions["robotgate_directives"]
            async with client.stream("GET", site.url("/meta")) as resp:
                before = resp.extensions["robotgate_directives"]
                await resp.aread()
                after = resp.extensions["robotgate_directives"]
    assert got["/header"].noindex and not got["/header"].nofollow
    assert got["/meta"].nofollow and got["/gzip"].nofollow  # the head decoded first
    assert not got["/other"].nofollow and not got["/text"].nofollow
    assert not before.nofollow and after.nofollow  # the meta tag once the body is read
    assert any("<meta name=robots" in s for s in after.sources)


async def test_httpx_reads_the_directives_only_when_asked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import robotgate.integrations.httpx as adapter

    reads: list[str] = []
    real = adapter.headers_directives

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append("read")
        return real(*args, **kwargs)

    monkeypatch.setattr(adapter, "headers_directives", counted)
    async with (PagesSite(_site()) as site, RobotGate(AGENT, delay=0) as gate,
                httpx.AsyncClient(transport=RobotGateTransport(gate)) as client):
        for path in ("/header", "/meta", "/gzip"):
            await client.get(site.url(path))
        assert reads == []  # nobody asked: nothing read
        resp = await client.get(site.url("/meta"))
        assert "robotgate_directives" in resp.extensions
        assert resp.extensions.get("robotgate_directives").nofollow
        assert resp.extensions["robotgate_directives"].nofollow
        assert reads == ["read"]  # read once, kept
        assert resp.extensions.get("no such key", "none") == "none"
        assert "http_version" in resp.extensions


async def test_scrapy_response_meta_carries_the_directives(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("scrapy")
    from scrapy import Request
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from robotgate.integrations.scrapy.middleware import RobotGateMiddleware

    middleware = RobotGateMiddleware.from_crawler(get_crawler(settings_dict={
        "ROBOTSTXT_OBEY": True, "ROBOTGATE_USER_AGENT": AGENT}))
    monkeypatch.setattr(middleware.gate, "check", lambda url: Decision(True, "allowed"))
    request = Request("http://127.0.0.1:9/page")
    body = (b'<html><head><meta name="robots" content="noarchive">'
            b'<meta name="dirbot" content="nofollow"></head></html>')
    response = HtmlResponse(request.url, request=request, body=body, headers={
        "X-Robots-Tag": ["otherbot: noindex", "nosnippet"]})
    assert await middleware.process_response(request, response) is response
    found = request.meta["robotgate_directives"]
    assert found.noarchive and found.nofollow and found.nosnippet
    assert not found.noindex  # said to another robot
    await middleware.gate.close()


async def test_scrapy_with_tdmrep_says_whether_tdm_rights_are_reserved(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("scrapy")
    from scrapy import Request
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from robotgate.gate.aiohttp_client import AiohttpRobotsTransport
    from robotgate.integrations.scrapy.middleware import RobotGateMiddleware

    answers = _site()
    answers["/.well-known/tdmrep.json"] = Answer(
        '[{"location": "/", "tdm-reservation": 1, "tdm-policy": "https://p.example/tdm"}]',
        content_type="application/json")
    async with PagesSite(answers) as site:
        middleware = RobotGateMiddleware.from_crawler(get_crawler(settings_dict={
            "ROBOTSTXT_OBEY": True, "ROBOTGATE_USER_AGENT": AGENT, "ROBOTGATE_DELAY": 0,
            "ROBOTGATE_TDMREP": True}))
        gate = middleware.gate
        # No Scrapy engine runs here: tdmrep.json comes through the gate's own client.
        gate.set_robots_transport(AiohttpRobotsTransport(gate._client))
        monkeypatch.setattr(gate, "check", lambda url: Decision(True, "allowed"))
        verdicts = []
        for path, headers in (("/a", {}), ("/b", {"tdm-reservation": "0"})):
            request = Request(site.url(path))
            response = HtmlResponse(request.url, request=request, body=b"<p>x</p>",
                                    headers=headers)
            await middleware.process_response(request, response)
            verdicts.append(request.meta["robotgate_tdm"])
        await gate.close()
    assert (verdicts[0].reserved, verdicts[0].policy) == (True, "https://p.example/tdm")
    assert verdicts[1].reserved is False and "overrides" in verdicts[1].source
    assert site.hits["/.well-known/tdmrep.json"] == 1
