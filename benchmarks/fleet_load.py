"""Promise 3 in a fleet on a busy machine, timed at the kernel.

    python benchmarks/fleet_load.py [--hogs 0,6] [--runs 3] [--hosts 200] [--pages 12]
                                    [--workers 4] [--tasks 2000] [--delay 0.2]
                                    [--margin 0.1] [--nice 0] [--json PATH]

runs the crawl of ``tests/e2e/test_fleet.py::test_four_workers_share_one_budget``
(4 worker processes of ``testbed/fleet.py`` on a throwaway ``redis-server``, 200
loopback hosts of ``testbed/server.py``, every worker on every host) ``--runs``
times for each load: ``--hogs`` CPU-bound processes (``python -c 'while 1: pass'``)
beside it, killed after each run.  ``tcpdump -i lo -tt -n`` records every request
the workers send to the hosts; from its timestamps, per host, the smallest gap
between two page requests and the gaps below the delay, then the same with the
robots.txt requests counted in.  Beside them, the loopback server's own records
(the kernel's receive stamps, ``SO_TIMESTAMPNS``) and the slots the workers gave
up as too late (``late_slots``).  Needs tcpdump and the right to capture (root).
A run takes about 20 s unloaded and 40 s loaded on 2 cores.

    python benchmarks/fleet_load.py --pcap lo.pcap [--delay 0.2]

gives the same kernel figures for a capture made otherwise, such as
``tcpdump -i lo -n -U -w lo.pcap 'tcp and dst net 127.0.1.0/24'`` while
``pytest tests/e2e/test_fleet.py -k test_four_workers_share_one_budget`` runs
(hosts are told apart by address and port).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` and `testbed.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.report import command_line
from testbed.fleet import Fleet, FleetChecks, split_urls
from testbed.redis_server import RedisServer
from testbed.server import BenchServer, HostPlan, page_paths

# One packet's line in ``tcpdump -tt -n -A``: its time and where it went (address.port).
_PACKET = re.compile(r"^(\d+\.\d+) IP [\d.]+ > (\d+\.\d+\.\d+\.\d+\.\d+): ")
_REQUEST = re.compile(r"(GET|HEAD) (\S+) HTTP/1\.[01]")


@dataclass
class Run:
    hogs: int
    run: int
    pages: int
    kernel_page_gap: float | None
    kernel_page_short: int
    kernel_any_gap: float | None
    kernel_any_short: int
    server_page_gap: float | None
    server_any_short: int
    late_slots: int
    failures: int
    seconds: float

    def cells(self) -> list[str]:
        return [str(self.hogs), str(self.run), f"{self.pages:,}", _s(self.kernel_page_gap),
                str(self.kernel_page_short), _s(self.kernel_any_gap), str(self.kernel_any_short),
                _s(self.server_page_gap), str(self.server_any_short), str(self.late_slots),
                str(self.failures)]


HEADERS = ["hogs", "run", "pages", "kernel: least page gap", "below delay",
           "least gap, robots.txt in", "below delay", "server: least page gap",
           "below delay (robots.txt in)", "late slots", "failed tasks"]


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f} s"


def requests_seen(lines: Iterable[str]) -> list[tuple[float, str, str]]:
    """(time, host address.port, path) of each HTTP request in ``tcpdump -tt -n -A``'s
    text."""
    found: list[tuple[float, str, str]] = []
    packet: tuple[float, str] | None = None
    for line in lines:
        head = _PACKET.match(line)
        if head is not None:
            packet = (float(head[1]), head[2])
            continue
        request = _REQUEST.search(line)
        if request is not None and packet is not None:
            found.append((packet[0], packet[1], request[2]))
            packet = None  # one request per packet: clients do not pipeline
    return found


def least_gaps(times: Iterable[float], delay: float) -> tuple[float | None, int]:
    """The smallest gap between sorted ``times`` and how many are below ``delay``."""
    gaps = [b - a for a, b in itertools.pairwise(sorted(times))]
    return (min(gaps) if gaps else None), sum(g < delay for g in gaps)


def kernel_figures(seen: Sequence[tuple[float, str, str]], delay: float
                   ) -> tuple[float | None, int, float | None, int]:
    """Per host: (least page gap, page gaps below ``delay``) and the same over every request."""
    by_host: dict[str, list[tuple[float, str]]] = {}
    for at, host, path in seen:
        by_host.setdefault(host, []).append((at, path))
    page_least: list[float] = []
    any_least: list[float] = []
    page_short = any_short = 0
    for requests in by_host.values():
        least, short = least_gaps((t for t, p in requests if not p.startswith("/robots.txt")),
                                  delay)
        page_short += short
        if least is not None:
            page_least.append(least)
        least, short = least_gaps((t for t, _ in requests), delay)
        any_short += short
        if least is not None:
            any_least.append(least)
    return (min(page_least, default=None), page_short, min(any_least, default=None), any_short)


async def capture(port: int, pcap: Path) -> asyncio.subprocess.Process:
    """tcpdump on lo, writing every packet to the hosts' port (not the control
    address) to ``pcap``; returns once it listens."""
    proc = await asyncio.create_subprocess_exec(
        "tcpdump", "-i", "lo", "-n", "-U", "-s", "512", "-w", str(pcap),
        f"tcp dst port {port} and not dst host 127.0.0.1",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    line = await asyncio.wait_for(proc.stderr.readline(), 10)
    if b"listening" not in line:
        raise RuntimeError(f"tcpdump did not start: {line.decode(errors='replace')}")
    return proc


def read_capture(pcap: Path) -> list[tuple[float, str, str]]:
    out = subprocess.run(["tcpdump", "-r", str(pcap), "-tt", "-n", "-A"], check=True,
                         capture_output=True, text=True, errors="replace").stdout
    return requests_seen(out.splitlines())


def start_hogs(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(count)]


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for hog in hogs:
        hog.kill()
    for hog in hogs:
        hog.wait()


async def one_run(args: argparse.Namespace, hogs: int, index: int, directory: Path) -> Run:
    options = ("--pacing-margin", str(args.margin), "--nice", str(args.nice))
    template = HostPlan(pages=args.pages)
    started = time.monotonic()
    with RedisServer.start() as redis:
        async with BenchServer.mixed(args.hosts, {"partial": 1, "allow": 1},
                                     template=template) as srv:
            paths = page_paths(args.pages)
            per_host = [[srv.url(i, path) for path in paths] for i in range(len(srv.hosts))]
            lists = split_urls(per_host, args.workers)
            pcap = directory / "lo.pcap"
            dump = await capture(srv.port, pcap)
            load = start_hogs(hogs)
            try:
                async with Fleet(redis.url, f"load{uuid.uuid4().hex[:8]}", lists, directory,
                                 tasks=args.tasks, delay=args.delay, options=options) as fleet:
                    fleet.go()
                    summaries = await fleet.results(timeout=args.timeout)
            finally:
                stop_hogs(load)
                await asyncio.sleep(0.2)  # the last packets reach the capture
                dump.send_signal(signal.SIGINT)
                await dump.wait()
            found = FleetChecks.of(srv.stats_json(log=False), dict.fromkeys(srv.hosts, args.delay))
    seen = read_capture(pcap)
    page_gap, page_short, any_gap, any_short = kernel_figures(seen, args.delay)
    return Run(hogs=hogs, run=index, pages=found.page_requests, kernel_page_gap=page_gap,
               kernel_page_short=page_short, kernel_any_gap=any_gap, kernel_any_short=any_short,
               server_page_gap=found.min_gap, server_any_short=found.request_violations,
               late_slots=sum(s.get("late_slots", 0) for s in summaries),
               failures=sum(s["store_errors"] + s["errors"] for s in summaries),
               seconds=time.monotonic() - started)


async def bench(args: argparse.Namespace) -> list[Run]:
    runs: list[Run] = []
    for hogs in args.hogs:
        for index in range(1, args.runs + 1):
            with tempfile.TemporaryDirectory(prefix="fleet-load-") as tmp:
                run = await one_run(args, hogs, index, Path(tmp))
            runs.append(run)
            print(f"  {hogs} hogs, run {index}: kernel least page gap "
                  f"{_s(run.kernel_page_gap)}, {run.kernel_any_short} gaps below the delay "
                  f"(robots.txt in), {run.seconds:.0f} s", file=sys.stderr, flush=True)
    return runs


def table(runs: Sequence[Run]) -> str:
    rows = [HEADERS, *(run.cells() for run in runs)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True))
                     for row in rows)


def _counts(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hogs", type=_counts, default=[0, 6],
                    help="CPU-bound processes beside the crawl, per load (default 0,6)")
    ap.add_argument("--runs", type=int, default=3, help="runs per load (default 3)")
    ap.add_argument("--hosts", type=int, default=200, help="hosts (default 200)")
    ap.add_argument("--pages", type=int, default=12, help="pages per host (default 12)")
    ap.add_argument("--workers", type=int, default=4, help="worker processes (default 4)")
    ap.add_argument("--tasks", type=int, default=2000, help="tasks per worker (default 2000)")
    ap.add_argument("--delay", type=float, default=0.2, help="seconds per host (default 0.2)")
    ap.add_argument("--margin", type=float, default=0.1,
                    help="the workers' pacing margin, as the fleet tests give (default 0.1)")
    ap.add_argument("--nice", type=int, default=0,
                    help="the workers' niceness, as the fleet tests give (default 0)")
    ap.add_argument("--timeout", type=float, default=300.0, help="bound on one run (s)")
    ap.add_argument("--pcap", type=Path,
                    help="only read this capture's requests and give its kernel figures")
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/fleet_load.json"),
                    help="where the runs go (default benchmarks/results/fleet_load.json)")
    return ap


def read_only(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """``--pcap``: the kernel figures of a capture, per loopback server (port) that
    served at least 10 hosts (other servers on loopback meanwhile are left out)."""
    seen = read_capture(args.pcap)
    by_port: dict[str, list[tuple[float, str, str]]] = {}
    for entry in seen:
        by_port.setdefault(entry[1].rpartition(".")[2], []).append(entry)
    bad = 0
    for port, requests in sorted(by_port.items()):
        hosts = {host for _, host, _ in requests}
        if len(hosts) < 10:
            continue
        page_gap, page_short, any_gap, any_short = kernel_figures(requests, args.delay)
        pages = sum(1 for _, _, path in requests if not path.startswith("/robots.txt"))
        bad += page_short + any_short
        print(f"port {port}: {len(requests):,} requests ({pages:,} pages) to {len(hosts)} "
              f"hosts; least gap between two page requests to one host {_s(page_gap)}, "
              f"{page_short} below {args.delay:g} s; robots.txt requests counted in: "
              f"{_s(any_gap)}, {any_short} below")
    print(command_line(argv))
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if shutil.which("tcpdump") is None:
        print("fleet_load.py needs tcpdump (apt-get install tcpdump)", file=sys.stderr)
        return 2
    if args.pcap is not None:
        return read_only(args, argv)
    runs = asyncio.run(bench(args))
    print(table(runs))
    print(f"({args.hosts} hosts x {args.pages} pages, {args.workers} workers x {args.tasks} "
          f"tasks, delay {args.delay:g} s, pacing margin {args.margin:g} s; gaps per host, "
          "from tcpdump's timestamps on lo)")
    print(command_line(argv))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()},
                              "runs": [asdict(run) for run in runs]}
    args.json.write_text(json.dumps(report, indent=2))
    print(f"JSON: {args.json}")
    bad = [run for run in runs if run.kernel_page_short or run.kernel_any_short or run.failures]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
