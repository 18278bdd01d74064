"""Cached decisions: ``await gate.allowed`` and ``gate.check`` beside the parser's own answer.

    python benchmarks/decisions.py [--quick] [--origins 1000] [--per-origin 50] [--rounds 5]
        [--repeats 2] [--before-src OLD/src] [--callgrind]
        [--json benchmarks/results/decisions.json]

15) 1,000 corpus robots.txt files installed through a MemoryStore (no network), 50 URLs each:
the parser's own ``allowed`` (and ``decide``) on the gate's parsed rules, ``await gate.allowed``
and ``gate.check``, per CPU second, rounds rotated, a child process per tree; verdicts compared
URL by URL.

Each process is a child of this script (``--child``: one JSON line).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import CORPUS, RESULTS
from benchmarks.harness.children import child_json
from benchmarks.harness.progress import Progress, measured
from benchmarks.harness.report import Row, finish, fmt_int, md
from benchmarks.harness.stats import median, parse_callgrind, valgrind
from robotgate import FetchPolicy, RobotGate
from testbed.crawl import USER_AGENT

SCRIPT = Path(__file__).resolve()



@dataclass
class Sizes:
    origins: int = 1000
    per_origin: int = 50
    rounds: int = 5
    repeats: int = 2
    callgrind: bool = False
    before_src: Path | None = None
    corpus: Path = CORPUS


GENERIC_PATHS = ("/", "/index.html", "/search?q=robots&page=2", "/admin/", "/wp-admin/",
                 "/wp-admin/admin-ajax.php", "/page/7", "/a/b/c.html", "/~user/x",
                 "/cgi-bin/test.cgi", "/private/1", "/images/logo.png", "/cart?id=1",
                 "/en/about-us/", "/api/v1/items/42", "/feed/", "/tag/x/page/3/")


_RULE_LINE = re.compile(r"^\s*(?:dis)?allow\s*:\s*(/\S*)", re.IGNORECASE | re.MULTILINE)



def decision_urls(origin: str, body: bytes, n: int, seed: int) -> list[str]:
    """``n`` URLs of ``origin``: paths its own rules name (so both verdicts occur),
    some longer, and common paths; deterministic for a seed."""
    text = body[:64 * 1024].decode("utf-8", "replace")
    named = []
    for m in _RULE_LINE.finditer(text):
        p = m.group(1).replace("*", "x").rstrip("$")
        if p.isascii() and p.isprintable():
            named += [p, p.rstrip("/") + "/deeper/page.html"]
    rng = random.Random(seed)
    pool = named[:200] + list(GENERIC_PATHS)
    return [origin + rng.choice(pool) for _ in range(n)]



async def decisions_child(corpus: Path, origins: int, per_origin: int, rounds: int,
                          only: str | None = None, loops: int = 1) -> dict[str, Any]:
    """Figure 5 in this process: cached decisions on ``origins`` corpus files.

    robots.txt bodies are installed through a MemoryStore (no network): the gate
    loads each from the store on the first ask.  Verdicts of ``gate.allowed``,
    ``gate.check`` and the parser on the gate's own parsed rules are compared
    URL by URL; then the rates, per second of this process's CPU time, in
    ``rounds`` rounds of rotated order.  ``only`` runs one contender ``loops``
    times (for callgrind).
    """
    import inspect

    import robotgate
    from robotgate import MemoryStore
    from robotgate.policy import entry_for_response

    files = sorted(os.listdir(corpus))
    policy = FetchPolicy()
    store = MemoryStore(max(origins, 1000))
    now = time.time()
    urls: list[str] = []
    for i in range(origins):
        body = (corpus / files[i % len(files)]).read_bytes()[: policy.max_bytes]
        origin = f"https://site{i}.example"
        await store.save_robots(entry_for_response(
            origin, 200, {"Content-Type": "text/plain"}, body, now, policy,
            final_url=origin + "/robots.txt"))
        urls += decision_urls(origin, body, per_origin, i)
    options: dict[str, Any] = {"delay": 0, "store": store}
    # A long Crawl-delay skips a site (a verdict of the gate's, not the parser's), and the
    # core run must not wait: verdicts only.  A tree of before the Pacing options takes them
    # as keywords.
    params = inspect.signature(RobotGate).parameters
    if "pacing" in params:
        from robotgate import Pacing

        options["pacing"] = Pacing(on_long_delay="honour", respect_crawl_delay=False)
    else:
        if "on_long_delay" in params:
            options["on_long_delay"] = "honour"
        if "respect_crawl_delay" in params:
            options["respect_crawl_delay"] = False
    gate = RobotGate(USER_AGENT, **options)
    await gate.open()
    agent = USER_AGENT
    check = getattr(gate, "check", None)
    t0 = time.process_time()
    for i in range(origins):
        await gate.allowed(urls[i * per_origin])  # installs from the store
    install_s = time.process_time() - t0
    rules_of: dict[str, Any] = {}
    pairs: list[tuple[Callable[[str, str], Any], str]] = []
    path_pairs: list[tuple[Callable[[str, str], Any], str]] = []
    decide_pairs: list[tuple[Callable[[str, str], Any], str]] = []
    kept = []
    dropped = mismatches = 0
    first_mismatch = None
    for url in urls:
        origin = url[: url.index("/", 8)]
        rules = rules_of.get(origin)
        if rules is None:
            rules = rules_of[origin] = await gate.rules(url)
        if rules is None:  # the fetch outcome decides the whole site: no parser to compare
            dropped += 1
            continue
        try:
            parser = rules.allowed(url, agent)
            verdicts: list[bool | None] = [await gate.allowed(url)]
            if check is not None:
                d = check(url)
                verdicts.append(None if d is None else d.allowed)
        except Exception:  # a URL the gate or the parser refuses: out of the timed set
            dropped += 1
            continue
        if any(v != parser for v in verdicts):
            mismatches += 1
            first_mismatch = first_mismatch or f"{url}: parser {parser}, gate {verdicts}"
        kept.append(url)
        pairs.append((rules.allowed, url))
        path_pairs.append((rules.allowed, url[len(origin):]))
        decide_pairs.append((rules.decide, url))
    allowed_share = sum(f(u, agent) for f, u in pairs) / max(1, len(pairs))

    def run_parser(items: list[tuple[Callable[[str, str], Any], str]]) -> None:
        for f, u in items:
            f(u, agent)

    async def run_allowed() -> None:
        allowed = gate.allowed
        for u in kept:
            await allowed(u)

    def run_check() -> None:
        assert check is not None
        for u in kept:
            check(u)

    # The politeness core's whole per-page path, without HTTP: the request turn
    # every adapter drives (verdict, the server's turn, the answer, the release).
    request_turn = getattr(gate, "request_turn", None)
    core_urls = [u for f, u in pairs if f(u, agent)]

    async def run_core() -> None:
        assert request_turn is not None
        for u in core_urls:
            turn = request_turn(u, None)  # the caller's own input
            ready = turn.begin()
            if ready is not None:  # the server's group is new, or it is not due
                await ready
            leaving = turn.leaving()
            if leaving is not None:
                await leaving
            learnt = turn.answered(200, None)
            if learnt is not None:
                await learnt
            turn.release()

    async def one(name: str) -> float:
        gc.collect()
        c0 = time.process_time()
        if name == "parser":
            run_parser(pairs)
        elif name == "parser (path)":
            run_parser(path_pairs)
        elif name == "parser decide":
            run_parser(decide_pairs)
        elif name == "allowed":
            await run_allowed()
        elif name == "core":
            await run_core()
            return (time.process_time() - c0) * len(kept) / max(1, len(core_urls))
        else:
            run_check()
        return time.process_time() - c0

    names = ["parser", "parser (path)", "parser decide", "allowed"]
    names += ["check"] if check is not None else []
    names += ["core"] if request_turn is not None else []
    result: dict[str, Any] = {
        "robotgate": str(Path(robotgate.__file__).parent), "origins": origins,
        "urls": len(kept), "dropped": dropped, "mismatches": mismatches,
        "first_mismatch": first_mismatch, "allowed_share": allowed_share,
        "install_cpu_s": install_s, "has_check": check is not None,
        "has_core": request_turn is not None, "core_urls": len(core_urls),
    }
    if "core" in names:
        await run_core()  # the servers' groups are made on the first visit
    if only is not None:
        for _ in range(loops):
            await one(only)
        result["robots_requests"] = gate.stats["robots_requests"]
        await gate.close()
        return result
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            cpu[name].append(await one(name))
    n = len(kept)
    rates = {k: [n / max(v, 1e-9) for v in vs] for k, vs in cpu.items()}
    result["rates"] = {k: median(v) for k, v in rates.items()}
    result["ratios"] = {
        k: median([a / b for a, b in zip(rates[k], rates["parser"], strict=True)])
        for k in names}
    result["robots_requests"] = gate.stats["robots_requests"]
    await gate.close()
    return result



async def decisions(sizes: Sizes, progress: Progress) -> dict[str, Any]:
    """Figure 5: the decisions child on this tree (and the before tree), interleaved."""
    if not sizes.corpus.is_dir():
        return {"error": f"corpus not found: {sizes.corpus}"}
    args = ["--child", "--corpus", str(sizes.corpus), "--origins", str(sizes.origins),
            "--per-origin", str(sizes.per_origin), "--rounds", str(sizes.rounds)]
    trees: list[tuple[str, Path | None]] = [("after", None)]
    if sizes.before_src is not None:
        trees.append(("before", sizes.before_src))
    runs: dict[str, list[dict[str, Any]]] = {t: [] for t, _ in trees}
    for rep in range(sizes.repeats):
        for label, src in (trees if rep % 2 == 0 else trees[::-1]):
            progress.start(f"decisions: {label}, run {rep + 1}/{sizes.repeats}")
            child = await child_json(SCRIPT, args, 900, src)
            if "error" in child:
                return {"error": f"{label}: {child['error']}"}
            runs[label].append(child)
    out: dict[str, Any] = {"origins": sizes.origins,
                           "per_origin": sizes.per_origin,
                           "rounds": sizes.rounds, "repeats": sizes.repeats}
    for label, cs in runs.items():
        names = list(cs[0]["rates"])
        out[label] = {
            "urls": cs[0]["urls"], "dropped": cs[0]["dropped"],
            "mismatches": max(c["mismatches"] for c in cs),
            "first_mismatch": next((c["first_mismatch"] for c in cs if c["first_mismatch"]),
                                   None),
            "allowed_share": cs[0]["allowed_share"],
            "robots_requests": max(c["robots_requests"] for c in cs),
            "rates": {k: median([c["rates"][k] for c in cs]) for k in names},
            "ratios": {k: median([c["ratios"][k] for c in cs]) for k in names},
            "ratio_ranges": {k: [min(c["ratios"][k] for c in cs), max(c["ratios"][k] for c in cs)]
                             for k in names},
        }
    if sizes.callgrind:
        out["callgrind"] = await callgrind_decisions(sizes, trees, progress)
    return out



async def callgrind_decisions(sizes: Sizes, trees: Sequence[tuple[str, Path | None]],
                              progress: Progress, origins: int = 200) -> dict[str, Any]:
    """Instructions per decision under callgrind: 3 loops less 1 loop, over 2 loops' URLs."""
    if shutil.which("valgrind") is None:
        return {"error": "valgrind not installed"}
    out: dict[str, Any] = {}
    cg_file = Path(tempfile.gettempdir()) / f"robotgate-cg-{os.getpid()}.out"
    for label, src in trees:
        for name in ("parser", "allowed", "check", "core"):
            got = []
            for loops in (1, 3):
                progress.start(f"decisions: callgrind {label} {name}, {loops} loop(s)")
                child = await child_json(
                    SCRIPT, ["--child", "--corpus", str(sizes.corpus), "--origins",
                             str(origins), "--per-origin", str(sizes.per_origin),
                             "--only", name, "--loops", str(loops)], 1800, src,
                    wrap=valgrind(cg_file))
                if "error" in child or (name == "check" and not child["has_check"]) or (
                        name == "core" and not child["has_core"]):
                    break
                n_urls = child["core_urls"] if name == "core" else child["urls"]
                got.append((n_urls, parse_callgrind(cg_file)))
            cg_file.unlink(missing_ok=True)
            if len(got) == 2:
                n = got[0][0] * 2
                a, b = got[0][1], got[1][1]
                out[f"{name} ({label})"] = {
                    "instructions_per_decision": (b["instructions"] - a["instructions"]) / n,
                    "gc_allocations_per_decision":
                        (b["calls"]["_PyObject_GC_Link"] - a["calls"]["_PyObject_GC_Link"]) / n,
                }
    return out



async def run(sizes: Sizes, progress: Progress) -> dict[str, Any]:
    """The decisions children (and callgrind's); the report."""

    async def measure() -> dict[str, Any]:
        return {"decisions": await decisions(sizes, progress)}

    return await measured(progress, dataclasses.asdict(sizes), measure)


def table_rows(report: dict[str, Any]) -> list[Row]:
    """One row per figure: its value, the goal, pass/fail."""
    rows: list[Row] = []
    if "decisions" in report and "error" not in report["decisions"]:
        d = report["decisions"]["after"]
        rows.append({"section": f"cached decisions: {d['urls']:,} URLs over "
                                f"{report['decisions']['origins']:,} corpus origins "
                                f"(rates per CPU second, details below)"})
        rows.append({"figure": "5 await gate.allowed / parser",
                     "values": {"robotgate": f"{d['ratios']['allowed']:.2f}x"},
                     "goal": ">= 0.35x", "pass": d["ratios"]["allowed"] >= 0.35})
        if "check" in d["ratios"]:
            vs_decide = d["ratios"]["check"] / d["ratios"]["parser decide"]
            rows.append({"figure": "5 gate.check / parser (/ parser's decide)",
                         "values": {"robotgate": f"{d['ratios']['check']:.2f}x "
                                                 f"({vs_decide:.2f}x)"},
                         "goal": ">= 0.7x", "pass": d["ratios"]["check"] >= 0.7})
        rows.append({"figure": "5 verdicts unlike the parser's",
                     "values": {"robotgate": fmt_int(d["mismatches"])},
                     "goal": "0", "pass": d["mismatches"] == 0})
    if "error" in report["decisions"]:
        rows.append({"figure": "5 cached decisions", "values": {"robotgate":
                     report["decisions"]["error"][:16]}, "goal": "", "pass": False})
    return rows


def render_details(report: dict[str, Any]) -> str:
    """The detail tables (Markdown), ready for benchmarks/README.md."""
    out: list[str] = []
    d = report.get("decisions")
    if d:
        if "error" in d:
            out.append(f"\ncached decisions: {d['error']}")
        else:
            out.append(f"\n### Cached decisions: {d['origins']:,} corpus robots.txt files "
                       f"installed through a MemoryStore, {d['per_origin']} URLs each; rates per "
                       f"CPU second, median of {d['rounds']} rotated rounds x {d['repeats']} "
                       f"processes\n")
            body = []
            for label in ("after", "before"):
                t = d.get(label)
                if t is None:
                    continue
                for k, rate in t["rates"].items():
                    lo, hi = t["ratio_ranges"][k]
                    body.append([f"{k} ({label})", fmt_int(rate), f"{t['ratios'][k]:.2f}x",
                                 f"{lo:.2f}-{hi:.2f}"])
            out += md(["contender", "decisions/s", "ratio to parser", "range"], body)
            for label in ("after", "before"):
                t = d.get(label)
                if t is not None:
                    out.append(f"\n{label}: {t['urls']:,} URLs ({t['dropped']} dropped), "
                               f"{t['allowed_share']:.0%} allowed, {t['mismatches']} verdicts "
                               f"unlike the parser's, {t['robots_requests']} robots.txt requests"
                               + (f"; first: {t['first_mismatch']}" if t["first_mismatch"]
                                  else ""))
            cg = d.get("callgrind")
            if cg:
                out.append("\nCallgrind, per decision:\n")
                out += md(["contender", "instructions/decision", "GC-tracked allocations"],
                           [[k, fmt_int(v["instructions_per_decision"]),
                             f"{v['gc_allocations_per_decision']:.2f}"] for k, v in cg.items()])
    return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    d = Sizes()
    ap.add_argument("--origins", type=int, default=d.origins, help="corpus origins")
    ap.add_argument("--per-origin", type=int, default=d.per_origin, help="URLs per origin")
    ap.add_argument("--rounds", type=int, default=d.rounds, help="rotated rounds per process")
    ap.add_argument("--repeats", type=int, default=d.repeats,
                    help="processes per tree, alternating trees")
    ap.add_argument("--callgrind", action="store_true",
                    help="exact instructions and allocations per decision under valgrind "
                         "(slow: minutes)")
    ap.add_argument("--before-src", type=Path,
                    help="another tree's src/ (e.g. a git worktree of an older commit): its "
                         "decisions run interleaved with this one's")
    ap.add_argument("--corpus", type=Path, default=CORPUS, help="a directory of robots.txt files")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--json", type=Path, default=RESULTS / "decisions.json",
                    help="write the results here")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only", help=argparse.SUPPRESS)
    ap.add_argument("--loops", type=int, default=1, help=argparse.SUPPRESS)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.child:  # one process's decisions: one JSON line
        print(json.dumps(asyncio.run(decisions_child(args.corpus, args.origins, args.per_origin,
                                                     args.rounds, args.only, args.loops))))
        return 0
    sizes = Sizes(origins=args.origins, per_origin=args.per_origin, rounds=args.rounds,
                  repeats=args.repeats, callgrind=args.callgrind, corpus=args.corpus,
                  before_src=args.before_src.resolve() if args.before_src else None)
    if args.quick:
        sizes = dataclasses.replace(sizes, origins=100, per_origin=20, rounds=2, repeats=1)
    report = asyncio.run(run(sizes, Progress(enabled=not args.no_progress)))
    return finish(report, table_rows(report), render_details(report), args.json, argv,
                  columns=("robotgate",))


if __name__ == "__main__":
    sys.exit(main())
