"""Instructions to decode one robots.txt body (``decode_capped``), under callgrind.

    python benchmarks/decode_instructions.py [--before-src OLD/src]
        [--json benchmarks/results/decode_instructions.json]

Each body of :data:`BODIES` is decoded in a child process 1,000 times and, in another, 6,000
times; the difference over 5,000 is one call, without the start-up both share (the children's
hash seed is fixed, so that a count repeats).  A new host's robots.txt is decoded once, so
this is part of its cost (``overhead.py``'s new host).  ``--before-src`` runs another tree's
robotgate beside this one.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import RESULTS
from benchmarks.harness.children import child_json
from benchmarks.harness.report import command_line, write_json
from benchmarks.harness.stats import parse_callgrind, valgrind

SCRIPT = Path(__file__).resolve()
CALLS = (1000, 6000)
_RULES = (b"User-agent: *\nDisallow: /private/\nDisallow: /tmp/\nAllow: /public/\n"
          b"Crawl-delay: 1\nSitemap: https://example.com/sitemap.xml\n")
#: name: (body, Content-Encoding values); the sizes are of the body as sent.
BODIES: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "text 150 B": ((_RULES * 2)[:150], ()),
    "text 4 KiB": ((_RULES * 40)[:4096], ()),
    "gzip of 4 KiB": (gzip.compress((_RULES * 40)[:4096], mtime=0), ("gzip",)),
}


def child(name: str, calls: int) -> dict[str, Any]:
    from robotgate.policy.content_coding import decode_capped

    body, codings = BODIES[name]
    decoded = b""
    for _ in range(calls):
        decoded = decode_capped(body, codings, 500_000)
    return {"body": name, "calls": calls, "decoded_bytes": len(decoded)}


async def measure(before: Path | None) -> dict[str, Any]:
    trees: dict[str, Path | None] = {"now": None}
    if before is not None:
        trees["before"] = before
    report: dict[str, Any] = {"instructions_per_call": {tree: {} for tree in trees}}
    with tempfile.TemporaryDirectory() as tmp:
        cg_file = Path(tmp) / "callgrind.out"
        for name in BODIES:
            for tree, src in trees.items():
                counts = []
                for calls in CALLS:
                    got = await child_json(SCRIPT, ["--child", name, str(calls)], 600, src,
                                           wrap=valgrind(cg_file))
                    if "error" in got:
                        raise SystemExit(f"{name} ({tree}): {got['error']}")
                    counts.append(parse_callgrind(cg_file)["instructions"])
                per_call = (counts[1] - counts[0]) / (CALLS[1] - CALLS[0])
                report["instructions_per_call"][tree][name] = per_call
                print(f"{name:<14} {tree:<7} {per_call:>10,.0f}", file=sys.stderr)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before-src", type=Path, help="also run that tree's robotgate")
    ap.add_argument("--json", type=Path, default=RESULTS / "decode_instructions.json")
    ap.add_argument("--child", nargs=2, metavar=("BODY", "CALLS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        name, calls = args.child
        print(json.dumps(child(name, int(calls))))
        return 0
    os.environ["PYTHONHASHSEED"] = "0"  # the children hash alike: counts that repeat
    report = asyncio.run(measure(args.before_src))
    trees = list(report["instructions_per_call"])
    print(f"{'body':<14}" + "".join(f"{tree:>12}" for tree in trees))
    for name in BODIES:
        print(f"{name:<14}" + "".join(
            f"{report['instructions_per_call'][tree][name]:>12,.0f}" for tree in trees))
    write_json(args.json, report)
    print(f"\n{command_line(argv)}\n(JSON: {args.json})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
