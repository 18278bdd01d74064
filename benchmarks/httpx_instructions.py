"""The httpx transport's cost per page in instructions, where the clock is too noisy.

    python benchmarks/httpx_instructions.py [--hosts 100] [--pages 5] [--concurrency 32]
        [--kinds plain,plain-robots,plain-polite,plain-flight,gate-cold,gate-warm]
        [--before-src OLD/src]
        [--json benchmarks/results/httpx_instructions.json]

The run of ``clients_bench.py --only httpx`` (the loopback server's hosts, one URL in five
disallowed) in a child process under callgrind, for each contender: plain httpx, plain httpx
asking each host's robots.txt once (*plain-robots*; *plain-polite*: with one request per host
in flight, as the gate; *plain-flight*: in a task of its own that the host's askers await, as
the gate's single flight), the gate cold (a new gate each run) and warm (a gate that has every
robots.txt).  A child makes the contender's run once, and another three times, after the same
set-up; the difference over two is one run, over its pages one page.  The server is a separate
process that callgrind does not follow.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.clients_bench import USER_AGENT, httpx_run, run_options, served
from benchmarks.harness import RESULTS
from benchmarks.harness.children import child_json
from benchmarks.harness.report import command_line, write_json
from benchmarks.harness.stats import parse_callgrind, valgrind

SCRIPT = Path(__file__).resolve()
KINDS = ("plain", "plain-robots", "plain-polite", "plain-flight", "gate-cold", "gate-warm")


async def child(kind: str, runs: int, hosts: int, pages: int, concurrency: int) -> dict[str, Any]:
    from robotgate import RobotGate

    # The same set-up for every contender: imports, first connections, a warm gate.
    async with (served(hosts, pages, concurrency) as (server, urls),
                RobotGate(USER_AGENT, delay=0) as warm):
        await httpx_run("gate-cold", urls, concurrency, warm)
        await server.reset()
        for _ in range(runs):
            if kind == "gate-cold":
                async with RobotGate(USER_AGENT, delay=0) as cold:
                    await httpx_run(kind, urls, concurrency, cold)
            else:
                gate = warm if kind == "gate-warm" else None
                await httpx_run(kind, urls, concurrency, gate)
        stats = await server.stats()
    fetched = sum(h["page_requests"] for h in stats["hosts"].values())
    return {"kind": kind, "runs": runs, "pages_a_run": fetched / runs}


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"config": {"hosts": args.hosts, "pages": args.pages,
                                         "concurrency": args.concurrency},
                              "instructions_per_page": {}}
    src = args.before_src
    with tempfile.TemporaryDirectory() as tmp:
        cg_file = Path(tmp) / "callgrind.out"
        for kind in args.kinds:
            counts = []
            pages = 0
            for runs in (1, 3):
                got = await child_json(
                    SCRIPT, ["--child", kind, str(runs), str(args.hosts), str(args.pages),
                             str(args.concurrency)], 3600, src, wrap=valgrind(cg_file))
                if "error" in got:
                    raise SystemExit(f"{kind}: {got['error']}")
                counts.append(parse_callgrind(cg_file)["instructions"])
                pages = got["pages_a_run"]
            per_run = (counts[1] - counts[0]) / 2
            report["instructions_per_page"][kind] = per_run / pages
            print(f"{kind:<13} {per_run / pages:>12,.0f} instructions a page", file=sys.stderr)
    plain = report["instructions_per_page"].get("plain")
    report["ratios"] = {kind: n / plain for kind, n in report["instructions_per_page"].items()
                        if plain}
    return report


def main(argv: list[str] | None = None) -> int:
    ap = run_options(__doc__, hosts=100, concurrency=32)
    ap.add_argument("--kinds", type=lambda text: text.split(","), default=list(KINDS),
                    help="a comma-separated choice of " + ",".join(KINDS))
    ap.add_argument("--before-src", type=Path, help="run that tree's robotgate instead")
    ap.add_argument("--json", type=Path, default=RESULTS / "httpx_instructions.json")
    ap.add_argument("--child", nargs=5, metavar=("KIND", "RUNS", "HOSTS", "PAGES", "CONC"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, runs, hosts, pages, concurrency = args.child
        print(json.dumps(asyncio.run(child(kind, int(runs), int(hosts), int(pages),
                                           int(concurrency)))))
        return 0
    report = asyncio.run(measure(args))
    print(f"{'contender':<13} {'instructions/page':>18} {'/ plain':>8}")
    for kind, count in report["instructions_per_page"].items():
        ratio = report["ratios"].get(kind)
        print(f"{kind:<13} {count:>18,.0f} {'' if ratio is None else f'{ratio:.3f}':>8}")
    write_json(args.json, report)
    print(f"\n{command_line(argv)}\n(JSON: {args.json})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
