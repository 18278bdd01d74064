"""What reading page directives and links costs a ``gate.crawl`` of 100 KB pages.

    python benchmarks/crawl_directives.py [--pages 200] [--runs 5]

A loopback server (in this process) serves 100 KB HTML pages, each with a 6 KB head holding
a robots meta tag and 300 links; ``gate.crawl`` fetches them with ``delay=0``.  For each way
of crawling, the script times the calls to ``gate.directives`` and to ``page_links`` with the
thread's CPU clock around each call and divides by the process's CPU time over the crawl
(client and server together): the share of the crawl spent reading directives, and links.

* ``no consumer``: the handler reads the body and returns no links, default options: nothing
  uses the directives, so the crawl reads none;
* ``record_directives``: the same, asking for every page's directives in its record;
* ``links (obey_nofollow)``: the handler returns ``page_links`` of each page (each link is a
  page already known): the directives judge those links.

Runs are interleaved; the figures are medians.  CPU clocks on a shared machine are noisy: read
the shares, which both sides of a run share, rather than the times.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from aiohttp import web

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from robotgate import RobotGate, page_links

AGENT = "BenchBot/1.0 (+https://example.com/bot)"


def _page(n: int, pages: int) -> bytes:
    head = ('<head><title>page</title><meta name="robots" content="index, follow">'
            + '<meta name="description" content="' + "x" * 5800 + '"></head>')
    links = "".join(f'<a href="/p/{(n + i) % pages}">link {i}</a> ' for i in range(300))
    filler = "<p>" + "lorem ipsum dolor sit amet " * 3000 + "</p>"
    return f"<html>{head}<body>{links}{filler}</body></html>".encode()[:100_000]


async def _serve(pages: int) -> tuple[web.AppRunner, str]:
    bodies = {f"/p/{n}": _page(n, pages) for n in range(pages)}

    async def answer(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(body=bodies[request.path], content_type="text/html")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


async def _crawl(origin: str, pages: int, way: str) -> dict[str, float]:
    spent = {"directives": 0.0, "links": 0.0, "directive_calls": 0.0}

    async def no_links(url: str, resp: Any) -> None:
        await resp.read()

    async def links(url: str, resp: Any) -> list[str]:
        body = await resp.read()
        began = time.thread_time()
        found = page_links(body, str(resp.url))
        spent["links"] += time.thread_time() - began
        return found

    async with RobotGate(AGENT, delay=0) as gate:
        directives = gate.directives

        def timed(resp: Any, body: bytes | None = None) -> Any:
            began = time.thread_time()
            try:
                return directives(resp, body)
            finally:
                spent["directives"] += time.thread_time() - began
                spent["directive_calls"] += 1

        gate.directives = timed  # type: ignore[method-assign]
        seeds = [f"{origin}/p/{n}" for n in range(pages)]
        cpu = time.process_time()
        if way == "no consumer":
            await gate.crawl(seeds, no_links, concurrency=8)
        elif way == "record_directives":
            await gate.crawl(seeds, no_links, concurrency=8, record_directives=True)
        else:
            await gate.crawl(seeds, links, concurrency=8)
        spent["cpu"] = time.process_time() - cpu
    return spent


async def main(pages: int, runs: int) -> None:
    runner, origin = await _serve(pages)
    ways = ["no consumer", "record_directives", "links (obey_nofollow)"]
    found: dict[str, list[dict[str, float]]] = {way: [] for way in ways}
    try:
        for _ in range(runs):
            for way in ways:
                found[way].append(await _crawl(origin, pages, way))
    finally:
        await runner.cleanup()
    print(f"gate.crawl of {pages} pages of 100 KB (6 KB head, 300 links each), "
          f"medians of {runs} runs; CPU: client and server in one process")
    print(f"{'way':24} {'CPU s':>7} {'directive calls':>16} {'directives':>11} {'page_links':>11}")
    for way in ways:
        rows = found[way]
        cpu = statistics.median(r["cpu"] for r in rows)
        calls = statistics.median(r["directive_calls"] for r in rows)
        share = statistics.median(r["directives"] / r["cpu"] for r in rows)
        links = statistics.median(r["links"] / r["cpu"] for r in rows)
        print(f"{way:24} {cpu:7.2f} {calls:16.0f} {share:10.1%} {links:10.1%}")
    print("command: python benchmarks/crawl_directives.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.pages, args.runs))
