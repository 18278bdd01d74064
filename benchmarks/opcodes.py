"""Where a request's interpreted work goes: Python opcodes by function, two trees side by side.

    python benchmarks/opcodes.py --before-src OLD/src [--only middleware]
        [--cg-hosts 100,300] [--top 25] [--json FILE] [--no-progress]

The cold crawls of ``overhead.py --callgrind-crawl`` (every host new, two sizes, one child
process a crawl), each run under an opcode counter (``sys.settrace`` with opcode events)
instead of callgrind.  For each contender, of this tree and of ``--before-src``'s, the
opcodes a request between the two sizes (start-up cancels out), by function, and the
functions whose count differs most between the trees.

Callgrind counts instructions exactly but names C functions (``_PyEval_EvalFrameDefault``),
not the Python ones that run in them; this names them.  C code is not counted: modules
compiled with mypyc, aiohttp's extensions.  Run it on pure trees (the editable install,
``--before-src`` a pure tree's ``src``).  Tracing slows a crawl about tenfold, but what is
counted is the work, not the time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import runpy
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import overhead
from benchmarks.harness import RESULTS
from benchmarks.harness.children import raise_nofile
from benchmarks.harness.report import command_line, machine, write_json
from testbed.server import HostPlan, ServerProcess

SCRIPT = Path(__file__).resolve()
BEFORE = overhead.BEFORE


# -- the counter: this script, wrapping the overhead child -------------------------------


def count_opcodes(out: Path, command: list[str]) -> None:
    """Run ``python SCRIPT ARGS`` (``command``) in this process, counting the opcodes
    each Python function executes; the counts go to ``out`` as JSON."""
    script = command[1]
    sys.argv = [script, *command[2:]]
    sys.path.insert(0, os.path.dirname(script))
    counts: Counter[str] = Counter()
    names: dict[CodeType, str] = {}

    def name_of(code: CodeType) -> str:
        path = code.co_filename
        at = path.rfind("robotgate/")  # the same function in either tree, one name
        where = path[at:] if at >= 0 else os.path.basename(path)
        names[code] = name = f"{where}:{code.co_name}"
        return name

    def on_opcode(frame: FrameType, event: str, arg: object) -> Any:
        if event == "opcode":
            code = frame.f_code
            counts[names.get(code) or name_of(code)] += 1
        return on_opcode

    def on_call(frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return on_opcode

    sys.settrace(on_call)
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        sys.settrace(None)
        out.write_text(json.dumps(counts))


# -- the runs ---------------------------------------------------------------------------------


async def opcode_run(server: ServerProcess, name: str, src: Path | None, hosts: int,
                     pages: int, tasks: int, workdir: Path) -> dict[str, Any]:
    """One cold crawl of ``name`` over ``hosts`` new hosts under the counter: its opcodes
    by function and the requests the server counted; or ``{"error": ...}``."""
    counted = workdir / "opcodes.json"
    child = await overhead.wrapped_crawl(
        server, name, src, hosts, pages, tasks, workdir,
        [sys.executable, str(SCRIPT), "--count", str(counted)], timeout=3600)
    if "error" in child:
        return {"error": child["error"]}
    if child["ok"] != child["pages"]:
        return {"error": f"{child['pages'] - child['ok']} pages not fetched"}
    counts: dict[str, int] = json.loads(counted.read_text())
    return {"counts": counts,
            "requests": overhead.server_requests(await server.totals())}


def per_request(small: dict[str, Any], large: dict[str, Any]) -> dict[str, float]:
    """Each function's opcodes a request between the two crawls."""
    requests = large["requests"] - small["requests"]
    names = set(small["counts"]) | set(large["counts"])
    return {name: (large["counts"].get(name, 0) - small["counts"].get(name, 0)) / requests
            for name in names}


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    raise_nofile()
    hosts: tuple[int, int] = args.cg_hosts
    contenders = [(name, None) for name in args.only]
    contenders += [(name + BEFORE, args.before_src) for name in args.only]
    runs: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="robotgate-opcodes-") as tmp:
        async with ServerProcess() as server:
            await server.start(["--backlog", "4096"], plans=[HostPlan("partial")] * hosts[1],
                               duration=3600)
            tasks = min(200, hosts[0])
            for name, src in contenders:
                sizes = []
                for h in hosts:
                    if not args.no_progress:
                        print(f"opcodes: {name}, {h} hosts x 5 pages", file=sys.stderr,
                              flush=True)
                    sizes.append(await opcode_run(server, name, src, h, 5, tasks, Path(tmp)))
                failed = [s["error"] for s in sizes if "error" in s]
                if failed:
                    return {"error": f"{name}: {failed[0]}"}
                runs[name] = per_request(*sizes)
    return {"hosts": list(hosts), "per_request": runs}


def differences(after: dict[str, float], before: dict[str, float], top: int
                ) -> list[tuple[str, float, float]]:
    """The ``top`` functions whose opcodes a request differ most: (name, after, before)."""
    names = set(after) | set(before)
    ranked = sorted(names, key=lambda n: -abs(after.get(n, 0.0) - before.get(n, 0.0)))
    return [(n, after.get(n, 0.0), before.get(n, 0.0)) for n in ranked[:top]]


def show(result: dict[str, Any], only: list[str], top: int) -> None:
    runs = result["per_request"]
    for name in only:
        after, before = runs[name], runs[name + BEFORE]
        print(f"\n{name}: {sum(after.values()):,.1f} opcodes a request, "
              f"{sum(before.values()):,.1f} before "
              f"(marginal between {result['hosts'][0]} and {result['hosts'][1]} new hosts)")
        print(f"  {'after':>8} {'before':>8} {'diff':>8}  function")
        for fn, a, b in differences(after, before, top):
            print(f"  {a:8.1f} {b:8.1f} {a - b:+8.1f}  {fn}")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--count":  # the counter, around a child
        count_opcodes(Path(sys.argv[2]), sys.argv[3:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before-src", type=Path, required=True,
                    help="the other tree's src directory (pure)")
    ap.add_argument("--only", type=lambda s: s.split(","), default=["middleware"],
                    help="contenders: gate.fetch, middleware (default middleware)")
    ap.add_argument("--cg-hosts", type=overhead.host_pair, default=(100, 300), metavar="A,B",
                    help="the two crawl sizes in hosts (default 100,300)")
    ap.add_argument("--top", type=int, default=25, help="functions shown (default 25)")
    ap.add_argument("--json", type=Path, default=RESULTS / "opcodes.json")
    ap.add_argument("--no-progress", action="store_true", help="no line a crawl on stderr")
    args = ap.parse_args()
    unknown = [n for n in args.only if n not in ("gate.fetch", "middleware")]
    if unknown:
        ap.error(f"unknown contender(s) {', '.join(unknown)}: gate.fetch, middleware")
    result = asyncio.run(measure(args))
    if "error" in result:
        print(f"failed: {result['error']}", file=sys.stderr)
        return 1
    show(result, args.only, args.top)
    write_json(args.json, {"machine": machine(), "command": command_line(), **result})
    print(f"\n{command_line()}\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
