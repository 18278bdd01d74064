"""Workers sharing one named crawl through Redis (``gate.crawl(..., name=...)``).

One worker process::

    python testbed/fleet_crawl.py --redis URL --prefix P --name N --seeds-file F
                                  [--cluster] [--delay 0.2] [--pages 25] [--concurrency 16]
                                  [--no-links]

a ``RobotGate`` on a ``RedisStore`` crawling the named crawl ``N`` from the seeds of
the file (one a line; none is fine: it works on what the others seed).  Each page
``/page/0`` links to ``/page/1`` .. ``/page/{pages-1}`` of its host (the links come
from the URL, not the body).  With ``--wait`` it prints ``{"ready": pid}`` once
connected and starts when a line arrives on stdin.  It prints one JSON summary line.
With ``--again``, a crawl that ends because Redis lost it (restarted empty) is started
once more from the seeds, as its error says to (``lost`` in the summary: the error).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `testbed.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testbed.children import child_env

ROOT = Path(__file__).resolve().parents[1]
FLEET_CRAWL_PY = Path(__file__).resolve()
USER_AGENT = "RobotGateFleetCrawl/1.0 (+https://example.invalid/fleet)"


def links_of(url: str, pages: int) -> list[str]:
    """Page 0 of a host links to every other page of it."""
    base, _, path = url.partition("/page/")
    return [f"{base}/page/{p}" for p in range(1, pages)] if path == "0" else []


async def run_worker(args: argparse.Namespace) -> dict[str, Any]:
    from robotgate import Pacing, RobotGate, StoreError
    from robotgate.store.redis import RedisStore

    seeds = [line.strip() for line in Path(args.seeds_file).read_text().splitlines()]
    store = RedisStore(args.redis, prefix=args.prefix, cluster=args.cluster)
    gate = RobotGate(USER_AGENT, delay=args.delay, store=store,
                     pacing=Pacing(margin=args.pacing_margin))

    async def handler(url: str, resp: Any) -> list[str]:
        await resp.read()
        return [] if args.no_links else links_of(url, args.pages)

    await gate.open()
    try:
        if args.wait:
            print(json.dumps({"ready": os.getpid()}), flush=True)
            if not sys.stdin.readline():
                return {"aborted": True}
        before = store.round_trips
        started = time.monotonic()
        lost: str | None = None
        while True:
            try:
                summary = await gate.crawl([s for s in seeds if s], handler, name=args.name,
                                           concurrency=args.concurrency)
                break
            except StoreError as exc:
                if lost is not None or not args.again or "gone from Redis" not in str(exc):
                    raise
                lost = str(exc)
                print(f"fleet_crawl: {lost}", file=sys.stderr, flush=True)
        elapsed = time.monotonic() - started
        trips = store.round_trips - before
        counts = await gate.crawl_status(args.name)
    finally:
        await gate.close()
    return {
        "pid": os.getpid(),
        "pages": summary.pages,
        "errors": summary.errors,
        "skipped": summary.skipped,
        "round_trips": trips,
        "elapsed": elapsed,
        "fleet_done": counts.done if counts is not None else None,
        "lost": lost,  # the error of a crawl Redis lost (then crawled again), if any
    }


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="testbed/fleet_crawl.py",
                                 description="One worker of a named crawl shared through Redis.")
    ap.add_argument("--redis", required=True)
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--name", default="fleet")
    ap.add_argument("--seeds-file", required=True)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--pages", type=int, default=25, help="pages per host (links of page 0)")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--pacing-margin", type=float, default=0.01)
    ap.add_argument("--no-links", action="store_true",
                    help="follow no links: the seeds are the whole crawl")
    ap.add_argument("--nice", type=int, default=0, help="lower this process's CPU priority")
    ap.add_argument("--wait", action="store_true")
    ap.add_argument("--again", action="store_true",
                    help="start the crawl once more if Redis lost it")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.nice:
        os.nice(args.nice)
    print(json.dumps(asyncio.run(run_worker(args))), flush=True)
    return 0


async def spawn(index: int, directory: Path, seeds: Sequence[str], redis_url: str, prefix: str,
                *options: str) -> asyncio.subprocess.Process:
    """Start worker ``index`` with ``--wait`` (its stderr in ``directory``); returns once
    it is connected."""
    seeds_file = directory / f"crawler{index}.seeds"
    seeds_file.write_text("".join(s + "\n" for s in seeds))
    with (directory / f"crawler{index}.stderr").open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(FLEET_CRAWL_PY), "--wait", "--redis", redis_url,
            "--prefix", prefix, "--seeds-file", str(seeds_file), *options,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=log,
            env=child_env(), cwd=str(ROOT))
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    if not line.startswith(b'{"ready"'):
        await proc.wait()
        raise RuntimeError(f"crawler {index} did not start: {line!r}\n"
                           + (directory / f"crawler{index}.stderr").read_text(errors="replace"))
    return proc


@contextlib.asynccontextmanager
async def worker_processes(
    seeds: Sequence[Sequence[str]], directory: Path, redis_url: str, prefix: str, *options: str
) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """Worker ``i`` started with ``seeds[i]`` (see :func:`spawn`), one after the other;
    any still running at the end is killed."""
    procs: list[asyncio.subprocess.Process] = []
    try:
        for index, own in enumerate(seeds):
            procs.append(await spawn(index, directory, own, redis_url, prefix, *options))
        yield procs
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


if __name__ == "__main__":
    sys.exit(main())
