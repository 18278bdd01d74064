"""Memory per cached origin, as cached and once asked: RSS and tracemalloc in child processes.

    python benchmarks/memory.py [--origins 100000] [--parse-all]
        [--asked-origins 20000] [--questions 10] [--entry allowed|check|decide]
        [--json benchmarks/results/memory.json]

As cached: 100,000 origins installed through the gate's own path (entry_for_response,
store.save_robots, RobotsCache._install) with corpus bodies cycled, each origin its own copy of
the body; RSS before and after in a child process; the parsed rules measured apart with
tracemalloc in another child and subtracted; a cached origin in all is that figure plus its own
parsed rules.

Once asked (what a crawler lives with): 20,000 origins installed the same way, each parsing its
own body (the gate's cache of recent bodies shares a parse as it would in a crawl), then 10
questions each, ``await gate.allowed(url)`` (``--entry``: ``gate.check(url)`` or ``await
gate.decide(url)``), paths from the file's own rules and common ones;
the bytes an origin holds, cached and then asked, by RSS in one child and by tracemalloc in
another (tracemalloc's own bookkeeping would swell the RSS).  The figure is the larger.

The children are this script (``--memory-child N``, ``--rules-child N``, ``--asked-child N``:
one JSON line).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import CORPUS, RESULTS
from benchmarks.harness.children import child_json
from benchmarks.harness.progress import Progress, measured
from benchmarks.harness.report import Row, finish
from robotgate import FetchPolicy, Network, RobotGate
from testbed.crawl import FROM, USER_AGENT

SCRIPT = Path(__file__).resolve()


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")



def _corpus_bodies(corpus: Path, max_bytes: int) -> list[bytes]:
    # What a fetch keeps: at most max_bytes of each body.
    return [(corpus / f).read_bytes()[:max_bytes] for f in sorted(os.listdir(corpus))]


#: Paths every crawler asks about, after a file's own.
COMMON_PATHS = ("/", "/index.html", "/search?q=shoes", "/about/", "/products/item-123.html",
                "/blog/2024/01/a-post/", "/wp-admin/", "/cart?add=1", "/static/app.js",
                "/ツ/%7Euser?x=%e3%83%84")
_RULE_PATH = re.compile(rb"^[ \t]*(?:dis)?allow[ \t]*:[ \t]*([^\s#]+)",
                        re.IGNORECASE | re.MULTILINE)


def questions(body: bytes, k: int) -> list[str]:
    """``k`` distinct paths to ask about a file: up to half of them its own rules (spread
    over the file, as paths: a star as "x", no final "$"), then :data:`COMMON_PATHS`,
    then those again with a number appended, as many rounds as ``k`` needs."""
    found = _RULE_PATH.findall(body)
    own = found[:: max(1, len(found) // (k // 2 or 1))][: k // 2]
    paths = []
    for value in own:
        path = value.decode("utf-8", "replace").replace("*", "x").rstrip("$")
        paths.append(path if path.startswith("/") else "/" + path)
    base = paths + list(COMMON_PATHS)
    # k of them: past the first round, each path again with the round's number after it
    # (so a 40th question is a 40th distinct path, not a repeat of a 21st).
    return [base[j % len(base)] + (str(j // len(base)) if j >= len(base) else "")
            for j in range(k)]



def memory_child(n: int, corpus: Path, parse_all: bool = False) -> dict[str, Any]:
    """Cache ``n`` origins in a fresh gate through its install path; RSS per origin.

    The path is the one a robots.txt fetch ends in (``entry_for_response``,
    ``store.save_robots``, ``RobotsCache._install``: parse and cache) without the HTTP
    request; bodies are the corpus files cycled, each origin with its own copy
    as read from a socket.  Unless ``parse_all``, origins with the same corpus
    file share one parsed ``RobotsTxt`` (parsing 100,000 bodies takes most of
    a minute, and the parsed rules are subtracted anyway); the RSS then holds
    the rules of each corpus file once.
    """
    from robotgate.policy import entry_for_response
    from robotgate.policy.site import parse_entry
    from robotgate.records import HostState
    from robotgate.urls import robots_url

    policy = FetchPolicy()
    bodies = _corpus_bodies(corpus, policy.max_bytes)
    k = len(bodies)
    result: dict[str, Any] = {"origins": n, "corpus_files": k}

    async def fill() -> None:
        gate = RobotGate(USER_AGENT, from_=FROM, delay=1.0, network=Network(max_origins=n))
        cache = gate._cache
        memo: dict[int, Any] = {}
        gc.collect()
        rss0 = _rss()
        t0 = time.perf_counter()
        now = time.time()
        sites = []
        for i in range(n):
            origin = f"https://site{i}.example"
            body = bytes(bytearray(bodies[i % k]))  # a distinct object, as read from a socket
            headers = {"Content-Type": "text/plain", "ETag": f'"{i:x}-{i % k}"',
                       "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"}
            entry = entry_for_response(origin, 200, headers, body, now, policy,
                                       final_url=robots_url(origin))
            await gate.store.save_robots(entry)
            rules = None
            if not parse_all:  # one parse per corpus file, shared
                rules = memo.get(i % k)
                if rules is None:
                    rules = memo[i % k] = parse_entry(entry, cache.how)
            sites.append(cache._install(origin, entry, HostState(origin), rules))
        result["fill_seconds"] = time.perf_counter() - t0
        gc.collect()
        rss1 = _rss()
        # Then one visit each: the politeness group a crawl creates on the first page.
        for i in range(len(sites)):
            origin = f"https://site{i}.example"
            key = await gate._keys.key(origin)
            cache.bind(origin, gate._scheduler.add(key, HostState(key)).state, key)
        del sites
        gc.collect()
        result["rss_cached"] = rss1 - rss0
        result["rss_visited"] = _rss() - rss0
        result["cached_origins"] = len(cache.sites())
        await gate.close()

    asyncio.run(fill())
    result["body_bytes"] = sum(len(bodies[i % k]) for i in range(n))
    result["parse_all"] = parse_all
    return result



def asked_child(n: int, corpus: Path, k: int, trace: bool,
                entry: str = "allowed") -> dict[str, Any]:
    """Cache ``n`` origins, each parsing its own body, then ask ``k`` questions of each
    (``await gate.allowed(url)``, or ``entry``: ``check``, ``decide``); the bytes held,
    cached and asked: RSS, or with
    ``trace`` tracemalloc's count (its own bookkeeping swells the RSS then)."""
    import tracemalloc

    from robotgate.policy import entry_for_response
    from robotgate.records import HostState
    from robotgate.urls import robots_url

    policy = FetchPolicy()
    bodies = _corpus_bodies(corpus, policy.max_bytes)
    asks = [questions(body, k) for body in bodies]
    files = len(bodies)
    result: dict[str, Any] = {"origins": n, "questions": k, "traced": trace}

    def held() -> int:
        gc.collect()
        return tracemalloc.get_traced_memory()[0] if trace else _rss()

    async def fill_and_ask() -> None:
        gate = RobotGate(USER_AGENT, from_=FROM, delay=1.0, network=Network(max_origins=n))
        cache = gate._cache
        gc.collect()
        if trace:
            tracemalloc.start()
        before = held()
        now = time.time()
        for i in range(n):
            origin = f"https://site{i}.example"
            body = bytes(bytearray(bodies[i % files]))  # a distinct object, as read
            headers = {"Content-Type": "text/plain", "ETag": f'"{i:x}-{i % files}"',
                       "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"}
            # Not named `entry`: that is how the questions are asked.
            fetched = entry_for_response(origin, 200, headers, body, now, policy,
                                         final_url=robots_url(origin))
            await gate.store.save_robots(fetched)
            cache._install(origin, fetched, HostState(origin))
        result["cached"] = held() - before
        allowed = 0
        for i in range(n):
            origin = f"https://site{i}.example"
            for path in asks[i % files]:
                if entry == "check":
                    checked = gate.check(origin + path)
                    allowed += checked is not None and checked.allowed
                elif entry == "decide":
                    allowed += (await gate.decide(origin + path)).allowed
                else:
                    allowed += await gate.allowed(origin + path)
        result["asked"] = held() - before
        result["allowed_share"] = allowed / (n * k or 1)
        result["cached_origins"] = len(cache.sites())
        if trace:
            tracemalloc.stop()
        await gate.close()

    asyncio.run(fill_and_ask())
    return result


def rules_child(n: int, corpus: Path) -> dict[str, Any]:
    """Heap (tracemalloc) of the parsed rules of ``n`` origins with the corpus cycled.

    Every corpus file is parsed once, as the gate parses it, in a fresh process
    (warm caches would hide part of it), and its parsed rules kept; origin
    ``i`` holds the rules of file ``i % files``.
    """
    import tracemalloc

    from robotgate.policy import entry_for_response
    from robotgate.policy.site import parse_entry

    policy = FetchPolicy()
    bodies = _corpus_bodies(corpus, policy.max_bytes)
    gate = RobotGate(USER_AGENT, from_=FROM, delay=1.0)
    now = time.time()
    sizes: list[int] = []
    held = []
    tracemalloc.start()
    for j, body in enumerate(bodies):
        entry = entry_for_response(f"https://probe{j}.example", 200,
                                   {"Content-Type": "text/plain"}, body, now, policy)
        before = tracemalloc.get_traced_memory()[0]
        held.append(parse_entry(entry, gate._cache.how))
        sizes.append(tracemalloc.get_traced_memory()[0] - before)
    tracemalloc.stop()
    k = len(bodies)
    return {"rules_bytes": sum(sizes[i % k] for i in range(n)),
            "rules_bytes_each_file_once": sum(sizes[: min(n, k)]),
            "rules_per_file_mean": statistics.fmean(sizes)}



async def memory(n: int, corpus: Path, progress: Progress, parse_all: bool = False
                 ) -> dict[str, Any]:
    """Figure 6: RSS per cached origin, less the parsed rules (each in its own child)."""
    if not corpus.is_dir():
        return {"error": f"corpus not found: {corpus}"}
    progress.start("memory: parsed rules of the corpus (tracemalloc, a child process)")
    rules = await child_json(SCRIPT, ["--rules-child", str(n), "--corpus", str(corpus)],
                             300)
    if "error" in rules:
        return rules
    progress.start(f"memory: {n:,} origins cached (RSS, a child process)")
    args = ["--memory-child", str(n), "--corpus", str(corpus)]
    result = await child_json(SCRIPT, args + (["--parse-all"] if parse_all else []), 300)
    if "error" in result:
        return result
    result.update(rules)
    per = n or 1
    # The rules the RSS holds: one parse per origin, or one per corpus file (shared).
    held = result["rules_bytes"] if parse_all else result["rules_bytes_each_file_once"]
    result["rss_per_origin"] = result["rss_cached"] / per
    result["rss_per_visited_origin"] = result["rss_visited"] / per
    result["rules_per_origin"] = result["rules_bytes"] / per
    result["body_per_origin"] = result["body_bytes"] / per
    result["per_origin_less_rules"] = (result["rss_cached"] - held) / per
    result["visited_less_rules"] = (result["rss_visited"] - held) / per
    # What a cached origin costs in all: its record, and its own parse of the rules.
    result["per_origin_with_rules"] = result["per_origin_less_rules"] + result["rules_per_origin"]
    return result



async def asked(n: int, k: int, corpus: Path, progress: Progress,
                entry: str = "allowed") -> dict[str, Any]:
    """An origin once asked ``k`` questions, and as cached before them: bytes by RSS and
    by tracemalloc, each in its own child."""
    if not corpus.is_dir():
        return {"error": f"corpus not found: {corpus}"}
    result: dict[str, Any] = {"origins": n, "questions": k, "entry": entry}
    for how in ("rss", "traced"):
        progress.start(f"memory: {n:,} origins cached, {k} questions each by {entry} "
                       f"({how}, a child)")
        args = ["--asked-child", str(n), "--questions", str(k), "--corpus", str(corpus),
                "--entry", entry]
        got = await child_json(SCRIPT, args + (["--trace"] if how == "traced" else []), 1800)
        if "error" in got:
            return got
        result[f"{how}_cached"] = got["cached"] / (n or 1)
        result[f"{how}_asked"] = got["asked"] / (n or 1)
        result["allowed_share"] = got["allowed_share"]
    result["asked_per_origin"] = max(result["rss_asked"], result["traced_asked"])
    return result


async def run(origins: int, corpus: Path, parse_all: bool, asked_origins: int, k: int,
              progress: Progress, entry: str = "allowed") -> dict[str, Any]:
    """The children; the report."""

    async def measure() -> dict[str, Any]:
        out = {"memory": await memory(origins, corpus, progress, parse_all)}
        if asked_origins and k:
            out["asked"] = await asked(asked_origins, k, corpus, progress, entry)
        return out

    return await measured(progress, {"origins": origins, "corpus": str(corpus),
                                     "parse_all": parse_all, "asked_origins": asked_origins,
                                     "questions": k, "entry": entry}, measure)


def table_rows(report: dict[str, Any]) -> list[Row]:
    """One row per figure: its value, the goal, pass/fail."""
    rows: list[Row] = []
    if "memory" in report:
        m = report["memory"]
        if "error" in m:
            rows.append({"section": "memory"})
            rows.append({"figure": "6 memory", "values": {"robotgate": m["error"]},
                         "goal": "< 4 KiB + rules", "pass": False})
        else:
            rows.append({"section": f"memory: {m['origins']:,} origins cached, corpus "
                                    f"({m['corpus_files']:,} files) cycled"})
            rows.append({"figure": "6 RSS per origin less parsed rules",
                         "values": {"robotgate": f"{m['per_origin_less_rules']:,.0f} B"},
                         "goal": "< 4,096 B",
                         "pass": m["per_origin_less_rules"] < 4096})
            rows.append({"figure": "6 a cached origin, its parsed rules included",
                         "values": {"robotgate": f"{m['per_origin_with_rules']:,.0f} B"},
                         "goal": "<= 5,000 B",
                         "pass": m["per_origin_with_rules"] <= 5000})
            # The store keeps each body zlib-compressed, so the RSS holds less
            # than the raw size; the raw size is shown for scale only.
            rows.append({"figure": "  raw robots.txt body (stored compressed)",
                         "values": {"robotgate": f"{m['body_per_origin']:,.0f} B"},
                         "goal": "", "pass": None})
            rows.append({"figure": "  parsed rules (tracemalloc)",
                         "values": {"robotgate": f"{m['rules_per_origin']:,.0f} B"},
                         "goal": "", "pass": None})
            rows.append({"figure": "  after one visit (+ pacer), less rules",
                         "values": {"robotgate": f"{m['visited_less_rules']:,.0f} B"},
                         "goal": "", "pass": None})
    if "asked" in report:
        a = report["asked"]
        if "error" in a:
            rows.append({"section": "memory once asked"})
            rows.append({"figure": "an origin once asked", "values": {"robotgate": a["error"]},
                         "goal": "<= 5,000 B", "pass": False})
        else:
            rows.append({"section": f"memory: {a['origins']:,} origins, each its own parse, "
                                    f"{a['questions']} questions each"})
            rows.append({"figure": "an origin once asked (RSS, traced: the larger)",
                         "values": {"robotgate": f"{a['asked_per_origin']:,.0f} B"},
                         "goal": "<= 5,000 B", "pass": a["asked_per_origin"] <= 5000})
            for how in ("rss", "traced"):
                for when in ("cached", "asked"):
                    rows.append({"figure": f"  {when}, {'RSS' if how == 'rss' else 'traced'}",
                                 "values": {"robotgate": f"{a[f'{how}_{when}']:,.0f} B"},
                                 "goal": "", "pass": None})
    return rows


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--origins", type=int, default=100_000, help="origins cached")
    ap.add_argument("--parse-all", action="store_true",
                    help="parse every cached origin's robots.txt (exact, ~1 min at 100,000) "
                         "instead of one shared parse per corpus file")
    ap.add_argument("--asked-origins", type=int,
                    help="origins cached, then asked (default: --origins, at most 20,000; "
                         "0: not measured)")
    ap.add_argument("--questions", type=int, default=10, help="questions asked an origin")
    ap.add_argument("--entry", choices=("allowed", "check", "decide"), default="allowed",
                    help="how the questions are asked: await gate.allowed, gate.check or "
                         "await gate.decide")
    ap.add_argument("--corpus", type=Path, default=CORPUS, help="a directory of robots.txt files")
    ap.add_argument("--json", type=Path, default=RESULTS / "memory.json",
                    help="write the results here")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rules-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--asked-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.memory_child is not None:
        print(json.dumps(memory_child(args.memory_child, args.corpus, args.parse_all)))
        return 0
    if args.rules_child is not None:
        print(json.dumps(rules_child(args.rules_child, args.corpus)))
        return 0
    if args.asked_child is not None:
        print(json.dumps(asked_child(args.asked_child, args.corpus, args.questions, args.trace,
                                     args.entry)))
        return 0
    asked_origins = (min(args.origins, 20_000) if args.asked_origins is None
                     else args.asked_origins)
    report = asyncio.run(run(args.origins, args.corpus, args.parse_all, asked_origins,
                             args.questions, Progress(enabled=not args.no_progress),
                             args.entry))
    return finish(report, table_rows(report), "", args.json, argv, columns=("robotgate",))


if __name__ == "__main__":
    sys.exit(main())
