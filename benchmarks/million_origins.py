"""A million origins in one process: time per origin, RSS and open descriptors as it goes.

    python benchmarks/million_origins.py [--origins 1000000] [--concurrency 256]
        [--max-origins 100000] [--max-seen N] [--nofile 1024] [--samples 20] [--json FILE]

Each origin is its own host name, ``o123456.test``, which a resolver of the benchmark's
maps onto a few loopback addresses (``127.0.2.1``...) where a server in a process of its
own answers every name: robots.txt ``Disallow: /private``, and a small page.  Two parts,
each in a child process of its own, at an open-file limit of ``--nofile`` (1024, most
Linux systems' default), with a gate at its defaults (``max_origins``, its own session
and its connection bound, derived from the open-file limit):

allowed   ``await gate.allowed("http://oN.test:PORT/page")`` once per origin: one
          robots.txt fetch each.
crawl     ``gate.crawl`` over one page per origin (``http://cN.test:PORT/page``), a
          robots.txt fetch and the page each.

As it goes, ``--samples`` times, each part notes the origins done, the seconds per
origin since the last sample, the process's RSS, the memory blocks Python holds
(``sys.getallocatedblocks()``: objects, not the allocator's free pages) and its open
file descriptors (and the connections the gate's session holds), and writes the row to
stderr as it goes (a run cut short still tells): past ``max_origins``
the gate's tables stop growing, and the connections never pass their bound, so RSS and
descriptors stay flat.  The crawl's own memory has bounds of its own: the URLs it has
seen, a 20-character digest each, up to ``max_seen`` (``--max-seen``; the crawl's
default, 100,000), the host tallies of its summary up to ``max_hosts`` (10,000); and
the parsed origins robotgate caches (65,536 at most).  Every origin must be allowed
(none "unreachable") and every page fetched; each origin that is not is counted by
its reason, and when it came.

The harness keeps nothing per origin: the names resolve by arithmetic (no table), the
results are counted, not kept, and the samples are ``--samples`` rows.

The resolver is put in place of aiohttp's default before the gate makes its session
(the gate's own session takes no resolver), so that what is measured is the gate as a
user gets it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from benchmarks.harness.report import command_line, machine, write_json
from testbed.children import child_env

ROBOTS = b"User-agent: *\nDisallow: /private\n"
PAGE = b"<html><body><p>one page</p></body></html>"
#: The loopback addresses the names map onto (each a listening socket of the server).
FIRST_ADDRESS = (127, 0, 2, 1)


def addresses(count: int) -> list[str]:
    a, b, c, d = FIRST_ADDRESS
    return [f"{a}.{b}.{c + i // 254}.{d + i % 254}" for i in range(count)]


# -- the server: a process of its own ------------------------------------------------


async def serve(count: int, port: int) -> None:
    async def answer(request: web.BaseRequest) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(body=ROBOTS, content_type="text/plain")
        return web.Response(body=PAGE, content_type="text/html")

    server = web.Server(answer)
    loop = asyncio.get_running_loop()
    listeners = [await loop.create_server(server, host, port, backlog=4096)
                 for host in addresses(count)]
    print(json.dumps({"port": port}), flush=True)
    try:
        await asyncio.Event().wait()  # until the parent ends the process
    finally:
        for listener in listeners:
            listener.close()


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


# -- the client: a child per part ------------------------------------------------------


class LoopbackNames(AbstractResolver):
    """``oN.test`` and ``cN.test`` to one of the server's loopback addresses."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.addresses = addresses(int(os.environ["MILLION_ADDRESSES"]))

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        number = int(host[1:].partition(".")[0])
        address = self.addresses[number % len(self.addresses)]
        return [{"hostname": host, "host": address, "port": port, "family": socket.AF_INET,
                 "proto": 0, "flags": socket.AI_NUMERICHOST}]

    async def close(self) -> None:
        return None


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


class Samples:
    """Notes, ``every`` origins, the seconds per origin since the last note, RSS and
    descriptors (and the connections the gate's session holds)."""

    def __init__(self, every: int, gate: Any) -> None:
        self.every = max(1, every)
        self.gate = gate
        self.rows: list[dict[str, Any]] = []
        self.began = self.last = time.monotonic()
        self.last_done = 0

    def note(self, done: int) -> None:
        now = time.monotonic()
        connector = self.gate.session.connector
        self.rows.append({
            "origins": done, "seconds": round(now - self.began, 2),
            "us_per_origin": round((now - self.last) / max(1, done - self.last_done) * 1e6, 1),
            "rss_mb": round(rss_mb(), 1), "blocks": sys.getallocatedblocks(),
            "descriptors": open_descriptors(),
            "connections": getattr(connector, "open_connections", None)})
        self.last, self.last_done = now, done
        print(json.dumps(self.rows[-1]), file=sys.stderr, flush=True)  # a run cut short still tells


class Reasons:
    """Why origins were not allowed or fetched, and when: each reason's count, and the
    count of URLs done when each of the first :data:`KEPT` came (bounded, as the rest
    of the harness)."""

    KEPT = 1000

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.at: list[int] = []

    def note(self, reason: str, done: int) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        if len(self.at) < self.KEPT:
            self.at.append(done)

    def figures(self) -> dict[str, Any]:
        return {"unreachable_reasons": self.counts, "unreachable_at": self.at}


async def part_allowed(origins: int, port: int, concurrency: int, max_origins: int | None,
                       samples: int) -> dict[str, Any]:
    from robotgate import Network, RobotGate

    network = Network() if max_origins is None else Network(max_origins=max_origins)
    numbers = iter(range(origins))
    done = allowed = 0
    refused = Reasons()
    async with RobotGate("MillionBot/1.0", delay=0, network=network) as gate:
        notes = Samples(origins // samples, gate)
        notes.note(0)

        async def worker() -> None:
            nonlocal done, allowed
            for n in numbers:  # shared: each number taken once
                url = f"http://o{n}.test:{port}/page"
                answer = await gate.allowed(url)
                allowed += answer  # counted after the await: the workers share it
                done += 1
                if not answer:  # why, and when: the cached verdict's reason
                    refused.note((await gate.decide(url)).reason, done)
                if done % notes.every == 0:
                    notes.note(done)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        stats = gate.stats
        bound = getattr(gate.session.connector, "max_connections", None)
    return {"origins": origins, "allowed": allowed, "robots_requests": stats["robots_requests"],
            "max_connections": bound, "samples": notes.rows, **refused.figures()}


def crawl_urls(origins: int, port: int) -> Iterator[str]:
    return (f"http://c{n}.test:{port}/page" for n in range(origins))


async def part_crawl(origins: int, port: int, concurrency: int, max_origins: int | None,
                     samples: int, max_seen: int | None = None) -> dict[str, Any]:
    from robotgate import Network, RobotGate
    from robotgate.crawl import CrawlResult
    from robotgate.crawl.options import CrawlOptions

    network = Network() if max_origins is None else Network(max_origins=max_origins)
    async with RobotGate("MillionBot/1.0", delay=0, network=network) as gate:
        notes = Samples(origins // samples, gate)
        notes.note(0)
        finished = 0
        unreachable = Reasons()

        def on_result(record: CrawlResult) -> None:
            nonlocal finished
            if record.retried:
                return
            finished += 1
            if record.decision is not None and record.decision.unreachable:
                # Why, and when: a run's "unreachable" must be explained, not only counted.
                unreachable.note(record.decision.reason, finished)
            if finished % notes.every == 0:
                notes.note(finished)

        async def handler(url: str, resp: aiohttp.ClientResponse) -> None:
            await resp.read()

        options: CrawlOptions = {"on_result": on_result, "max_queued": concurrency * 8}
        if max_seen is not None:
            options["max_seen"] = max_seen
        summary = await gate.crawl(crawl_urls(origins, port), handler,
                                   concurrency=concurrency, **options)
        bound = getattr(gate.session.connector, "max_connections", None)
    return {"origins": origins, "pages": summary.pages, "unreachable": summary.unreachable,
            "errors": summary.errors, "local_failures": summary.local_failures,
            "max_connections": bound, "samples": notes.rows, **unreachable.figures()}


def child_main(args: argparse.Namespace) -> int:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if args.nofile:  # a machine's default limit, as users have it
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(args.nofile, hard), hard))
    aiohttp.DefaultResolver = LoopbackNames  # type: ignore[assignment]
    sizes = (args.origins, args.port, args.concurrency, args.max_origins, args.samples)
    figures = asyncio.run(part_allowed(*sizes) if args.child == "allowed"
                          else part_crawl(*sizes, max_seen=args.max_seen))
    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3, 1)
    figures["nofile_limit"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    print(json.dumps(figures))
    return 0


# -- the parent ------------------------------------------------------------------------


def run_part(name: str, args: argparse.Namespace, port: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", name, "--origins", str(args.origins),
               "--port", str(port), "--concurrency", str(args.concurrency),
               "--samples", str(args.samples), "--nofile", str(args.nofile)]
    if args.max_origins is not None:
        command += ["--max-origins", str(args.max_origins)]
    if args.max_seen is not None:
        command += ["--max-seen", str(args.max_seen)]
    env = dict(child_env(), MILLION_ADDRESSES=str(args.addresses))
    # Its stderr is passed on: each sample as it is taken, and any traceback.
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, env=env, check=False)
    if done.returncode != 0:
        return {"error": f"exit status {done.returncode} (its stderr is above)"}
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def show(name: str, figures: dict[str, Any]) -> None:
    if "error" in figures:
        print(f"{name}: failed: {figures['error']}")
        return
    print(f"{name}: {figures['origins']:,} origins, open-file limit "
          f"{figures['nofile_limit']:,}, connections held to {figures['max_connections']:,}, "
          f"peak RSS {figures['peak_rss_mb']:,} MB")
    print(f"  {'origins':>10} {'seconds':>8} {'us/origin':>10} {'RSS MB':>8} "
          f"{'blocks':>9} {'fds':>6} {'conns':>6}")
    for row in figures["samples"]:
        print(f"  {row['origins']:>10,} {row['seconds']:>8} {row['us_per_origin']:>10} "
              f"{row['rss_mb']:>8} {row.get('blocks', '')!s:>9} {row['descriptors']:>6} "
              f"{row['connections']!s:>6}")
    outcome = {k: figures[k] for k in ("allowed", "robots_requests", "pages", "unreachable",
                                       "errors", "local_failures") if k in figures}
    print("  " + ", ".join(f"{k} {v:,}" for k, v in outcome.items()))
    for reason, count in figures.get("unreachable_reasons", {}).items():
        print(f"  unreachable x {count:,}: {reason}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--origins", type=int, default=1_000_000)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--max-origins", type=int, default=None,
                    help="the gate's Network(max_origins=...) (default: the gate's own)")
    ap.add_argument("--max-seen", type=int, default=None,
                    help="the crawl's max_seen, URLs remembered (default: the crawl's own)")
    ap.add_argument("--addresses", type=int, default=64,
                    help="loopback addresses the names map onto")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--nofile", type=int, default=1024,
                    help="the parts' open-file limit, ulimit -n (default 1024, most Linux "
                         "systems' own; 0: this process's)")
    ap.add_argument("--parts", default="allowed,crawl")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-progress", action="store_true", help="(no progress line is shown)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(args.addresses, args.port))
        return 0
    if args.child:
        return child_main(args)
    port = free_port(addresses(1)[0])
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--addresses", str(args.addresses),
         "--port", str(port)], stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        assert server.stdout is not None
        json.loads(server.stdout.readline())  # ready
        report: dict[str, Any] = {"machine": machine(), "sizes": vars(args) | {"port": port}}
        for name in args.parts.split(","):
            report[name] = run_part(name, args, port)
            show(name, report[name])
    finally:
        server.terminate()
        server.wait(30)
        if server.stdout is not None:
            server.stdout.close()
    report["command"] = command_line(argv)
    print(f"\n{report['command']}")
    if args.json:
        write_json(args.json, report)
        print(f"JSON: {args.json}")
    failed = any("error" in report[name] for name in args.parts.split(","))
    return 1 if failed else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
