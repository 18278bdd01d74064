"""A polite breadth-first spider: one site, a page budget, robots.txt obeyed.

    python examples/spider.py https://example.com/ --max-pages 20 --agent 'MyBot/1.0 (+URL)'

Every request goes through ``gate.fetch``, so robots.txt is fetched once and
obeyed, the site is paced (``--delay`` or its Crawl-delay, whichever is
longer) and 429/503 answers make the gate back off.  Links are read with
``robotgate.page_links`` (relative ones resolved, ``rel="nofollow"`` left out);
only pages on the start URL's host are followed, and none from a page whose
directives say ``nofollow`` (as ``gate.crawl`` does).  Importable:
``await main(start_url, max_pages=...)`` returns what was crawled.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import aiohttp

from robotgate import Disallowed, InvalidURL, RobotGate, page_links

AGENT = "ExampleSpider/1.0 (+https://example.com/bot)"


def extract_links(html: str, base_url: str) -> list[str]:
    """Absolute http(s) URLs linked from ``html``, fragments dropped, in page order."""
    return page_links(html.encode("utf-8"), base_url)


@dataclass
class Crawl:
    """What a crawl did: pages fetched (URL, status), URLs robots.txt kept us from,
    and URLs that failed."""

    fetched: list[tuple[str, int]] = field(default_factory=list)
    disallowed: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


async def main(
    start_url: str,
    *,
    max_pages: int = 50,
    agent: str = AGENT,
    from_: str | None = None,
    delay: float = 1.0,
    workers: int = 2,
    verbose: bool = False,
) -> Crawl:
    """Crawl breadth-first from ``start_url`` until ``max_pages`` pages are fetched
    or no same-host link is left."""
    host = urlsplit(start_url).netloc
    crawl = Crawl()
    queue: asyncio.Queue[str] = asyncio.Queue()
    seen = {start_url}
    queue.put_nowait(start_url)
    frontier_limit = 10 * max_pages  # URLs ever queued: bounds memory on huge sites
    taken = 0  # pages claimed: the budget is claimed before a fetch, not after

    async with RobotGate(agent, from_=from_, delay=delay) as gate:

        async def visit(url: str) -> bool:
            """Fetch one page and queue its links; False if robots.txt kept us out."""
            try:
                async with gate.fetch(url) as resp:
                    body = await resp.read()
                    status, final, kind = resp.status, str(resp.url), resp.content_type
                    nofollow = gate.directives(resp).nofollow  # X-Robots-Tag, meta robots
            except Disallowed as no:
                crawl.disallowed.append((url, no.decision.reason))
                if verbose:
                    print(f"skip {url}: {no.decision}")
                return False
            except (aiohttp.ClientError, asyncio.TimeoutError, InvalidURL) as exc:
                crawl.failed.append((url, repr(exc)))
                if verbose:
                    print(f"fail {url}: {exc!r}")
                return True
            crawl.fetched.append((url, status))
            if verbose:
                print(f"{status} {url}")
            if status == 200 and kind == "text/html" and not nofollow:
                for link in page_links(body, final):
                    same_host = urlsplit(link).netloc == host
                    if same_host and link not in seen and len(seen) < frontier_limit:
                        seen.add(link)
                        queue.put_nowait(link)
            return True

        async def worker() -> None:
            nonlocal taken
            while True:
                url = await queue.get()
                try:
                    if taken < max_pages:
                        taken += 1
                        if not await visit(url):
                            taken -= 1  # no request was sent: it costs no budget
                finally:
                    queue.task_done()

        tasks = [asyncio.create_task(worker()) for _ in range(workers)]
        try:
            await queue.join()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return crawl


def _cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("start_url")
    parser.add_argument("--max-pages", type=int, default=50)
    parser.add_argument("--agent", default=AGENT)
    parser.add_argument("--from", dest="from_", metavar="EMAIL")
    parser.add_argument("--delay", type=float, default=1.0)
    args = parser.parse_args(argv)
    try:
        crawl = asyncio.run(
            main(args.start_url, max_pages=args.max_pages, agent=args.agent,
                 from_=args.from_, delay=args.delay, verbose=True)
        )
    except InvalidURL as exc:
        print(f"spider.py: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    print(f"{len(crawl.fetched)} pages fetched, {len(crawl.disallowed)} skipped by robots.txt, "
          f"{len(crawl.failed)} failed")
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
