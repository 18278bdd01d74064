"""Where the httpx transport's cold run spends its CPU: a profile by package.

    python benchmarks/httpx_cold.py [--hosts 200] [--pages 5] [--concurrency 64]
                                    [--json benchmarks/results/httpx_cold.json]

The run of ``clients_bench.py --only httpx`` (the loopback server's hosts, one URL in five
disallowed, 64 workers sharing one ``httpx.AsyncClient`` with ``max_connections=64``), each
contender once under ``cProfile``: plain httpx, the gate cold (a new gate: robots.txt fetched
through the same inner transport during the run) and warm (the same gate again).  For each:
the CPU seconds without the profiler (a separate run), the requests the server counted, and the
profiled time by package (``tottime`` summed by where the function lives), which says whether
the cold run's extra time is the gate's own code or the client's.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.clients_bench import USER_AGENT, httpx_run, run_options, served
from benchmarks.harness import RESULTS
from benchmarks.harness.report import command_line, write_json

KINDS = ("plain", "gate-cold", "gate-warm")
PACKAGES = ("robotgate", "httpcore", "httpx", "anyio", "h11", "asyncio")


def package_folders() -> list[tuple[str, str]]:
    """Each package's own folder as it is installed (its ``__init__``'s), so a checkout
    folder that happens to be named ``robotgate`` (with the venv inside it) is not
    taken for the package."""
    folders = []
    for name in PACKAGES:
        module = importlib.import_module(name)
        folders.append((str(Path(module.__file__ or "").resolve().parent) + os.sep, name))
    return folders


def by_package(profile: cProfile.Profile) -> dict[str, float]:
    folders = package_folders()
    out: dict[str, float] = {}
    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    for (filename, _, _), (_, _, tottime, _, _) in stats.items():
        where = "other"
        if filename.startswith(os.sep):
            path = str(Path(filename).resolve())
            where = next((name for folder, name in folders if path.startswith(folder)), "other")
        out[where] = out.get(where, 0.0) + tottime
    return out


async def contender(kind: str, urls: list[str], concurrency: int,
                    profile: cProfile.Profile | None) -> float:
    from robotgate import RobotGate

    gate = RobotGate(USER_AGENT, delay=0)
    async with gate:
        if kind == "gate-warm":
            await httpx_run("gate-cold", urls, concurrency, gate)  # robots.txt now known
        started = time.process_time()
        if profile is not None:
            profile.enable()
        await httpx_run(kind, urls, concurrency, None if kind == "plain" else gate)
        if profile is not None:
            profile.disable()
        return time.process_time() - started


async def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"config": {k: v for k, v in vars(args).items() if k != "json"}}
    async with served(args.hosts, args.pages, args.concurrency) as (_, urls):
        for kind in KINDS:
            cpu = await contender(kind, urls, args.concurrency, None)
            profile = cProfile.Profile(time.process_time)  # CPU, not the time spent waiting
            await contender(kind, urls, args.concurrency, profile)
            report[kind] = {"cpu_s": cpu, "profiled_s": by_package(profile)}
    return report


def main(argv: list[str] | None = None) -> int:
    ap = run_options(__doc__, hosts=200, concurrency=64)
    ap.add_argument("--json", type=Path, default=RESULTS / "httpx_cold.json")
    ap.add_argument("--no-progress", action="store_true", help="(prints no progress anyway)")
    args = ap.parse_args(argv)
    report = asyncio.run(run(args))
    print(f"{'contender':<10} {'CPU s':>6}  profiled s by package")
    for kind in KINDS:
        shares = report[kind]["profiled_s"]
        total = sum(shares.values())
        parts = ", ".join(f"{p} {s:.2f} ({s / total:.0%})"
                          for p, s in sorted(shares.items(), key=lambda kv: -kv[1]))
        print(f"{kind:<10} {report[kind]['cpu_s']:>6.2f}  {parts}")
    write_json(args.json, report)
    print(f"\n{command_line(argv)}\n(JSON: {args.json})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
