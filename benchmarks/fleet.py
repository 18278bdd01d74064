"""Fleet benchmark: the same crawl with 1, 2 and 4 worker processes sharing one Redis.

    python benchmarks/fleet.py [--hosts 200] [--pages 25] [--workers 1,2,4] [--tasks 2000]
                               [--delay 0.2] [--margin 0.05] [--nice 10] [--cluster]
                               [--mix partial=1,allow=1] [--json PATH]

starts a throwaway ``redis-server`` (``testbed/redis_server.py``) and the
loopback server (``testbed/server.py``) in child processes; with
``--cluster`` also a 3-master Redis Cluster on loopback, and every run is made
on both, the cluster's rows beside the single server's.  For each
worker count it runs the crawl twice under a fresh key prefix: *cold* (Redis
empty: the workers compete for every origin's robots.txt) and *warm* (the
same crawl again on the same prefix, new worker processes: robots.txt comes
from Redis).  Every worker gets every origin (page ``i`` of each host goes to
worker ``i mod W``), so the workers compete for the same origins.  The table
gives, from the server's records: robots.txt requests per origin (min/max),
disallowed pages that reached the server, pacing violations (two page
requests to one host closer than the interval, whichever workers sent them),
the smallest gap seen between two requests to one host (all origins of a
host together: the server records per host address, whatever the port, and
the gate paces per host name by default); and from the workers: slots given back because the
worker was too late to use them (``gate.stats["late_slots"]``), pages/s and
Redis round trips per page (``RedisStore.round_trips``, everything included).

The server records a request when its handler starts, and it plays all the
hosts in one process: a request may queue there behind those for other
hosts, which real origins never share.  Hence ``--margin`` (the gate's
``pacing_margin``) defaults to 0.05 s here, and the workers run ``--nice``
below the server so its records show when requests were sent.  A full run
takes about 2 to 3 minutes on 2 cores.

The workers are ``testbed/fleet.py`` processes (its :class:`Fleet`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` and `testbed.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.report import command_line
from testbed.fleet import Fleet, FleetChecks, split_urls
from testbed.server import ServerProcess, page_paths

# -- the benchmark ------------------------------------------------------------------


@dataclass
class Row:
    redis: str
    workers: int
    run: str
    checks: FleetChecks
    pages: int
    answered: int
    urls: int
    problems: int
    elapsed: float
    round_trips: int
    late_slots: int

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def trips_per_page(self) -> float:
        return self.round_trips / self.pages if self.pages else float("nan")

    def cells(self) -> list[str]:
        c = self.checks
        return [
            self.redis, str(self.workers), self.run, f"{c.robots_min}/{c.robots_max}",
            str(c.disallowed_at_server), str(c.violations),
            "-" if c.min_gap is None else f"{c.min_gap:.3f}",
            f"{self.answered}/{self.urls}", str(self.problems),
            str(self.late_slots), f"{self.pages_per_s:.0f}", f"{self.trips_per_page:.2f}",
        ]


HEADERS = ["redis", "workers", "run", "robots/origin", "disallowed", "violations", "min gap s",
           "answered", "errors", "late slots", "pages/s", "RT/page"]


def table(rows: Sequence[Row]) -> str:
    body = [HEADERS, *(row.cells() for row in rows)]
    widths = [max(len(line[i]) for line in body) for i in range(len(HEADERS))]
    out = ["  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True))
           for line in body]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def host_urls(base_urls: Sequence[str], pages: int) -> list[list[str]]:
    paths = page_paths(pages)
    return [[base + path for path in paths] for base in base_urls]


async def bench(args: argparse.Namespace) -> list[Row]:
    from testbed.redis_server import (
        MISSING_REASON,
        LocalCluster,
        RedisServer,
        find_redis_server,
    )

    if find_redis_server() is None:
        raise SystemExit(f"fleet.py: {MISSING_REASON}")
    counts = [int(part) for part in args.workers.split(",") if part.strip()]
    rows: list[Row] = []
    server = ServerProcess()
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="robotgate-fleet-"))
        redis = stack.enter_context(RedisServer.start())
        targets = [("server", redis.url, False)]
        if args.cluster:
            cluster = stack.enter_context(
                LocalCluster.start(Path(tmp) / "cluster", masters=3)
            )
            targets.append(("cluster", cluster.url, True))
        try:
            await server.start([
                "--hosts", str(args.hosts), "--mix", args.mix, "--pages", str(args.pages),
                "--crawl-delay", str(args.crawl_delay),
            ])
            port = server.info["port"]
            addresses = server.info["hosts"]
            scenarios = server.info["scenarios"]
            intervals = {
                addr: max(args.delay, args.crawl_delay) if kind == "crawl_delay" else args.delay
                for addr, kind in zip(addresses, scenarios, strict=True)
            }
            per_host = host_urls([f"http://{a}:{port}" for a in addresses], args.pages)
            total = sum(len(urls) for urls in per_host)
            for workers in counts:
                for kind, url, is_cluster in targets:
                    prefix = f"fleetbench:{uuid.uuid4().hex[:8]}:{workers}"
                    for run in ("cold", "warm"):
                        await server.reset()
                        directory = Path(tmp) / f"{kind}-{workers}-{run}"
                        directory.mkdir()
                        _progress(f"{kind}, {workers} worker(s), {run}: {total:,} URLs ...")
                        options = ["--nice", str(args.nice), "--pacing-margin", str(args.margin)]
                        async with Fleet(url, prefix, split_urls(per_host, workers),
                                         directory, tasks=args.tasks, delay=args.delay,
                                         cluster=is_cluster, options=options) as fleet:
                            fleet.go()
                            summaries = await fleet.results(args.timeout)
                        stats = await server.stats()
                        rows.append(_row(kind, workers, run, summaries,
                                         FleetChecks.of(stats, intervals), total))
                        _progress(table(rows[-1:]).splitlines()[-1] + "\n")
                        for message in sorted({m for s in summaries for m in s["messages"]})[:5]:
                            _progress(f"    {message}")
        finally:
            await server.close()
    return rows


def _row(redis: str, workers: int, run: str, summaries: list[dict[str, Any]],
         checks: FleetChecks, total: int) -> Row:
    return Row(
        redis=redis,
        workers=workers,
        run=run,
        checks=checks,
        pages=sum(s["fetched"] for s in summaries),
        answered=sum(s["fetched"] + s["disallowed"] for s in summaries),
        urls=total,
        problems=sum(s["errors"] + s["store_errors"] + s["other_status"] for s in summaries),
        elapsed=max(s["elapsed"] for s in summaries),
        round_trips=sum(s["round_trips"] for s in summaries),
        late_slots=sum(s["late_slots"] for s in summaries),
    )


def _progress(text: str) -> None:
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=200, help="origins (default 200)")
    ap.add_argument("--pages", type=int, default=25, help="pages per origin (default 25)")
    ap.add_argument("--workers", default="1,2,4", help="worker counts (default 1,2,4)")
    ap.add_argument("--tasks", type=int, default=2000, help="tasks per worker (default 2000)")
    ap.add_argument("--delay", type=float, default=0.2, help="seconds per host (default 0.2)")
    ap.add_argument("--crawl-delay", type=float, default=0.3,
                    help="Crawl-delay of crawl_delay hosts (default 0.3)")
    ap.add_argument("--mix", default="partial=1,allow=1",
                    help="server scenarios (default partial=1,allow=1)")
    ap.add_argument("--margin", type=float, default=0.05,
                    help="the gate's pacing_margin (default 0.05: one server process plays "
                         "every host here, and requests queue in it before it records them)")
    ap.add_argument("--nice", type=int, default=10,
                    help="run the workers this much below the server and Redis (default 10)")
    ap.add_argument("--timeout", type=float, default=120.0, help="bound on one run (s)")
    ap.add_argument("--cluster", action="store_true",
                    help="also run every crawl on a 3-master Redis Cluster")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.monotonic()
    rows = asyncio.run(bench(args))
    print(table(rows))
    print(f"({args.hosts} origins x {args.pages} pages, {args.tasks} tasks per worker, "
          f"delay {args.delay:g} s, pacing margin {args.margin:g} s, mix {args.mix}; "
          f"{time.monotonic() - started:.0f} s in all)")
    print(command_line(argv))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([
            {**dict(zip(HEADERS, row.cells(), strict=True)), "elapsed": row.elapsed,
             "round_trips": row.round_trips, "pages": row.pages} for row in rows
        ], indent=2))
    bad = [row for row in rows if row.checks.violations or row.checks.disallowed_at_server
           or row.problems or row.answered != row.urls
           or row.checks.robots_max != (1 if row.run == "cold" else 0)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
