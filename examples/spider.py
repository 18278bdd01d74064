"""A polite breadth-first spider: one site, a page budget, robots.txt obeyed.

    python examples/spider.py https://example.com/ --max-pages 20 --agent 'MyBot/1.0 (+URL)'

Every request goes through ``gate.fetch``, so robots.txt is fetched once and
obeyed, the site is paced (``--delay`` or its Crawl-delay, whichever is
longer) and 429/503 answers make the gate back off.  Links are found with the
standard library's HTML parser; only pages on the start URL's host are
followed.  Importable: ``await main(start_url, max_pages=...)`` returns what
was crawled.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

import aiohttp

from robotgate import Disallowed, InvalidURL, RobotGate

AGENT = "ExampleSpider/1.0 (+https://example.com/bot)"


class LinkParser(HTMLParser):
    """Collects the ``href`` of every ``<a>`` in a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            for name, value in attrs:
                if name == "href" and value:
                    self.links.append(value)


def extract_links(html: str, base_url: str) -> list[str]:
    """Absolute http(s) URLs linked from ``html``, fragments dropped, in page order."""
    parser = LinkParser()
    parser.feed(html)
    parser.close()
    found: list[str] = []
    for href in parser.links:
        url = urldefrag(urljoin(base_url, href.strip())).url
        if urlsplit(url).scheme in ("http", "https") and url not in found:
            found.append(url)
    return found


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
                    html = await resp.text(errors="replace")
                    status, final, kind = resp.status, str(resp.url), resp.content_type
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
            if status == 200 and kind == "text/html":
                for link in extract_links(html, final):
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
