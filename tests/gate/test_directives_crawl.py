"""Issue 57: ``gate.crawl`` applies the pages' directives (nofollow), and says so.

A loopback site whose pages say ``nofollow`` in each way a robot meets it;
the crawl follows exactly the links of the pages that do not say it to this
robot, and every record carries the page's directives and what they kept out.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from robotgate import RobotGate
from robotgate.cli.__init__ import main
from robotgate.crawl import CrawlResult, Handled
from tests.support.pages_site import Answer, PagesSite, links_in

AGENT = "DirBot/1.0 (+https://example.com/bot)"


def _site() -> dict[str, Answer]:
    def page(*links: str, **kw: Any) -> Answer:
        body = "<html><head>{}</head><body>{}</body></html>".format(
            kw.pop("meta", ""), "".join(f'<a href="{link}">x</a>' for link in links))
        return Answer(body, **kw)

    return {
        "/robots.txt": Answer("User-agent: *\nDisallow: /forbidden\n", content_type="text/plain"),
        "/start": page("/header", "/meta", "/other", "/plain"),
        "/header": page("/from-header", "/forbidden",
                        headers={"X-Robots-Tag": "nofollow"}),
        "/meta": page("/from-meta", meta='<meta name="robots" content="nofollow">'),
        "/other": page("/from-other", headers={"X-Robots-Tag": "otherbot: nofollow"}),
        "/plain": page("/from-plain", "/forbidden"),
        "/from-header": page(),
        "/from-meta": page(),
        "/from-other": page(),
        "/from-plain": page(),
    }


async def _crawl(site: PagesSite, **options: Any) -> tuple[dict[str, CrawlResult], Any]:
    results: dict[str, CrawlResult] = {}

    async def handler(url: str, resp: Any) -> list[str]:
        return links_in(site.origin, await resp.read())

    def done(record: CrawlResult) -> None:
        results[record.url.removeprefix(site.origin)] = record

    async with RobotGate(AGENT, delay=0) as gate:
        summary = await gate.crawl([site.url("/start")], handler, on_result=done, **options)
    return results, summary


async def test_nofollow_pages_links_are_not_followed_and_each_record_says_why() -> None:
    async with PagesSite(_site()) as site:
        results, summary = await _crawl(site)
    fetched = {path for path, n in site.hits.items() if n}
    # Exactly the links of the page naming another robot and of the plain page.
    assert "/from-other" in fetched and "/from-plain" in fetched
    assert "/from-header" not in fetched and "/from-meta" not in fetched
    assert "/forbidden" not in fetched  # robots.txt still decides what is fetched
    assert results["/forbidden"].kind == "skipped"  # linked from /plain: asked, refused

    header, meta = results["/header"], results["/meta"]
    other, plain = results["/other"], results["/plain"]
    assert header.directives is not None and header.directives.nofollow
    assert header.not_followed == 2
    assert "X-Robots-Tag: nofollow" in header.directives.explain()
    assert meta.directives is not None and meta.directives.nofollow
    assert meta.not_followed == 1
    assert '<meta name=robots content=nofollow>' in meta.directives.explain()
    assert other.directives is not None and not other.directives.nofollow
    assert other.not_followed == 0
    assert plain.directives is not None and not plain.directives.nofollow
    assert plain.directives.explain() == "directives: none"
    assert summary.not_followed == 3
    assert summary.errors == 0 and summary.pages == 7 and summary.skipped == 1


async def test_obey_nofollow_false_follows_every_link_robots_txt_allows() -> None:
    async with PagesSite(_site()) as site:
        results, summary = await _crawl(site, obey_nofollow=False, record_directives=True)
    for path in ("/from-header", "/from-meta", "/from-other", "/from-plain"):
        assert site.hits[path] == 1
    assert site.hits["/forbidden"] == 0
    assert results["/header"].directives is not None and results["/header"].directives.nofollow
    assert results["/header"].not_followed == 0 and summary.not_followed == 0


async def test_a_streamed_pages_meta_tags_come_from_the_head_the_handler_hands_back() -> None:
    async with PagesSite(_site()) as site:
        results: list[CrawlResult] = []

        async def handler(url: str, resp: Any) -> Handled:
            body = await resp.content.read()
            return Handled(links_in(site.origin, body), head=body)

        async with RobotGate(AGENT, delay=0) as gate:
            await gate.crawl([site.url("/meta")], handler, on_result=results.append,
                             fetch=lambda url: gate.fetch(url, stream=True))
    (record,) = results
    assert record.directives is not None and record.directives.nofollow
    assert record.not_followed == 1 and site.hits["/from-meta"] == 0


async def test_fetch_json_lines_carry_the_directives(capsys: pytest.CaptureFixture[str]) -> None:
    async with PagesSite(_site()) as site:
        urls = [site.url(p) for p in ("/header", "/meta", "/other", "/plain")]
        code = await asyncio.to_thread(
            main, ["fetch", "-a", AGENT, "--store", "memory", "-q", "--delay", "0", *urls])
    lines = {json.loads(line)["url"].removeprefix(site.origin): json.loads(line)
             for line in capsys.readouterr().out.splitlines()}
    assert code == 0
    assert lines["/header"]["directives"]["nofollow"] is True
    assert any("X-Robots-Tag" in s for s in lines["/header"]["directives"]["sources"])
    # The CLI reads a streamed body: the meta tag is found in the head it kept.
    assert lines["/meta"]["directives"]["nofollow"] is True
    assert "nofollow" not in lines["/other"]["directives"]
    assert lines["/plain"]["directives"] == {
        "tdm_reservation": None, "tdm_policy": None, "sources": []}
    assert "tdm" not in lines["/plain"]  # TDMRep is opt-in
