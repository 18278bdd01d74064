"""A named SQLite crawl at scale: memory, enqueue rate, and a page of a million links.

    python benchmarks/crawl_scale.py [--urls 1000000] [--hosts 100000] [--crawl-seconds 20]
        [--links 1000000] [--json FILE]

enqueue   first alone (every request held: the input is only read into the
          file), then ``urls`` input URLs over ``hosts`` hosts go into a named crawl kept in
          an SQLite file (a gate-like object answers every request at once: no
          HTTP, so the figures are the frontier's and the store's); the rate is
          input URLs per second until the input is read, while the crawl runs.
          The crawl then goes on for ``crawl-seconds`` and stops.  The process's
          peak RSS (``ru_maxrss``) is the memory figure: goal < 250 MB.
links     one page returns ``links`` links, in an unnamed crawl and in a named
          SQLite crawl: every link is counted (``links``), none is lost (new +
          known + turned away = links).

Each part runs in a child process of its own, so that one's memory is not
the other's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.report import write_json
from testbed.crawl_gate import PlainAnswer, PlainCrawlGate


class _Answer(PlainAnswer):
    async def __aenter__(self) -> _Answer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


class _InstantGate(PlainCrawlGate):
    """Every URL allowed, no pacing, answered at once."""

    def pace_key(self, url: str) -> str:
        return url.split("/")[2]

    async def allowed(self, url: str) -> bool:
        return True

    async def decide(self, url: str) -> Any:
        raise AssertionError("every URL is allowed")

    def fetch(self, url: str) -> _Answer:
        return _Answer(url)


class _HeldGate(_InstantGate):
    """Every request waits for ever: the crawl only reads its input (enqueue alone)."""

    async def allowed(self, url: str) -> bool:
        await asyncio.Event().wait()
        return True


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def _enqueue_alone(urls: int, hosts: int, db: str) -> dict[str, Any]:
    from robotgate.crawl import CrawlSummary, Frontier
    from robotgate.store.sqlite import SQLiteStore

    summary = CrawlSummary()
    stop = asyncio.Event()
    async with SQLiteStore(db) as store:
        source = (f"http://h{i % hosts}.example/page/{i // hosts}" for i in range(urls))
        frontier = Frontier(_HeldGate(), source, lambda u, r: None, concurrency=64,
                            state=store.crawl_state("alone"), stop=stop, summary=summary)
        began = time.monotonic()
        task = asyncio.ensure_future(frontier.run())
        while not summary.input_done:
            await asyncio.sleep(0.01)
        seconds = time.monotonic() - began
        stop.set()
        await task
    return {"urls": urls, "seconds": round(seconds, 2), "urls_per_s": round(urls / seconds)}


async def _enqueue(urls: int, hosts: int, crawl_seconds: float, db: str) -> dict[str, Any]:
    from robotgate.crawl import CrawlSummary, Frontier
    from robotgate.store.sqlite import SQLiteStore

    def source() -> Any:
        for i in range(urls):
            yield f"http://h{i % hosts}.example/page/{i // hosts}"

    rss_before = _rss_mb()
    summary = CrawlSummary()
    stop = asyncio.Event()
    async with SQLiteStore(db) as store:
        frontier = Frontier(_InstantGate(), source(), lambda u, r: None, concurrency=64,
                            state=store.crawl_state("scale"), stop=stop, summary=summary)
        began, cpu = time.monotonic(), time.process_time()
        task = asyncio.ensure_future(frontier.run())
        while not summary.input_done:
            await asyncio.sleep(0.05)
        read_s, read_cpu = time.monotonic() - began, time.process_time() - cpu
        await asyncio.sleep(crawl_seconds)
        stop.set()
        await task
        counts = await store.crawl_state("scale").counts()
    return {"urls": urls, "hosts": hosts, "read_seconds": round(read_s, 2),
            "enqueue_urls_per_s": round(urls / read_s), "fetched_meanwhile": summary.pages,
            "read_cpu_seconds": round(read_cpu, 2),
            "enqueue_urls_per_cpu_s": round(urls / read_cpu),
            "stored": counts.total, "peak_rss_mb": round(_rss_mb(), 1),
            "rss_at_start_mb": round(rss_before, 1)}


async def _links(n: int, db: str | None) -> dict[str, Any]:
    from robotgate.crawl import Frontier
    from robotgate.store.sqlite import SQLiteStore

    def handler(url: str, resp: Any) -> Any:
        if url == "http://h.example/":
            return (f"http://h.example/{i}" for i in range(n))
        return None

    store = SQLiteStore(db) if db else None
    state = store.crawl_state("links") if store else None
    stop = asyncio.Event()
    frontier = Frontier(_InstantGate(), ["http://h.example/"], handler, state=state,
                        concurrency=64, stop=stop)
    began = time.monotonic()
    task = asyncio.ensure_future(frontier.run())
    while frontier.summary.links < n and not task.done():
        await asyncio.sleep(0.05)
    stop.set()  # the links are counted; crawling them all is not the point
    summary = await task
    if store is not None:
        await store.close()
    s = summary
    return {"named": db is not None, "links": s.links, "new": s.discovered,
            "known": s.duplicates, "turned_away": s.dropped, "links_cut": s.links_cut,
            "seconds": round(time.monotonic() - began, 2), "peak_rss_mb": round(_rss_mb(), 1)}


def _child(part: str, args: argparse.Namespace, tmp: str) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", part, "--urls", str(args.urls),
               "--hosts", str(args.hosts), "--crawl-seconds", str(args.crawl_seconds),
               "--links", str(args.links), "--tmp", tmp]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    figures: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urls", type=int, default=1_000_000)
    ap.add_argument("--hosts", type=int, default=100_000)
    ap.add_argument("--crawl-seconds", type=float, default=20.0)
    ap.add_argument("--links", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="50,000 URLs, 5,000 hosts, 2 s")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--tmp", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.urls, args.hosts, args.crawl_seconds, args.links = 50_000, 5_000, 2.0, 50_000
    if args.child == "enqueue-alone":
        print(json.dumps(asyncio.run(_enqueue_alone(args.urls, args.hosts,
                                                    f"{args.tmp}/alone.sqlite3"))))
        return 0
    if args.child == "enqueue":
        figures = asyncio.run(_enqueue(args.urls, args.hosts, args.crawl_seconds,
                                       f"{args.tmp}/enqueue.sqlite3"))
        print(json.dumps(figures))
        return 0
    if args.child in ("links-unnamed", "links-named"):
        db = f"{args.tmp}/links.sqlite3" if args.child == "links-named" else None
        print(json.dumps(asyncio.run(_links(args.links, db))))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        result = {part: _child(part, args, tmp)
                  for part in ("enqueue-alone", "enqueue", "links-unnamed", "links-named")}
    e, alone = result["enqueue"], result["enqueue-alone"]
    print(f"named SQLite crawl of {e['urls']:,} URLs over {e['hosts']:,} hosts:\n"
          f"  enqueue   {e['enqueue_urls_per_s']:>9,} URLs/s (goal >= 50,000; "
          f"{e['enqueue_urls_per_cpu_s']:,} per second of the process's CPU, crawling too), "
          f"{e['fetched_meanwhile']:,} fetched meanwhile and {args.crawl_seconds:g} s after\n"
          f"  enqueue   {alone['urls_per_s']:>9,} URLs/s with no page fetched "
          f"(the input alone, {alone['seconds']} s)\n"
          f"  peak RSS  {e['peak_rss_mb']:>9.1f} MB (goal < 250; {e['rss_at_start_mb']} MB "
          f"at start), {e['stored']:,} URLs stored")
    for part in ("links-unnamed", "links-named"):
        r = result[part]
        print(f"one page of {args.links:,} links, {part[6:]}: {r['links']:,} counted = "
              f"{r['new']:,} new + {r['known']:,} known + {r['turned_away']:,} turned away "
              f"({r['seconds']} s, peak RSS {r['peak_rss_mb']} MB)")
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
