"""Fleet crawl benchmark: W worker processes share one named crawl through Redis.

    python benchmarks/fleet_crawl.py [--hosts 200] [--pages 25] [--workers 4] [--delay 0.2]
                                     [--margin 0.05] [--nice 10] [--cluster] [--kill]
                                     [--restart] [--seeds first|all]

starts a throwaway ``redis-server`` (with ``--cluster`` also a 3-master Redis Cluster)
and the loopback server (``testbed/server.py``, every host ``allow``).  The workers
(``testbed/fleet_crawl.py``) crawl the named crawl ``fleet`` under a fresh prefix; each
seeds page 0 of its share of the hosts, and page 0 links to the host's other pages;
with ``--seeds all`` every URL is given at the start instead, each worker seeding every
``W``-th of them (all hosts' pages), and no page links to another.
Each worker leases the servers it crawls and paces them itself.  From the server's
records: URLs asked for more than once (``dup``), URLs never asked (``lost``), pacing
violations (two page requests to one host closer than ``--delay``) and the smallest
gap; from the workers: pages/s and Redis round trips per page (``RedisStore.round_trips``,
everything included: robots.txt, host state, the crawl's reads and writes).  On a plain
server the workers reach Redis through a counting proxy (``testbed/counting_proxy.py``):
``wire RT/page`` is what the wire saw, start-up, connections' set-up and the
subscribers' traffic included.  ``--breakdown`` prints, after each run on a plain
server, the wire's round trips by what they carried (a command, a script by name, a
pipeline's calls joined by ``+``) and phase (``start``: the workers connecting, up to
their go; ``run``: the rest).

``--kill`` adds a run per Redis in which worker 0 is killed with SIGKILL once a third
of the pages were asked for: the others take its servers over when its leases lapse
(6 s); ``dup`` is then at most its pages in flight, ``lost`` must be 0.

``--restart`` adds a run per Redis in which Redis (the server, or every node of the
cluster) is restarted empty once a third of the pages were asked for: each worker must
say the crawl is gone (``said lost``: how many did), and then starts it again from its
seeds (``testbed/fleet_crawl.py --again``), so the pages done before are asked again
(``dup``), none is lost, and no host is asked sooner than the delay across the restart.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` and `testbed.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.report import command_line
from testbed.counting_proxy import CountingProxy
from testbed.fleet import pacing_violations
from testbed.fleet_crawl import worker_processes
from testbed.server import ServerProcess

HEADERS = ["redis", "workers", "run", "pages", "dup", "lost", "violations", "min gap s",
           "pages/s", "RT/page", "wire RT/page", "after event s", "said lost"]


def script_names() -> dict[str, str]:
    """Every Lua script of the Redis store: name -> source (for the breakdown)."""
    from robotgate.store.redis import crawl_scripts, scripts

    return {name: value.source for module in (scripts, crawl_scripts)
            for name, value in vars(module).items() if isinstance(value, scripts.Script)}


def breakdown(kinds: Counter[str], pages: int) -> str:
    """The round trips of a run by kind, most first, with their share a page."""
    total = sum(kinds.values())
    lines = [f"  {n:6d}  {n / pages:5.3f}/page  {kind}" for kind, n in kinds.most_common()]
    return "\n".join([*lines, f"  {total:6d}  {total / pages:5.3f}/page  (all)"])


async def one_run(args: argparse.Namespace, server: ServerProcess, url: str, cluster: bool,
                  event: str, directory: Path, restart: Callable[[], None],
                  proxy: CountingProxy | None) -> list[str]:
    await server.reset()
    wire_before = proxy.round_trips if proxy is not None else 0
    kinds_before = Counter(proxy.kinds) if proxy is not None else Counter[str]()
    if proxy is not None:
        proxy.phase = "start "
    bases = server.base_urls
    if args.seeds == "all":
        seeds = [f"{base}/page/{page}" for page in range(args.pages) for base in bases]
    else:
        seeds = [f"{base}/page/0" for base in bases]
    prefix = f"fleetcrawl:{uuid.uuid4().hex[:8]}"
    options = ["--delay", str(args.delay), "--pages", str(args.pages),
               "--concurrency", str(args.concurrency), "--pacing-margin", str(args.margin),
               "--nice", str(args.nice), *(["--cluster"] if cluster else []),
               *(["--again"] if event == "restart" else []),
               *(["--no-links"] if args.seeds == "all" else [])]
    total = len(bases) * args.pages
    after: float | None = None
    kill = event == "kill"
    async with worker_processes([seeds[w::args.workers] for w in range(args.workers)],
                                directory, proxy.url if proxy is not None else url, prefix,
                                *options) as procs:
        if proxy is not None:
            proxy.phase = "run "
        started = time.monotonic()
        runs = [asyncio.ensure_future(p.communicate(b"go\n")) for p in procs]
        if event != "shared":
            while (await server.totals())["page_requests"] < total // 3:
                await asyncio.sleep(0.1)
            if kill:
                os.kill(procs[0].pid, signal.SIGKILL)
            else:
                await asyncio.to_thread(restart)
            struck = time.monotonic()
        outs = await asyncio.wait_for(asyncio.gather(*runs[1 if kill else 0:]), args.timeout)
        if event != "shared":
            after = time.monotonic() - struck
        if kill:
            with contextlib.suppress(Exception):
                await runs[0]
        elapsed = time.monotonic() - started
    wire = proxy.round_trips - wire_before if proxy is not None else None
    if proxy is not None and args.breakdown:
        kinds = Counter(proxy.kinds)
        kinds.subtract(kinds_before)
        sys.stderr.write(breakdown(+kinds, max(1, total)) + "\n")
    if args.breakdown:
        sys.stderr.write("  pages by worker: "
                         + " ".join(str(json.loads(out.decode().strip().splitlines()[-1])["pages"])
                                    for out, _ in outs) + "\n")
    results = [json.loads(out.decode().strip().splitlines()[-1]) for out, _ in outs]
    stats = await server.stats()
    hosts = stats["hosts"].values()
    asked = sum(h["page_requests"] for h in hosts)
    distinct = sum(h["distinct_pages"] for h in hosts)
    violations, gaps = 0, []
    for h in hosts:
        short, least = pacing_violations(h["page_times"], args.delay)
        violations += short
        if least is not None:
            gaps.append(least)
    trips = sum(r["round_trips"] for r in results)
    said = sum(1 for r in results if r.get("lost"))
    return [
        "cluster" if cluster else "server", str(args.workers),
        {"kill": "kill -9"}.get(event, event),
        f"{distinct}/{total}", str(asked - distinct), str(total - distinct), str(violations),
        f"{min(gaps):.3f}" if gaps else "-", f"{distinct / elapsed:.0f}",
        f"{trips / distinct:.2f}" if distinct else "-",
        f"{wire / distinct:.2f}" if wire is not None and distinct else "-",
        "-" if after is None else f"{after:.1f}",
        f"{said}/{len(results)}" if event == "restart" else "-",
    ]


async def bench(args: argparse.Namespace) -> list[list[str]]:
    from testbed.redis_server import MISSING_REASON, LocalCluster, RedisServer, find_redis_server

    if find_redis_server() is None:
        raise SystemExit(f"fleet_crawl.py: {MISSING_REASON}")
    rows: list[list[str]] = []
    server = ServerProcess()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="robotgate-fc-")))
        redis = stack.enter_context(RedisServer.start())
        proxy = await CountingProxy(redis.host, redis.port).start()
        proxy.name_scripts(script_names())
        targets: list[tuple[str, bool, Callable[[], None]]] = [(redis.url, False, redis.restart)]
        if args.cluster:
            cluster = stack.enter_context(LocalCluster.start(tmp / "cluster", masters=3))
            targets.append((cluster.url, True, cluster.restart))
        events = ["shared", *(["kill"] if args.kill else []),
                  *(["restart"] if args.restart else [])]
        try:
            await server.start(["--hosts", str(args.hosts), "--mix", "allow=1",
                                "--pages", str(args.pages)])
            for url, is_cluster, restart in targets:
                for event in events:
                    directory = tmp / f"{int(is_cluster)}-{event}"
                    directory.mkdir()
                    rows.append(await one_run(args, server, url, is_cluster, event, directory,
                                              restart, None if is_cluster else proxy))
                    sys.stderr.write("  ".join(rows[-1]) + "\n")
        finally:
            await server.close()
            await proxy.close()
    return rows


def table(rows: Sequence[Sequence[str]]) -> str:
    body = [HEADERS, *rows]
    widths = [max(len(line[i]) for line in body) for i in range(len(HEADERS))]
    out = ["  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True))
           for line in body]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--pages", type=int, default=25)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=64, help="per worker (default 64)")
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--margin", type=float, default=0.05,
                    help="the gate's pacing_margin (one server process plays every host)")
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--seeds", choices=("first", "all"), default="first",
                    help="first: each host's page 0, which links to the rest; all: every URL")
    ap.add_argument("--cluster", action="store_true", help="also on a 3-master Redis Cluster")
    ap.add_argument("--breakdown", action="store_true",
                    help="print the wire's round trips by command and phase after each run")
    ap.add_argument("--kill", action="store_true", help="also a run with a worker killed")
    ap.add_argument("--restart", action="store_true",
                    help="also a run with Redis restarted empty mid-crawl")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    rows = asyncio.run(bench(args))
    print(table(rows))
    print(f"({args.hosts} hosts x {args.pages} pages, delay {args.delay:g} s,"
          f" concurrency {args.concurrency} per worker, seeds: {args.seeds})")
    print(command_line(argv))
    bad = [r for r in rows if r[5] != "0" or r[6] != "0" or (r[2] == "shared" and r[4] != "0")
           or (r[2] == "restart" and r[12] != f"{args.workers}/{args.workers}")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
