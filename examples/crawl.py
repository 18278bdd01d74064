"""A polite multi-site crawler in a page of code, on ``gate.crawl``.

    python examples/crawl.py https://example.com/ https://example.org/ --max-pages 100

``gate.crawl`` keeps one queue per host and hands a URL to a worker only when
its host may be asked (robots.txt fetched once and obeyed, ``--delay`` or the
site's Crawl-delay between two requests), so a few workers stay busy across
many sites.  The handler reads each page's links with ``robotgate.page_links``
and returns those on the start URLs' hosts, which join the crawl (each URL
once; none from a page whose directives say ``nofollow``).  Importable:
``await main(start_urls, ...)`` returns the crawl's summary.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from robotgate import CrawlResult, CrawlSummary, RobotGate, page_links

AGENT = "ExampleCrawler/1.0 (+https://example.com/bot)"


async def main(
    start_urls: Sequence[str],
    *,
    max_pages: int = 100,
    agent: str = AGENT,
    delay: float = 1.0,
    concurrency: int = 4,
    verbose: bool = False,
) -> CrawlSummary:
    """Crawl from ``start_urls`` on their hosts until ``max_pages`` pages or no link is left."""
    hosts = {urlsplit(url).netloc for url in start_urls}
    stop = asyncio.Event()
    fetched = 0

    async def handler(url: str, resp: Any) -> list[str]:
        if resp.status != 200 or resp.content_type != "text/html":
            return []
        links = page_links(await resp.read(), str(resp.url))
        return [link for link in links if urlsplit(link).netloc in hosts]

    def on_result(result: CrawlResult) -> None:
        nonlocal fetched
        if verbose:
            what = result.status or result.error or f"skipped: {result.decision}"
            print(f"{what} {result.url}")
        if result.kind == "page":
            fetched += 1
            if fetched >= max_pages:
                stop.set()  # the budget is spent: pages in flight are cancelled

    async with RobotGate(agent, delay=delay) as gate:
        return await gate.crawl(start_urls, handler, concurrency=concurrency,
                                on_result=on_result, stop=stop)


def _cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("start_urls", nargs="+", metavar="URL")
    parser.add_argument("--max-pages", type=int, default=100)
    parser.add_argument("--agent", default=AGENT)
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)
    try:
        summary = asyncio.run(main(args.start_urls, max_pages=args.max_pages, agent=args.agent,
                                   delay=args.delay, concurrency=args.concurrency,
                                   verbose=True))
    except KeyboardInterrupt:
        return 130
    print(f"{summary.pages} pages fetched, {summary.skipped} skipped by robots.txt, "
          f"{summary.errors} errors, {len(summary.hosts)} hosts, {summary.elapsed:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
