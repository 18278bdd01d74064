"""The longest the event loop is held by one page, robots.txt or sitemap, in ``gate.crawl``.

    python benchmarks/stalls.py [--scale 1.0] [--only CASE,...] [--before-src OLD/src]
        [--json benchmarks/results/stalls.json]

Each case is a child process (``--child CASE``: one JSON line) that crawls one loopback URL
with ``follow_links=True`` (a sitemap case walks ``gate.sitemaps`` instead) while a task on
the same loop wakes every 10 ms: the figure is the longest gap between two of its wakes, less
the 10 ms it slept; beside it in brackets the CPU time the loop's thread and the whole process
spent in that gap, then the most the loop's thread spent in any one gap (on a busy machine the
rest of a gap is the wait for a CPU).  This process serves the bodies on ``127.0.0.1`` (its
own loop, so the children's loops hold only the crawl).  With ``--before-src`` every case also
runs against that tree's robotgate, the two interleaved, side by side.  Goal: no gap over
0.25 s.

Sizes at ``--scale 1``: the crafted tags of issue 99 (10 MB ``<a href====...``, 10 MB of
2.6 M attributes, 20 MB tags), 50 MB pages of other shapes, a 50 MB robots.txt and a 50 MB
sitemap (one URL set; one ``<loc>`` of the whole file).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import web

from benchmarks.harness import RESULTS
from benchmarks.harness.children import child_json
from benchmarks.harness.report import Row, finish

SCRIPT = Path(__file__).resolve()
AGENT = "StallBench/1.0 (+https://example.invalid/bench)"
GOAL = 0.25
HEARTBEAT = 0.010
MB = 1_000_000


def _links_page(size: int) -> bytes:
    row = b'<li><a href="/p/%d">page</a> <a href="https://other.test/%d?a=1&amp;b=2">x</a></li>\n'
    parts, n, total = [], 0, 0
    while total < size:
        part = row % (n, n)
        parts.append(part)
        total += len(part)
        n += 1
    return b"<html><body><ul>" + b"".join(parts) + b"</ul></body></html>"


def _robots(size: int) -> bytes:
    lines, n, total = [b"User-agent: *\nDisallow: /private/\n"], 0, 0
    while total < size:
        line = b"Disallow: /filler/%08d/*/x$\n" % n if n % 3 else b"Allow: /filler/%08d/\n" % n
        lines.append(line)
        total += len(line)
        n += 1
    return b"".join(lines)


def _sitemap(size: int, origin: str) -> bytes:
    head = b'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
    parts, n, total = [head], 0, 0
    while total < size:
        part = b"<url><loc>%s/s/%d</loc><lastmod>2024-01-01</lastmod></url>\n" % (
            origin.encode(), n)
        parts.append(part)
        total += len(part)
        n += 1
    parts.append(b"</urlset>\n")
    return b"".join(parts)


#: What each case serves: (path of what is crawled or walked, {path: (type, body)}).
Bodies = dict[str, tuple[str, bytes]]


def cases(scale: float, origin: str) -> dict[str, tuple[str, Callable[[], Bodies]]]:
    def n(mb: float) -> int:
        return max(64, int(mb * MB * scale))

    def page(body: Callable[[], bytes]) -> tuple[str, Callable[[], Bodies]]:
        return "/page", lambda: {"/page": ("text/html", body())}

    robots_ok = b"User-agent: *\nDisallow: /private/\n"
    return {
        "10 MB <a href===...": page(lambda: b"<a href" + b"=" * n(10)),
        "10 MB tag, 2.6 M attributes": page(
            lambda: b"<a " + b"x=1 " * (n(10) // 4) + b"href=/late>"),
        "20 MB tag, 'x ' attributes": page(lambda: b"<a " + b"x " * (n(20) // 2) + b"href=/l>"),
        "20 MB <base x=1 ...": page(lambda: b"<base " + b"x=1 " * (n(20) // 4) + b"href=/b/>"),
        "20 MB tag, ' =' runs": page(lambda: b"<a x" + b" =" * (n(20) // 2) + b"href=/l>"),
        "50 MB '<a ' x 16 M": page(lambda: b"<a " * (n(50) // 3)),
        "50 MB of 5 KB tags": page(
            lambda: (b"<a " + b"x=1 " * 1250 + b"href=/t>") * (n(50) // 5010)),
        "50 MB unclosed comment": page(lambda: b"<a href=/c><!--" + b"x" * n(50)),
        "50 MB script of '</scrip'": page(lambda: b"<script>" + b"</scrip" * (n(50) // 7)),
        "50 MB links page": page(lambda: _links_page(n(50))),
        "50 MB robots.txt": ("/page", lambda: {
            "/robots.txt": ("text/plain", _robots(n(50))),
            "/page": ("text/html", b'<a href="/x">x</a>')}),
        "50 MB sitemap": ("sitemap", lambda: {
            "/robots.txt": ("text/plain", robots_ok),
            "/sitemap.xml": ("application/xml", _sitemap(n(50), origin))}),
        "50 MB sitemap <loc>": ("sitemap", lambda: {
            "/robots.txt": ("text/plain", robots_ok),
            "/sitemap.xml": ("application/xml",
                             b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                             b"<url><loc>" + b"a" * n(50) + b"</loc></url></urlset>")}),
    }


# --- the child: one crawl (or sitemap walk) with a heartbeat on its loop ---------------

async def _handler(url: str, resp: Any) -> None:
    return None


async def _warm_up(origin: str) -> None:
    """The same calls on a small site first: imports and first uses are no case's stall."""
    from robotgate import RobotGate

    warm = origin.replace("127.0.0.1", "127.0.0.2")
    async with RobotGate(AGENT, delay=0.0) as gate:
        async for _entry in gate.sitemaps(warm + "/"):
            pass
        await gate.crawl([warm + "/page"], _handler, follow_links=True, max_depth=1)


async def _child(case: str, origin: str, scale: float) -> dict[str, Any]:
    from robotgate import RobotGate

    target, _ = cases(scale, origin)[case]
    await _warm_up(origin)
    loop = asyncio.get_running_loop()
    longest = held = held_by_all = most_held = 0.0
    done = asyncio.Event()

    async def heartbeat() -> None:
        # Beside the longest gap, the CPU time the loop's thread and the whole process spent
        # in it, and the most the loop's thread spent in any one gap: on a busy machine the
        # rest of a gap is the wait for a CPU, not work of this process.
        nonlocal longest, held, held_by_all, most_held
        last, last_cpu, last_all = loop.time(), time.thread_time(), time.process_time()
        while not done.is_set():
            await asyncio.sleep(HEARTBEAT)
            now, cpu, cpu_all = loop.time(), time.thread_time(), time.process_time()
            if now - last - HEARTBEAT > longest:
                longest, held = now - last - HEARTBEAT, cpu - last_cpu
                held_by_all = cpu_all - last_all
            most_held = max(most_held, cpu - last_cpu)
            last, last_cpu, last_all = now, cpu, cpu_all

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(0.05)
    began = time.process_time()
    found = 0
    async with RobotGate(AGENT, delay=0.0) as gate:
        if target == "sitemap":
            async for _entry in gate.sitemaps(origin + "/"):
                found += 1
        else:
            summary = await gate.crawl([origin + target], _handler, follow_links=True,
                                       max_depth=1, concurrency=4)
            found = summary.links
    done.set()
    await beat
    return {"longest_gap": longest, "loop_cpu_in_it": held, "process_cpu_in_it": held_by_all,
            "most_loop_cpu_in_a_gap": most_held,
            "cpu": time.process_time() - began, "found": found}


# --- the parent: serves the bodies, runs the children ----------------------------------

#: Served on 127.0.0.2 (same port): what a child crawls before its heartbeat starts, so
#: that no first import or first use counts as the case's stall.
WARM: Bodies = {
    "/robots.txt": ("text/plain", b"User-agent: *\nDisallow: /private/\n"),
    "/page": ("text/html", b'<a href="/x">x</a>'),
    "/x": ("text/html", b"<p>x</p>"),
    "/sitemap.xml": ("application/xml",
                     b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                     b"<url><loc>http://127.0.0.2/x</loc></url></urlset>"),
}


async def _serve(bodies: Bodies) -> tuple[web.AppRunner, int]:
    async def answer(request: web.Request) -> web.Response:
        warm = request.host.startswith("127.0.0.2")
        found = (WARM if warm else bodies).get(request.path)
        if found is None:
            return web.Response(status=404)
        return web.Response(body=found[1], content_type=found[0])

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert server is not None and server.sockets
    port: int = server.sockets[0].getsockname()[1]
    await web.TCPSite(runner, "127.0.0.2", port).start()
    return runner, port


async def _run(args: argparse.Namespace) -> int:
    names = list(cases(args.scale, "http://h"))
    if args.only:
        names = [n for n in names if any(part in n for part in args.only.split(","))]
    trees: dict[str, Path | None] = {"after": None}
    if args.before_src:
        trees = {"before": args.before_src, "after": None}
    rows: list[Row] = [{"section": f"longest loop stall, seconds (scale {args.scale:g})"}]
    report: dict[str, Any] = {"cases": {}}
    began = time.monotonic()
    bodies: Bodies = {}
    runner, port = await _serve(bodies)
    origin = f"http://127.0.0.1:{port}"
    for name in names:
        bodies.clear()
        bodies.update(cases(args.scale, origin)[name][1]())
        values: dict[str, str] = {}
        figures: dict[str, Any] = {}
        ok = True
        for label, src in trees.items():
            got = await child_json(
                SCRIPT, ["--child", name, "--origin", origin, "--scale", str(args.scale)],
                900, src=src)
            figures[label] = got
            if "error" in got:
                values[label] = "error"
                ok = ok and label != "after"
                print(f"{name} [{label}]: {got['error']}", file=sys.stderr)
                continue
            values[label] = (f"{got['longest_gap']:.3f} ({got['loop_cpu_in_it']:.3f}, "
                             f"{got['process_cpu_in_it']:.3f}; "
                             f"{got['most_loop_cpu_in_a_gap']:.3f})")
            if label == "after":
                ok = got["longest_gap"] <= GOAL
        report["cases"][name] = figures
        print(f"{name:32} " + "  ".join(f"{k} {v}" for k, v in values.items()), flush=True)
        rows.append({"figure": name, "values": values, "goal": f"<= {GOAL}", "pass": ok})
    await runner.cleanup()
    report["seconds"] = time.monotonic() - began
    columns = list(trees)
    return finish(report, rows, "", args.json, None, columns=columns)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="size of every case (1: 50 MB)")
    ap.add_argument("--only", help="cases whose name holds one of these words (comma-separated)")
    ap.add_argument("--before-src", type=Path, help="another tree's src/, run side by side")
    ap.add_argument("--json", type=Path, default=RESULTS / "stalls.json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--origin", help=argparse.SUPPRESS)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.child:
        import json

        print(json.dumps(asyncio.run(_child(args.child, args.origin, args.scale))))
        return 0
    return asyncio.run(_run(args))


if __name__ == "__main__":
    sys.exit(main())
