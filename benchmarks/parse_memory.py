"""Where a parsed robots.txt's bytes go, by object type, before and after, side by side.

    python benchmarks/parse_memory.py [--before main | --before-src DIR] [--after-src DIR]
        [--rounds 3] [--callgrind EVERY] [--json benchmarks/results/parse_memory.json]

Every file of the corpus parsed with ``RobotsTxt.parse(body)`` and kept alive
together, in a fresh child process per tree: the bytes a file under tracemalloc,
then by object type (the objects the parsed files reach, each counted once, by
``sys.getsizeof``), both as parsed and after one ``decide`` and one ``allowed``
for each file (``decide`` compiles the group it reads); the bytes also after ten
``allowed`` questions each (what a crawler asks: a file's first questions read
its packed rules, compiling nothing).  Then the
parse rate (files/s) and the decision rates (``allowed``, ``decide``: the
seeded queries of ``parse_bench.py``), best pass of each child, children of the
two trees interleaved round by round.  ``--callgrind 8`` also counts
instructions (the clock of a busy machine cannot resolve a few percent), over
every 8th file, each count a child under callgrind with one hash seed: reading
the files only, parsing them, asking each query once (the first queries compile
the groups asked about), and 3 passes more; the differences are the costs.

"Before" is ``--before``'s ``src/`` (a commit, ``main`` unless told) or
``--before-src`` (a tree's or an unpacked wheel's ``src``-like directory);
"after" is this checkout's ``src/``, or ``--after-src`` (e.g. its compiled
wheel, unpacked).  Each child prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import CORPUS, RESULTS, ROOT
from benchmarks.harness.children import child_json
from benchmarks.harness.report import command_line, machine, write_json
from benchmarks.harness.stats import parse_callgrind, valgrind
from benchmarks.parse_bench import load_corpus, make_queries

SCRIPT = Path(__file__).resolve()
SEED = 9309
#: Passes over the queries a ``query`` count makes after the first.
QUERY_PASSES = 3
#: What the ten ``allowed`` questions of a file ask, besides the robots.txt itself.
TEN_PATHS = ("/", "/index.html", "/search?q=shoes", "/about/", "/products/item-123.html",
             "/blog/2024/01/a-post/", "/wp-admin/", "/cart?add=1", "/static/app.js",
             "/private/x")
#: Types whose instances are code or shared by every file, never a file's own bytes.
_NOT_DATA = ("type", "module", "function", "builtin_function_or_method", "method",
             "getset_descriptor", "member_descriptor", "cell", "code")


def _by_type(roots: list[Any]) -> dict[str, list[int]]:
    """``{type name: [objects, bytes]}`` over everything ``roots`` reach, each object
    once; the ints and strings CPython shares by itself (small ints, one-letter and
    interned strings) are left out, as no file pays for them."""
    seen: set[int] = set()
    out: dict[str, list[int]] = {}
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        name = type(obj).__name__
        if name in _NOT_DATA or isinstance(obj, type) or obj is None or isinstance(obj, bool):
            continue
        if isinstance(obj, int) and -5 <= obj <= 256:
            continue
        if isinstance(obj, str) and len(obj) <= 1:
            continue
        entry = out.setdefault(name, [0, 0])
        entry[0] += 1
        entry[1] += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return out


def memory_child(corpus: Path) -> dict[str, Any]:
    """Bytes a parsed file (tracemalloc) and by type, as parsed and after one query each."""
    import tracemalloc

    from robotgate import RobotsTxt

    bodies = [body for _, body in load_corpus(corpus)]
    RobotsTxt.parse(b"User-agent: *\nDisallow: /x\n")  # the parser's own caches, once
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    held = [RobotsTxt.parse(body) for body in bodies]
    gc.collect()
    parsed = tracemalloc.get_traced_memory()[0] - base
    # Shared empties and module-level values are reached from every file: count them
    # once, as they are, by walking the parsed files before anything is asked.
    by_type = _by_type(held)
    for rules in held:
        for path in TEN_PATHS:
            rules.allowed("https://example.com" + path, "Googlebot")
    gc.collect()
    ten = tracemalloc.get_traced_memory()[0] - base
    for rules in held:
        rules.decide("https://example.com/", "Googlebot")
        rules.allowed("https://example.com/index.html", "Googlebot")
    gc.collect()
    asked = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    n = len(held)
    return {"files": n, "parsed_bytes_a_file": parsed / n, "ten_allowed_bytes_a_file": ten / n,
            "asked_bytes_a_file": asked / n,
            "by_type": by_type, "asked_by_type": _by_type(held)}


def speed_child(corpus: Path, repeat: int) -> dict[str, Any]:
    """Best pass of: parsing the corpus; ``allowed`` and ``decide`` over the seeded queries."""
    from robotgate import RobotsTxt

    files = load_corpus(corpus)
    bodies = [body for _, body in files]
    queries = make_queries(files, SEED)
    best = {"parse": float("inf"), "allowed": float("inf"), "decide": float("inf")}
    for _ in range(repeat):
        t0 = time.perf_counter()
        held = [RobotsTxt.parse(body) for body in bodies]
        best["parse"] = min(best["parse"], time.perf_counter() - t0)
        del held
    rules = [RobotsTxt.parse(body) for body in bodies]
    gc.collect()
    gc.freeze()
    for _ in range(repeat):
        for what in ("allowed", "decide"):
            t0 = time.perf_counter()
            if what == "allowed":
                for i, url, agent in queries:
                    rules[i].allowed(url, agent)
            else:
                for i, url, agent in queries:
                    rules[i].decide(url, agent)
            best[what] = min(best[what], time.perf_counter() - t0)
    return {"files_per_s": len(bodies) / best["parse"],
            "allowed_per_s": len(queries) / best["allowed"],
            "decide_per_s": len(queries) / best["decide"], "queries": len(queries)}


def count_child(corpus: Path, what: str, every: int) -> dict[str, Any]:
    """One run for callgrind over every ``every``-th corpus file: ``load`` (read them
    only), ``parse``, ``warm`` (parse, then ``allowed`` and ``decide`` for each seeded
    query: the first asks compile the groups), ``query`` (``warm``, then 3 passes more)
    or ``allowed`` (parse, then ``allowed`` once for each query: a file's first questions);
    ``phases``: all of them in one run, marked for ``callgrind --dump-before=time_sleep``."""
    from robotgate import RobotsTxt

    files = load_corpus(corpus)[::every]
    queries = make_queries(files, SEED)
    rules = [RobotsTxt.parse(body) for _, body in files] if what not in ("load", "phases") else []
    if what == "phases":
        time.sleep(0)  # the import and the reading of the files end here
        rules = [RobotsTxt.parse(body) for _, body in files]
    if what == "phases":
        # All in one run, for callgrind --dump-before=time_sleep: a part's counts are
        # dumped as the next begins (parse; allowed() once a query, a file's first
        # questions; allowed + decide once; 3 passes more of both).
        time.sleep(0)
        for i, url, agent in queries:
            rules[i].allowed(url, agent)
        time.sleep(0)
        for i, url, agent in queries:
            rules[i].allowed(url, agent)
            rules[i].decide(url, agent)
        time.sleep(0)
        for _ in range(QUERY_PASSES):
            for i, url, agent in queries:
                rules[i].allowed(url, agent)
                rules[i].decide(url, agent)
        time.sleep(0)
        return {"files": len(files), "queries": len(queries)}
    if what == "allowed":  # a first pass of allowed() only: what a broad crawl asks
        for i, url, agent in queries:
            rules[i].allowed(url, agent)
        return {"files": len(files), "queries": len(queries)}
    passes = {"load": 0, "parse": 0, "warm": 1, "query": 1 + QUERY_PASSES}[what]
    for _ in range(passes):
        for i, url, agent in queries:
            rules[i].allowed(url, agent)
            rules[i].decide(url, agent)
    return {"files": len(files), "queries": len(queries)}


def _before_src(commit: str, into: Path) -> Path:
    """``commit``'s ``src/``, unpacked into ``into``."""
    archive = into / "before.tar"
    subprocess.run(["git", "archive", "-o", str(archive), commit, "src"], cwd=ROOT, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


async def _instructions(src: Path, corpus: Path, what: str, every: int,
                        tmp: Path) -> int:
    out = tmp / f"cg.{what}.{abs(hash(str(src)))}.out"
    args = ["--count-child", what, "--every", str(every), "--corpus", str(corpus)]
    got = await child_json(SCRIPT, args, 7200, src=src, wrap=valgrind(out))
    if "error" in got:
        raise RuntimeError(got["error"])
    return int(parse_callgrind(out)["instructions"])


async def measure(trees: dict[str, Path], corpus: Path, rounds: int, repeat: int,
                  callgrind: int, tmp: Path) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for name, src in trees.items():
        print(f"memory: {name}", file=sys.stderr)
        got = await child_json(SCRIPT, ["--memory-child", "--corpus", str(corpus)], 600, src=src)
        if "error" in got:
            raise RuntimeError(got["error"])
        report[name] = {"memory": got, "speed": []}
    for r in range(rounds):
        for name, src in trees.items():  # interleaved, so a slow spell hits both
            print(f"speed: round {r + 1}/{rounds}, {name}", file=sys.stderr)
            got = await child_json(SCRIPT, ["--speed-child", str(repeat), "--corpus",
                                            str(corpus)], 600, src=src)
            if "error" in got:
                raise RuntimeError(got["error"])
            report[name]["speed"].append(got)
    if callgrind:
        # One hash seed for every count: str hashes move dict and set work by a few percent.
        os.environ["PYTHONHASHSEED"] = "0"
        sample = load_corpus(corpus)[::callgrind]
        files, queries = len(sample), len(make_queries(sample, SEED))
        for name, src in trees.items():
            counts = {}
            for what in ("load", "parse", "warm", "query", "allowed"):
                print(f"callgrind: {name}, {what}", file=sys.stderr)
                counts[what] = await _instructions(src, corpus, what, callgrind, tmp)
            report[name]["instructions"] = {
                **counts, "files": files, "queries": queries,
                "a_file_parsed": (counts["parse"] - counts["load"]) / files,
                "first_queries_a_file": (counts["warm"] - counts["parse"]) / files,
                "a_query": (counts["query"] - counts["warm"]) / (QUERY_PASSES * queries),
                "a_first_allowed": (counts["allowed"] - counts["parse"]) / queries,
            }
    return report


def table(report: dict[str, Any], names: Sequence[str]) -> str:
    before, after = names
    lines = []
    width = max(14, *(len(n) + 2 for n in names))

    def row(label: str, a: float, b: float, fmt: str = "{:,.0f}") -> None:
        ratio = f"{b / a:.2f}x" if a else ""
        lines.append(f"{label:<38}{fmt.format(a):>{width}}{fmt.format(b):>{width}}{ratio:>9}")

    lines.append(f"{'':<38}{before:>{width}}{after:>{width}}{'ratio':>9}")
    ma, mb = report[before]["memory"], report[after]["memory"]
    n = ma["files"]
    row("bytes a parsed file (tracemalloc)", ma["parsed_bytes_a_file"], mb["parsed_bytes_a_file"])
    if "ten_allowed_bytes_a_file" in ma:
        row("  after ten allowed() each", ma["ten_allowed_bytes_a_file"],
            mb["ten_allowed_bytes_a_file"])
    row("  then one decide() each (compiled)", ma["asked_bytes_a_file"], mb["asked_bytes_a_file"])
    for label, key in (("by type, as parsed (bytes a file)", "by_type"),
                       ("by type, after those queries and one decide() each", "asked_by_type")):
        lines.append(label)
        ta, tb = ma[key], mb[key]
        for t in sorted(set(ta) | set(tb), key=lambda t: -max(ta.get(t, [0, 0])[1],
                                                             tb.get(t, [0, 0])[1])):
            a, b = ta.get(t, [0, 0]), tb.get(t, [0, 0])
            if max(a[1], b[1]) / n < 1:
                continue
            lines.append(f"  {t:<22}{a[1] / n:>10,.0f} ({a[0] / n:>5.1f}){b[1] / n:>10,.0f}"
                         f" ({b[0] / n:>5.1f})")
    sa, sb = report[before]["speed"], report[after]["speed"]
    for label, key in () if not sa else (("files parsed /s (best)", "files_per_s"),
                       ("allowed /s (best)", "allowed_per_s"),
                       ("decide /s (best)", "decide_per_s")):
        row(label, max(s[key] for s in sa), max(s[key] for s in sb))
    if "instructions" in report[before]:
        ia, ib = report[before]["instructions"], report[after]["instructions"]
        lines.append(f"instructions (callgrind), {ia['files']:,} files, "
                     f"{ia['queries']:,} queries")
        row("  a file parsed", ia["a_file_parsed"], ib["a_file_parsed"])
        row("  a file's first queries (compiling)", ia["first_queries_a_file"],
            ib["first_queries_a_file"])
        row("  a query (allowed + decide)", ia["a_query"], ib["a_query"])
        if "a_first_allowed" in ia and "a_first_allowed" in ib:
            row("  a first allowed() (compiling included)", ia["a_first_allowed"],
                ib["a_first_allowed"])
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default="main", help="the commit whose src/ is 'before'")
    ap.add_argument("--before-src", type=Path, help="a directory to import 'before' from")
    ap.add_argument("--after-src", type=Path,
                    help="a directory to import 'after' from (an unpacked compiled wheel), "
                         "not this checkout's src/")
    ap.add_argument("--rounds", type=int, default=3, help="speed children a tree, interleaved")
    ap.add_argument("--repeat", type=int, default=3, help="passes a speed child (best kept)")
    ap.add_argument("--callgrind", type=int, default=0, metavar="EVERY",
                    help="also count instructions over every EVERY-th file (8: 529 files)")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--json", type=Path, default=RESULTS / "parse_memory.json")
    ap.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--speed-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--count-child", help=argparse.SUPPRESS)
    ap.add_argument("--every", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.memory_child:
        print(json.dumps(memory_child(args.corpus)))
        return 0
    if args.speed_child is not None:
        print(json.dumps(speed_child(args.corpus, args.speed_child)))
        return 0
    if args.count_child is not None:
        print(json.dumps(count_child(args.corpus, args.count_child, args.every)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        before = args.before_src or _before_src(args.before, Path(tmp))
        after = args.after_src or ROOT / "src"
        names = (f"before ({args.before_src or args.before})",
                 f"after ({args.after_src or 'src/'})")
        trees = dict(zip(names, (before, after), strict=True))
        report = asyncio.run(measure(trees, args.corpus, args.rounds, args.repeat,
                                     args.callgrind, Path(tmp)))
    report["machine"] = machine()
    report["command"] = command_line(argv)
    write_json(args.json, report)
    print(table(report, names))
    print(f"\n{report['command']}\n(JSON: {args.json})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
