"""One process running a named crawl on an SQLite file or on Redis
(tests/store/test_named_crawl_processes.py starts several on one crawl).

    python tests/support/children/named_crawl.py (--sqlite PATH | --redis URL --prefix P)
        --name N [--delay 0.05] [--concurrency 4] [--wait] URL...

It crawls the URLs given (the pages give no links: every URL is input).  With ``--wait``
it prints ``{"ready": pid}`` once its gate is open and starts when a line arrives on
stdin.  It prints one JSON line: the crawl's summary, or ``{"refused": message}`` (exit
3) when the store gives the crawl to another process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from robotgate import RobotGate
from robotgate.store.base import CrawlInUse, Store

REFUSED = 3


def store_of(args: argparse.Namespace) -> Store:
    if args.sqlite:
        from robotgate.store.sqlite import SQLiteStore

        return SQLiteStore(args.sqlite, flush_interval=0.05)
    from robotgate.store.redis import RedisStore

    return RedisStore(args.redis, prefix=args.prefix)


async def main(args: argparse.Namespace) -> int:
    async def handler(url: str, resp: Any) -> None:
        await resp.read()

    async with RobotGate("TestBot/1.0", delay=args.delay, store=store_of(args)) as gate:
        if args.wait:
            print(json.dumps({"ready": os.getpid()}), flush=True)
            if not sys.stdin.readline():
                return 1
        try:
            summary = await gate.crawl(args.urls, handler, name=args.name,
                                       concurrency=args.concurrency)
        except CrawlInUse as exc:
            print(json.dumps({"refused": str(exc), "pid": os.getpid()}), flush=True)
            return REFUSED
    print(json.dumps({"pid": os.getpid(), "pages": summary.pages, "errors": summary.errors,
                      "done_before": summary.done_before}), flush=True)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--sqlite")
    ap.add_argument("--redis")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--name", required=True)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--wait", action="store_true")
    ap.add_argument("urls", nargs="*")
    sys.exit(asyncio.run(main(ap.parse_args())))
