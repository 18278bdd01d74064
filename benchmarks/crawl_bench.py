"""Head-of-line blocking: a naive bounded worker pool over ``gate.fetch`` vs ``gate.crawl``.

    python benchmarks/crawl_bench.py [--hosts 20] [--pages 10] [--delay 0.5]
        [--workers 4] [--budget 15] [--json FILE]

Both crawl the same URLs, sorted by host (the order a URL list usually has),
with the same gate settings (``delay``, one request in flight per host) on the
loopback server (``testbed/server.py``), in this process.

naive     ``workers`` tasks take URLs from one queue in input order and call
          ``gate.fetch``: they all end up waiting on the first host's pacing
          while the other hosts sit idle.  Stopped after ``budget`` seconds;
          the pages fetched by then are reported.
crawl     ``await gate.crawl(urls, handler, concurrency=workers)``: per-host
          queues ordered by each host's next allowed time.

The politeness bound is ``pages * delay``: robots.txt counts as a host's first
request, then its pages one delay apart; a crawl near it keeps every worker
busy across hosts.
The server's arrival times give the smallest interval per host.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.report import command_line, write_json
from robotgate import Disallowed, RobotGate
from testbed.server import BenchServer, HostPlan

AGENT = "CrawlBench/1.0 (+https://example.com/bot)"


async def _naive(gate: RobotGate, urls: Sequence[str], workers: int, budget: float) -> int:
    queue: asyncio.Queue[str] = asyncio.Queue()
    for url in urls:
        queue.put_nowait(url)
    pages = 0

    async def worker() -> None:
        nonlocal pages
        while True:
            url = queue.get_nowait()
            try:
                async with gate.fetch(url) as resp:
                    await resp.read()
                pages += 1
            except Disallowed:
                pass

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    _, pending = await asyncio.wait(tasks, timeout=budget)
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return pages


async def _min_interval(srv: BenchServer) -> float | None:
    gaps = [s.min_interval for s in srv.stats().values() if s.min_interval is not None]
    return min(gaps) if gaps else None


async def head_of_line(
    hosts: int = 20,
    pages: int = 10,
    delay: float = 0.5,
    workers: int = 4,
    budget: float = 15.0,
) -> dict[str, Any]:
    """Run both contenders on a fresh loopback server; returns the figures."""
    plans = [HostPlan("allow")] * hosts
    async with BenchServer(plans) as srv:
        urls = [srv.url(h, f"/page/{p}") for h in range(hosts) for p in range(pages)]
        result: dict[str, Any] = {
            "hosts": hosts, "pages_per_host": pages, "delay": delay, "workers": workers,
            "bound_s": round(pages * delay, 3),
        }

        async with RobotGate(AGENT, delay=delay) as gate:
            began = time.monotonic()
            fetched = await _naive(gate, urls, workers, budget)
            result["naive"] = {
                "pages": fetched, "of": len(urls), "seconds": round(time.monotonic() - began, 2),
                "finished": fetched == len(urls),
                "min_interval_s": await _min_interval(srv),
            }
        srv.reset()

        async with RobotGate(AGENT, delay=delay) as gate:
            async def handler(url: str, resp: Any) -> None:
                await resp.read()

            summary = await gate.crawl(urls, handler, concurrency=workers)
            result["crawl"] = {
                "pages": summary.pages, "of": len(urls), "seconds": round(summary.elapsed, 2),
                "finished": summary.pages == len(urls),
                "min_interval_s": await _min_interval(srv),
                "robots_requests": sum(s.robots_requests for s in srv.stats().values()),
            }
    return result


def _report(result: dict[str, Any]) -> str:
    naive, crawl = result["naive"], result["crawl"]
    head = (
        f"{result['workers']} workers, {result['hosts']} hosts x {result['pages_per_host']} "
        f"pages sorted by host, delay {result['delay']:g}s "
        f"(politeness bound ~{result['bound_s']:g}s)"
    )
    rows = []
    for name, r in (("naive pool over gate.fetch", naive), ("gate.crawl", crawl)):
        gap = r["min_interval_s"]
        rows.append(
            f"  {name:<28} {r['pages']:>4}/{r['of']} pages in {r['seconds']:>6.2f}s"
            f"{'' if r['finished'] else ' (stopped)'}; smallest interval per host "
            + (f"{gap:.3f}s" if gap is not None else "-")
        )
    return "\n".join([head, *rows])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison and print both times."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=20)
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--delay", type=float, default=0.5)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--budget", type=float, default=15.0,
                    help="seconds the naive pool may run (default 15)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    result = asyncio.run(
        head_of_line(args.hosts, args.pages, args.delay, args.workers, args.budget)
    )
    print(_report(result))
    print(command_line(argv))
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
