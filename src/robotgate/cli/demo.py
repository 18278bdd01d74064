"""``robotgate demo``: the gate at work on a local multi-host site, in one command.

It starts :class:`~robotgate.cli.demo_server.DemoServer` on loopback, crawls
three seed URLs per host (sorted by host, as URL lists usually are) through
``gate.crawl``, following the links each page gives, and prints what the
crawler did and what the servers saw: robots.txt fetched once per host,
disallowed URLs skipped with their reasons, requests spaced at least by each
host's interval.  No network is needed.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections import Counter
from typing import Any
from urllib.parse import urljoin

from .. import __version__
from ..crawl import CrawlResult, CrawlSummary
from ..gate.aiohttp_client import read_body
from ..policy.pacing import Pacing
from .args import EXIT_FAILED, EXIT_OK
from .demo_server import KINDS, DemoHost, DemoServer
from .report import Progress, host_table, isatty, skipped_origins

AGENT = f"robotgate-demo/{__version__} (+https://github.com/robotgate/robotgate)"
_HREF_RE = re.compile(r'href="([^"]+)"')
# Clock granularity: a gap this much under the interval is still on time.
_TOLERANCE = 0.001
_TABLE_ROWS = 12
#: The demo's max_crawl_delay: lower than the gate's default, so that the hosts asking
#: for a long Crawl-delay are skipped at once and the demo ends in seconds.
MAX_CRAWL_DELAY = 1.0


def _lowered_note() -> str:
    return (f"max_crawl_delay {MAX_CRAWL_DELAY:g} s: the demo lowers it from the "
            f"{Pacing().max_crawl_delay:g} s default")


def run_demo(args: argparse.Namespace) -> int:
    """The ``demo`` command; returns 0 when every promise held, 1 otherwise."""
    hosts = args.hosts or (14 if args.quick else 36)
    delay = args.delay or (0.1 if args.quick else 0.2)
    return asyncio.run(_demo(hosts, delay, args.concurrency, quiet=args.quiet))


async def _links(url: str, resp: Any) -> list[str]:
    body, _, _ = await read_body(resp, 65536, keep=True)
    if resp.status != 200:
        return []
    return [urljoin(url, href) for href in _HREF_RE.findall(body.decode("utf-8", "replace"))]


async def _demo(hosts: int, delay: float, concurrency: int, *, quiet: bool) -> int:
    from ..gate import RobotGate
    from ..store.memory import MemoryStore

    server = DemoServer(hosts, delay)
    await server.start()
    try:
        seeds = [server.base_url(h) + path for h in server.hosts
                 for path in ("/", "/page/1", "/private/1")]
        first, last = server.hosts[0].address, server.hosts[-1].address
        print(f"robotgate demo: {len(server.hosts)} hosts on {first} .. {last}, port "
              f"{server.port} (loopback only)\n"
              f"crawling {len(seeds)} seed URLs sorted by host, following links, "
              f"{concurrency} requests at a time, delay {delay:g}s per host\n"
              f"{_lowered_note()}\n", flush=True)
        summary = CrawlSummary()
        skips: Counter[str] = Counter()

        def on_result(result: CrawlResult) -> None:
            if result.decision is not None:
                skips[result.decision.reason] += 1

        progress = None
        if not quiet and isatty(sys.stderr):
            progress = Progress(sys.stderr, summary)
            progress.start()
        try:
            async with RobotGate(AGENT, delay=delay, store=MemoryStore(),
                                 max_crawl_delay=MAX_CRAWL_DELAY,
                                 max_concurrency=concurrency) as gate:
                await gate.crawl(seeds, _links, concurrency=concurrency, retries=1,
                                 on_result=on_result, summary=summary, timeout=10)
        finally:
            if progress is not None:
                await progress.stop()
        print(_report(server, summary, skips, delay), flush=True)
        return EXIT_OK if _promises(server, delay)[1] else EXIT_FAILED
    finally:
        await server.close()


def _interval(host: DemoHost, delay: float) -> float:
    return max(delay, host.crawl_delay or 0.0)


def _report(server: DemoServer, summary: CrawlSummary, skips: Counter[str],
            delay: float) -> str:
    lines = [
        f"crawled in {summary.elapsed:.1f}s: {summary.pages} pages fetched, "
        f"{summary.skipped} URLs refused by robots.txt, {summary.unreachable} not asked "
        f"(robots.txt unreachable), {summary.errors} errors, "
        f"{summary.discovered} URLs found in pages, {summary.retried} retried after a 429",
        "",
        "per host (the crawler's view)",
        *("  " + line for line in host_table(summary, _TABLE_ROWS)),
    ]
    origins = skipped_origins(summary)
    if origins:
        lines += ["", *origins]
        if any("max_crawl_delay" in line for line in origins):
            lines.append(f"  ({_lowered_note()})")
    lines += ["", "skipped URLs, with the reason robots.txt gave"]
    for reason, n in skips.most_common():
        lines.append(f"  {n:>4} x {reason}")
    lines += ["", *_server_table(server, delay), "", _promises(server, delay)[0]]
    return "\n".join(lines)


def _server_table(server: DemoServer, delay: float) -> list[str]:
    """Per kind of host: what reached the servers, and the smallest gap they measured."""
    head = (f"{'what the servers saw':<46} {'hosts':>5} {'robots.txt':>10} {'pages':>6} "
            f"{'forbidden':>9} {'smallest gap':>12} {'asked':>6}")
    lines = [head]
    for kind, text in KINDS:
        hosts = [h for h in server.hosts if h.kind == kind]
        if not hosts:
            continue
        gaps = [g for g in (h.min_gap() for h in hosts) if g is not None]
        asked = max(_interval(h, delay) for h in hosts)
        lines.append(
            f"{kind + ': ' + text:<46} {len(hosts):>5} "
            f"{sum(h.robots_requests for h in hosts):>10} "
            f"{sum(len(h.page_times) for h in hosts):>6} "
            f"{sum(h.forbidden_requests for h in hosts):>9} "
            + (f"{min(gaps):>11.3f}s" if gaps else f"{'-':>12}")
            + f" {asked:>5g}s"
        )
    return lines


def _promises(server: DemoServer, delay: float) -> tuple[str, bool]:
    hosts = server.hosts
    robots = sum(h.robots_requests for h in hosts)
    forbidden = sum(h.forbidden_requests for h in hosts)
    early = [h for h in hosts
             if (g := h.min_gap()) is not None and g < _interval(h, delay) - _TOLERANCE]
    checks = [
        (robots == len(hosts),
         f"robots.txt fetched once per host: {robots} requests for {len(hosts)} hosts"),
        (forbidden == 0,
         f"no disallowed URL fetched: {forbidden} requests for paths robots.txt forbids"),
        (not early,
         "no host asked faster than its interval (delay, or a longer Crawl-delay)"
         + (f": {len(early)} hosts were" if early else "")),
    ]
    text = "\n".join(f"{'ok' if good else 'FAILED':<7}{what}" for good, what in checks)
    return text, all(good for good, _ in checks)
