"""A named SQLite crawl against the same crawl unnamed: requests per second.

    python benchmarks/crawl_named.py [--hosts 1000] [--pages 20] [--rounds 2]
        [--concurrency 32] [--json FILE]

Both crawl the same ``hosts`` x ``pages`` URLs on the loopback server
(``testbed/server.py``) through ``gate.crawl`` with delay 0, in this process,
turn about (unnamed, named, unnamed, ...), each round with a fresh SQLite
store file for the gate (robots.txt and host state) so that only the crawl's
state differs.  Each page's handler reads the body and returns one link to a
page of its host (a new URL for the first pages, then ones known: the
seen-set is asked on every page).  The figure is requests per second over the
whole crawl (robots.txt included), best of ``rounds``; the ratio named/unnamed
is the goal (>= 0.85).

``--scrapy`` measures Scrapy the same way beside it (a child process per crawl,
``ROBOTSTXT_OBEY``, delay 0, the same concurrency, one request per host at a
time, the same links followed): without and with ``JOBDIR`` (its resumable
crawl: the scheduler's queue and the seen-set on disk).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.report import write_json
from robotgate import Network, RobotGate
from robotgate.store.sqlite import SQLiteStore
from testbed.server import BenchServer, HostPlan

AGENT = "NamedCrawlBench/1.0 (+https://example.com/bot)"


async def _one(srv: BenchServer, urls: list[str], pages: int, concurrency: int, folder: Path,
               named: bool, n: int) -> dict[str, Any]:
    async def handler(url: str, resp: Any) -> list[str]:
        await resp.read()
        head, _, page = url.rpartition("/")
        return [f"{head}/{(int(page) + 1) % (pages + 5)}"]

    store = SQLiteStore(folder / f"gate-{n}.sqlite3")
    async with RobotGate(AGENT, delay=0, store=store,
                         network=Network(max_origins=len(urls))) as gate:
        began = time.monotonic()
        summary = await gate.crawl(urls, handler, concurrency=concurrency, scope="host",
                                   name="bench" if named else None)
        seconds = time.monotonic() - began
    stats = srv.stats().values()
    requests = sum(s.page_requests + s.robots_requests for s in stats)
    srv.reset()
    return {"pages": summary.pages, "requests": requests, "seconds": round(seconds, 3),
            "requests_per_s": round(requests / seconds, 1)}


def scrapy_child(spec_path: str) -> None:
    """Crawl the spec's URLs with Scrapy (run in a child process of its own)."""
    from scrapy import Request, Spider
    from scrapy.crawler import CrawlerProcess
    from scrapy.http import Response

    spec = json.loads(Path(spec_path).read_text())
    pages = int(spec["pages"])

    class NamedBench(Spider):
        name = "named_bench"

        async def start(self) -> Any:
            for url in spec["urls"]:
                yield Request(url, callback=self.page)

        def page(self, response: Response) -> Any:
            head, _, page = response.url.rpartition("/")
            yield Request(f"{head}/{(int(page) + 1) % (pages + 5)}", callback=self.page)

    settings: dict[str, Any] = {
        "ROBOTSTXT_OBEY": True, "USER_AGENT": AGENT, "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": spec["concurrency"], "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "AUTOTHROTTLE_ENABLED": False, "RETRY_ENABLED": False, "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "ERROR",
    }
    if spec.get("jobdir"):
        settings["JOBDIR"] = spec["jobdir"]
    process = CrawlerProcess(settings=settings)
    process.crawl(NamedBench)
    process.start()


async def _scrapy(srv: BenchServer, urls: list[str], pages: int, concurrency: int,
                  folder: Path, jobdir: bool, n: int) -> dict[str, Any]:
    spec = folder / f"scrapy-{n}.json"
    spec.write_text(json.dumps({"urls": urls, "pages": pages, "concurrency": concurrency,
                                "jobdir": str(folder / f"job-{n}") if jobdir else None}))
    began = time.monotonic()
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--scrapy-child", str(spec))
    await child.wait()
    seconds = time.monotonic() - began
    stats = srv.stats().values()
    requests = sum(s.page_requests + s.robots_requests for s in stats)
    srv.reset()
    return {"requests": requests, "seconds": round(seconds, 3),
            "requests_per_s": round(requests / seconds, 1)}


async def compare(hosts: int, pages: int, rounds: int, concurrency: int,
                  scrapy: bool = False) -> dict[str, Any]:
    plans = [HostPlan("allow", pages=pages + 5)] * hosts
    result: dict[str, Any] = {"hosts": hosts, "pages_per_host": pages, "rounds": rounds,
                              "concurrency": concurrency, "unnamed": [], "named": []}
    with tempfile.TemporaryDirectory() as tmp:
        async with BenchServer(plans) as srv:
            urls = [srv.url(h, f"/page/{p}") for p in range(pages) for h in range(hosts)]
            n = 0
            for _ in range(rounds):
                for named in (False, True):
                    n += 1
                    run = await _one(srv, urls, pages, concurrency, Path(tmp), named, n)
                    result["named" if named else "unnamed"].append(run)
                    print(f"  {'named' if named else 'unnamed':8} {run}", file=sys.stderr)
                for jobdir in (False, True) if scrapy else ():
                    n += 1
                    kind = "scrapy_jobdir" if jobdir else "scrapy"
                    run = await _scrapy(srv, urls, pages, concurrency, Path(tmp), jobdir, n)
                    result.setdefault(kind, []).append(run)
                    print(f"  {kind:8} {run}", file=sys.stderr)
    kinds = ("unnamed", "named", "scrapy", "scrapy_jobdir") if scrapy else ("unnamed", "named")
    best = {k: max(r["requests_per_s"] for r in result[k]) for k in kinds}
    result["best_requests_per_s"] = best
    result["ratio_named_to_unnamed"] = round(best["named"] / best["unnamed"], 3)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--quick", action="store_true", help="50 hosts x 5 pages, one round")
    ap.add_argument("--scrapy", action="store_true",
                    help="measure Scrapy without and with JOBDIR beside it")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--scrapy-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.scrapy_child:
        scrapy_child(args.scrapy_child)
        return 0
    if args.quick:
        args.hosts, args.pages, args.rounds = 50, 5, 1
    result = asyncio.run(compare(args.hosts, args.pages, args.rounds, args.concurrency,
                                 args.scrapy))
    best = result["best_requests_per_s"]
    print(f"{result['hosts']} hosts x {result['pages_per_host']} pages (+ links), delay 0, "
          f"concurrency {result['concurrency']}, best of {result['rounds']}:\n"
          f"  unnamed            {best['unnamed']:>9,.1f} requests/s\n"
          f"  named (SQLite)     {best['named']:>9,.1f} requests/s\n"
          f"  ratio named/unnamed {result['ratio_named_to_unnamed']:.3f} (goal >= 0.85)")
    if args.scrapy:
        print(f"  Scrapy             {best['scrapy']:>9,.1f} requests/s\n"
              f"  Scrapy with JOBDIR {best['scrapy_jobdir']:>9,.1f} requests/s\n"
              f"  ratio JOBDIR/plain {best['scrapy_jobdir'] / best['scrapy']:.3f}")
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
