"""``gate.crawl`` on loopback: many hosts, URLs sorted by host, measured at the servers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from robotgate import RobotGate
from robotgate.crawl import CrawlResult
from testbed.server import BenchServer, HostPlan

pytestmark = pytest.mark.slow

AGENT = "CrawlTest/1.0 (+https://example.com/bot)"


async def test_a_bounded_crawl_over_many_hosts_keeps_every_promise() -> None:
    hosts, pages, delay, concurrency = 10, 5, 0.3, 3
    plans = [HostPlan("partial", pages=50)] * hosts
    async with BenchServer(plans) as srv:
        # Sorted by host, with one disallowed URL per host: the order that blocks a
        # naive worker pool at the head of the line.
        urls = [srv.url(h, f"/page/{p}") for h in range(hosts) for p in range(pages)]
        urls += [srv.url(h, "/private/4") for h in range(hosts)]
        urls.sort()
        running = 0
        peak = 0

        async def handler(url: str, resp: Any) -> list[str]:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            try:
                await resp.read()
                await asyncio.sleep(0.01)
            finally:
                running -= 1
            # Page 0 of each host links to page 40: it joins the crawl.
            return [url.replace("/page/0", "/page/40")] if url.endswith("/page/0") else []

        results: list[CrawlResult] = []
        async with RobotGate(AGENT, delay=delay) as gate:
            summary = await gate.crawl(urls, handler, concurrency=concurrency,
                                       on_result=results.append)
        stats = srv.stats()
    assert summary.pages == hosts * (pages + 1) and summary.skipped == hosts
    assert summary.errors == 0 and summary.discovered == hosts
    assert len(results) == len(urls) + hosts
    assert peak <= concurrency
    for host in stats.values():
        assert host.robots_requests == 1
        assert host.disallowed_page_requests == 0
        assert host.page_requests == pages + 1
        assert "/page/40" in {p.path for p in host.page_log}
        assert host.min_interval is not None and host.min_interval >= delay
        assert host.max_concurrent_pages == 1
    # No worker parks at the head of the line: the first page requests the servers saw
    # went to as many hosts as there are workers (a naive pool of 3 sends host 0's pages
    # one delay apart while the other hosts wait, 15 s in all).  Told by the order of the
    # requests, not by how long the crawl took, which load stretches.
    first = sorted((p.time, key) for key, host in stats.items() for p in host.page_log)
    assert len({key for _, key in first[:concurrency]}) == concurrency, first[:concurrency]
