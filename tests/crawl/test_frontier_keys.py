"""One key per resource: spellings of one URL are fetched once, and every URL is counted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from robotgate.crawl import crawl
from robotgate.crawl.results import CrawlResult
from robotgate.urls import InvalidURL, resource_key
from tests.support.crawl_gate import LinkGate, Page

# 12 spellings of 3 resources.
SPELLINGS = [
    "http://h.example/page",
    "HTTP://H.EXAMPLE/page",
    "http://h.example:80/./page",
    "http://h.example/a/../page#top",
    "http://h.example/%70age",
    "http://h.example/x~y",
    "http://h.example/x%7ey",
    "http://h.example/x%7Ey",
    "http://h.example/q/%2e%2E/x~y",
    "http://h.example",
    "http://h.example/",
    "http://H.example:80#frag",
]


def test_resource_key_merges_spellings_of_one_resource() -> None:
    assert len({resource_key(url) for url in SPELLINGS}) == 3
    assert resource_key("http://h.example/%c3%a9?b=%2f") == "http://h.example/%C3%A9?b=%2F"
    assert resource_key("http://h.example/a?x") != resource_key("http://h.example/a?y")
    assert resource_key("http://h.example/a") != resource_key("https://h.example/a")
    with pytest.raises(InvalidURL):
        resource_key("ftp://h.example/")


async def test_twelve_spellings_as_input_give_three_requests() -> None:
    gate = LinkGate()
    summary = await crawl(gate, SPELLINGS, lambda url, resp: None)
    assert len(gate.fetched) == 3 and summary.pages == 3
    assert summary.duplicates == 9 and summary.unaccounted() == 0
    assert set(gate.fetched) <= set(SPELLINGS)  # the URL sent is never rewritten


async def test_twelve_spellings_as_links_give_three_requests() -> None:
    gate = LinkGate()

    def handler(url: str, resp: Page) -> list[str]:
        return SPELLINGS if url == "http://h.example/start" else []

    summary = await crawl(gate, ["http://h.example/start"], handler)
    assert len(gate.fetched) == 4  # the start page and the 3 resources
    assert summary.discovered == 3 and summary.duplicates == 9
    assert summary.links == 12 and summary.unaccounted() == 0


async def test_url_key_merges_more_but_sends_the_url_as_given() -> None:
    gate = LinkGate()

    def no_tracking(url: str) -> str:
        return resource_key(url).split("?", 1)[0]

    urls = ["http://h.example/a?utm_source=x", "http://h.example/a?utm_source=y",
            "http://h.example/b"]
    summary = await crawl(gate, urls, lambda url, resp: None, url_key=no_tracking)
    assert gate.fetched == ["http://h.example/a?utm_source=x", "http://h.example/b"]
    assert summary.duplicates == 1


async def test_a_url_key_that_raises_makes_the_url_invalid_not_the_crawl() -> None:
    def key(url: str) -> str:
        if "bad" in url:
            raise ValueError("no key for this one")
        return url

    results: list[CrawlResult] = []
    summary = await crawl(LinkGate(), ["http://h.example/bad", "http://h.example/ok"],
                          lambda url, resp: None, url_key=key, on_result=results.append)
    assert summary.pages == 1 and summary.invalid == 1
    assert [r.kind for r in results].count("invalid") == 1


@pytest.mark.soak  # 200,000 links: CI runs it every time
@pytest.mark.slow
async def test_a_page_of_many_links_is_fully_counted() -> None:
    n = 200_000  # past every bound that turned links away uncounted (benchmarks: a million)

    def handler(url: str, resp: Page) -> Any:
        if url == "http://h.example/":
            return (f"http://h.example/{i}" for i in range(n))
        return None

    summary = await asyncio.wait_for(
        crawl(LinkGate(), ["http://h.example/"], handler, max_seen=1000, max_queued=1000,
              concurrency=32),
        120)
    assert summary.links == n and summary.links_cut == 0
    # Past the unnamed bounds every link is turned away and counted, none lost.
    assert summary.discovered + summary.dropped == n
    assert summary.unaccounted() == 0
    assert summary.pages == 1 + summary.discovered


async def test_links_past_max_links_are_cut_and_the_page_counted() -> None:
    def handler(url: str, resp: Page) -> Any:
        return [f"http://h.example/{i}" for i in range(10)] if url == "http://h.example/" else None

    summary = await crawl(LinkGate(), ["http://h.example/"], handler, max_links=4)
    assert summary.links == 4 and summary.links_cut == 1 and summary.pages == 5
    assert any("max_links" in line for line in summary.explain())


async def test_a_stopped_crawl_records_what_was_in_flight() -> None:
    gate = LinkGate(latency=10.0)  # never answers before the stop
    stop = asyncio.Event()
    results: list[CrawlResult] = []
    urls = [f"http://h{i}.example/" for i in range(20)]
    task = asyncio.ensure_future(crawl(gate, urls, lambda url, resp: None, concurrency=5,
                                       stop=stop, on_result=results.append))
    while len(gate.fetched) < 5:
        await asyncio.sleep(0.01)
    stop.set()
    summary = await asyncio.wait_for(task, 10)
    assert summary.interrupted == 5 and summary.in_flight == 0
    assert sorted(r.url for r in results if r.kind == "interrupted") == sorted(gate.fetched)
    assert summary.queued == 15 and summary.unaccounted() == 0


async def test_a_cancelled_crawl_records_what_was_in_flight() -> None:
    gate = LinkGate(latency=10.0)
    results: list[CrawlResult] = []
    task = asyncio.ensure_future(crawl(gate, ["http://a.example/", "http://b.example/"],
                                       lambda url, resp: None, on_result=results.append))
    while len(gate.fetched) < 2:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(r.url for r in results) == ["http://a.example/", "http://b.example/"]
    assert all(r.interrupted and r.kind == "interrupted" for r in results)


async def test_links_read_before_an_iterable_fails_are_kept_and_counted() -> None:
    def failing() -> Any:
        for i in range(5000):  # more than one chunk is handed over before the failure
            yield f"http://h.example/{i}"
        raise OSError("the page's parser broke")

    results: list[CrawlResult] = []
    summary = await crawl(LinkGate(), ["http://h.example/"],
                          lambda u, r: failing() if u == "http://h.example/" else None,
                          on_result=results.append, concurrency=32)
    first = next(r for r in results if r.url == "http://h.example/")
    assert first.error is not None and "parser broke" in first.error
    assert summary.links == 5000 and summary.discovered == 5000
    assert summary.pages == 5000 and summary.errors == 1
    assert summary.unaccounted() == 0
