"""The cost per page: gate.fetch and the middleware beside plain aiohttp and the alternatives.

    python benchmarks/overhead.py [--quick] [--hosts 1000] [--pages 5] [--concurrency 200]
        [--rounds 5] [--only A,B] [--before-src OLD/src] [--profile] [--callgrind [--cache-sim]]
        [--callgrind-crawl [--cg-hosts 100,300] [--cg-repeats 3]]
        [--json benchmarks/results/overhead.json]

1,000 hosts x 5 pages, 200 tasks, delay 0, caps off, the same TCPConnector settings for plain
aiohttp, gate.fetch, a session with gate.middleware and the hand-rolled baseline. Each run is a
fresh client process, cold (robots.txt fetched in the timed run, as work the gate must do); the
rate is the HTTP requests the server counted (robots.txt included) over the run's time. Rounds
rotate the order; a ratio is the median over rounds of contender/aiohttp in the same round. Each
run also gives its CPU time per page (getrusage) and its garbage collections (gc.callbacks:
count and time). ``--before-src`` adds the gate.fetch and middleware of another tree (e.g. a
worktree of an older commit), interleaved; ``--profile`` one cProfile run each; ``--callgrind``
exact instructions, GC-tracked allocations (calls of ``_PyObject_GC_Link``) and garbage
collections per cached page and per new host under valgrind, ``--concurrency`` tasks at once;
with ``--cache-sim`` also callgrind's simulated instruction-cache misses and mispredicted
branches (what costs time beside instructions; this VM has no hardware counters);
``--callgrind-crawl`` requests per instruction of whole cold crawls over new hosts, the
marginal cost between two crawl sizes (:func:`callgrind_crawl`). ``floor`` is plain aiohttp
plus one unparsed robots.txt request per host: what any client that asks for robots.txt must
at least do. ``floor+work`` is the floor plus a fixed loop of pure CPU a page
(``WORK_TURNS``), timed alone in the same process after its run: over the floor in the same
round, it gives the run's charge for a page's own work (1.0: what it costs alone).

Each run is a child process of this script (``--child NAME --spec FILE``: one JSON line);
the loopback server (:mod:`testbed.server`) runs in another.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import math
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` and `testbed.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from benchmarks.baselines import HandRolled, alternative_available
from benchmarks.harness import RESULTS, connector
from benchmarks.harness.children import child_json, raise_nofile
from benchmarks.harness.progress import Progress, measured
from benchmarks.harness.report import Row, finish, fmt_int, md
from benchmarks.harness.stats import SIM_EVENTS, median, parse_callgrind, valgrind
from robotgate import Disallowed, RobotGate
from testbed.crawl import FROM, USER_AGENT
from testbed.server import HostPlan, ServerProcess

HAVE_PROTEGO = alternative_available("protego")[0]
SCRIPT = Path(__file__).resolve()



@dataclass
class Sizes:
    hosts: int = 1000
    pages: int = 5
    concurrency: int = 200
    rounds: int = 5
    profile: bool = False
    callgrind: bool = False
    cache_sim: bool = False
    callgrind_crawl: bool = False
    cg_hosts: tuple[int, int] = (100, 300)
    cg_repeats: int = 3
    before_src: Path | None = None
    #: The contenders to run (None: all); ``--only``.
    only: tuple[str, ...] | None = None


#: The overhead contenders; a name with BEFORE runs on the ``--before-src`` tree.
OVERHEAD_CONTENDERS = ("aiohttp", "floor", "floor+work", "gate.fetch", "middleware", "baseline")


BEFORE = " (before)"

#: ``--callgrind-crawl``'s contenders: the gate's two aiohttp paths and their reference.
CRAWL_CONTENDERS = ("aiohttp", "gate.fetch", "middleware")

#: ``--callgrind-crawl``'s goals (issue 52): requests per instruction over plain aiohttp's,
#: by whether the hot path runs compiled.
CRAWL_GOALS = {(True, "gate.fetch"): 0.86, (True, "middleware"): 0.87,
               (False, "gate.fetch"): 0.83, (False, "middleware"): 0.84}



#: ``floor+work``'s fixed CPU work a page: this many turns of a small Python loop
#: (about 10 us on the machine of the README's figures), timed alone after the run.
WORK_TURNS = 400



def overhead_urls(base_urls: Sequence[str], pages: int) -> list[str]:
    """Every host's ``/page/0``, then every host's ``/page/1``, ...: 200 tasks
    meet 200 different hosts, as a crawl over many sites does."""
    return [f"{b}/page/{i}" for i in range(pages) for b in base_urls]



class GcWatch:
    """Collections per generation and the time spent in them (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.collections = [0, 0, 0]
        self.collected = 0
        self.seconds = 0.0
        self._t = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t = time.perf_counter()
            return
        self.seconds += time.perf_counter() - self._t
        self.collections[info["generation"]] += 1
        self.collected += info["collected"]

    def __enter__(self) -> GcWatch:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)



def _cpu(r: resource.struct_rusage) -> float:
    return r.ru_utime + r.ru_stime



def page_work(turns: int) -> int:
    """``floor+work``'s CPU work for one page: a loop that touches almost no memory."""
    x = 0
    for i in range(turns):
        x += i
    return x



def work_alone_us(turns: int, repeat: int = 2000) -> float:
    """CPU microseconds of one :func:`page_work` call, timed alone (warm, in a loop)."""
    t0 = time.process_time()
    for _ in range(repeat):
        page_work(turns)
    return (time.process_time() - t0) / repeat * 1e6



async def overhead_child(name: str, spec: dict[str, Any], profile: bool = False
                         ) -> dict[str, Any]:
    """One contender, cold (robots.txt not cached, no connection open), in this process.

    Times the whole run: robots.txt fetches are work the gate must do.  Returns
    wall time, this process's CPU time, collections and GC time, and with
    ``profile`` the top functions of robotgate's own code (cProfile).
    """
    import robotgate

    urls = overhead_urls(spec["base_urls"], spec["pages"])
    big = 1_000_000
    headers = {"User-Agent": USER_AGENT, "From": FROM}
    sessions: list[aiohttp.ClientSession] = []
    gate: RobotGate | None = None

    def session(**kwargs: Any) -> aiohttp.ClientSession:
        # No connection dropped for idling: under callgrind on a busy machine a pass over 300
        # hosts can outlast aiohttp's 15 s keep-alive, and the reconnects (up to 10% more
        # instructions in a crawl) would follow the machine's load, not the code.
        s = aiohttp.ClientSession(connector=connector(keepalive_timeout=None), **kwargs)
        sessions.append(s)
        return s

    fetch: Callable[[str], Awaitable[bool]]
    if name == "aiohttp":
        plain = session()

        async def fetch(url: str) -> bool:
            async with plain.get(url, headers=headers) as resp:
                await resp.read()
                return resp.status == 200
    elif name in ("floor", "floor+work"):
        # What any robots.txt-respecting client must do at least: plain aiohttp
        # plus one robots.txt request per host (single flight), read, not parsed.
        # floor+work adds a fixed amount of CPU a page: what the clock charges for it
        # beside what it costs alone is the run's price of a page's own work.
        plain = session()
        asked: dict[str, asyncio.Future[None]] = {}
        turns = WORK_TURNS if name == "floor+work" else 0

        async def fetch(url: str) -> bool:
            origin = url[:url.index("/", 8)]
            done = asked.get(origin)
            if done is None:
                done = asked[origin] = asyncio.get_running_loop().create_future()
                async with plain.get(origin + "/robots.txt", headers=headers) as resp:
                    await resp.read()
                done.set_result(None)
            elif not done.done():
                await done
            if turns:
                page_work(turns)
            async with plain.get(url, headers=headers) as resp:
                await resp.read()
                return resp.status == 200
    elif name in ("gate.fetch", "middleware"):
        gate = RobotGate(USER_AGENT, from_=FROM, delay=0, max_per_host=big, session=session())
        await gate.open()
        if name == "gate.fetch":
            the_gate = gate

            async def fetch(url: str) -> bool:
                try:
                    async with the_gate.fetch(url) as resp:
                        await resp.read()
                        return resp.status == 200
                except Disallowed:
                    return False
        else:
            mw = session(middlewares=[gate.middleware])

            async def fetch(url: str) -> bool:
                async with mw.get(url) as resp:
                    await resp.read()
                    return resp.status == 200
    elif name == "baseline":
        crawler = HandRolled(session(), USER_AGENT, delay=0, per_origin=big, timeout=30)

        async def fetch(url: str) -> bool:
            return await crawler.fetch(url) == 200
    else:
        raise ValueError(f"unknown contender {name!r}")

    todo = iter(urls)
    counts = {"ok": 0, "errors": 0}

    async def worker() -> None:
        for url in todo:
            try:
                if await fetch(url):
                    counts["ok"] += 1
            except Exception:  # counted: a contender that fails shows in "not fetched"
                counts["errors"] += 1

    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
    gc.collect()
    tracked0 = len(gc.get_objects())
    with GcWatch() as watch:
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        if prof is not None:
            prof.enable()
        await asyncio.wait_for(
            asyncio.gather(*(worker() for _ in range(spec["concurrency"]))), 600)
        if prof is not None:
            prof.disable()
        elapsed = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
    # What stays for the next page: open connections, and for the gate its caches.
    gc.collect()
    kept = len(gc.get_objects()) - tracked0
    robots = gate.stats["robots_requests"] if gate is not None else None
    try:
        from robotgate.compiled import compiled_modules
        compiled: int | None = len(compiled_modules())
    except ImportError:  # a tree from before the compiled build
        compiled = None
    if gate is not None:
        await gate.close()
    for s in sessions:
        await s.close()
    out: dict[str, Any] = {
        "name": name, "robotgate": str(Path(robotgate.__file__).parent), "pages": len(urls),
        "ok": counts["ok"], "errors": counts["errors"], "elapsed": elapsed,
        "cpu": _cpu(r1) - _cpu(r0), "gc_collections": watch.collections,
        "gc_collected": watch.collected, "gc_seconds": watch.seconds,
        "robots_requests": robots, "tracked_kept": kept, "compiled_modules": compiled,
    }
    if name == "floor+work":
        out["work_alone_us"] = work_alone_us(WORK_TURNS)
    if prof is not None:
        out["profile"] = _profile_rows(prof, len(urls))
    return out



def _profile_rows(prof: Any, pages: int, top: int = 15) -> dict[str, Any]:
    """robotgate's own functions by self time per page, and the whole run's total."""
    import pstats

    st = pstats.Stats(prof)
    raw: dict[Any, Any] = st.stats  # type: ignore[attr-defined]
    rows = []
    total = own = 0.0
    for (file, line, func), (_cc, nc, tt, ct, _callers) in raw.items():
        total += tt
        if "/robotgate/" not in file:
            continue
        own += tt
        short = file.split("/robotgate/", 1)[1]
        rows.append({"function": f"{short}:{line}({func})", "calls_per_page": nc / pages,
                     "self_us_per_page": tt / pages * 1e6, "cum_us_per_page": ct / pages * 1e6})
    rows.sort(key=lambda r: -r["self_us_per_page"])
    return {"total_us_per_page": total / pages * 1e6, "robotgate_us_per_page": own / pages * 1e6,
            "top": rows[:top]}



def _contenders(names: Sequence[str], before: Path | None) -> list[tuple[str, Path | None]]:
    out: list[tuple[str, Path | None]] = [(n, None) for n in names]
    if before is not None:
        out += [(n + BEFORE, before) for n in names if n in ("gate.fetch", "middleware")]
    return out



async def overhead(
    server: ServerProcess, sizes: Sizes, workdir: Path, progress: Progress,
) -> dict[str, Any]:
    """Figure 4: requests/s counted by the server, each contender cold in a fresh process.

    Each round runs every contender once in rotated order; a ratio is the
    median over rounds of the contender's rate over plain aiohttp's in the
    same round, so load from other processes hits both sides.
    """
    base_urls = server.base_urls[: sizes.hosts]
    spec_path = workdir / "overhead-spec.json"
    spec = {"base_urls": base_urls, "pages": sizes.pages,
            "concurrency": sizes.concurrency}
    spec_path.write_text(json.dumps(spec))
    names = [n for n in OVERHEAD_CONTENDERS if (n != "baseline" or HAVE_PROTEGO)
             and (sizes.only is None or n in sizes.only)]
    contenders = _contenders(names, sizes.before_src)
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n, _ in contenders}
    errors: list[str] = []
    rounds = sizes.rounds
    for r in range(rounds):
        k = r % len(contenders)
        order = contenders[k:] + contenders[:k]
        if r % 2:
            order.reverse()  # neither always first nor always after the same one
        for name, src in order:
            progress.start(f"overhead round {r + 1}/{rounds}: {name}")
            await server.reset()
            child = await child_json(
                SCRIPT, ["--child", name.removesuffix(BEFORE), "--spec", str(spec_path)], 900,
                src)
            if "error" in child:
                errors.append(f"{name}: {child['error']}")
                continue
            totals = await server.totals()
            child["server_requests"] = server_requests(totals)
            child["server_robots"] = totals["robots_requests"]
            child["round"] = r
            runs[name].append(child)
    out = overhead_summary(runs, spec, rounds)
    out["errors"] = errors
    out["runs"] = runs  # every run's figures, to recompute or compare runs later
    if sizes.profile:
        out["profile"] = {}
        for name, src in contenders:
            if name.removesuffix(BEFORE) not in ("gate.fetch", "middleware"):
                continue
            progress.start(f"overhead: cProfile of {name}")
            await server.reset()
            child = await child_json(SCRIPT, ["--child", name.removesuffix(BEFORE), "--spec",
                                              str(spec_path), "--profile"], 900, src)
            out["profile"][name] = child.get("profile", child.get("error"))
    if sizes.callgrind:
        out["callgrind"] = await callgrind_overhead(server, contenders, workdir, progress,
                                                    cache_sim=sizes.cache_sim,
                                                    concurrency=sizes.concurrency)
    if sizes.callgrind_crawl:
        out["callgrind_crawl"] = await callgrind_crawl(
            server, _contenders([n for n in CRAWL_CONTENDERS
                                 if sizes.only is None or n in sizes.only], sizes.before_src),
            workdir, progress,
            sizes.cg_hosts, sizes.pages, sizes.concurrency, sizes.cg_repeats)
    return out


def server_requests(totals: dict[str, int]) -> int:
    """Every HTTP request the loopback server counted, robots.txt included."""
    return (totals["robots_requests"] + totals["page_requests"] + totals["redirect_hops"]
            + totals["other_requests"])



def overhead_summary(runs: dict[str, list[dict[str, Any]]], spec: dict[str, Any],
                      rounds: int) -> dict[str, Any]:
    ref = {c["round"]: c for c in runs.get("aiohttp", [])}

    def rate(c: dict[str, Any]) -> float:
        return float(c["server_requests"]) / float(c["elapsed"])

    def cpu_per_request(c: dict[str, Any]) -> float:
        return float(c["cpu"]) / float(c["server_requests"])

    def pooled(cs: list[dict[str, Any]]) -> float:
        # Every round's requests over every round's time: a slow round weighs by its length.
        return float(sum(c["server_requests"] for c in cs)) / float(sum(c["elapsed"] for c in cs))

    table: dict[str, dict[str, Any]] = {}
    for name, cs in runs.items():
        if not cs:
            continue
        pages = cs[0]["pages"]
        mates = [ref[c["round"]] for c in cs if c["round"] in ref]
        ratios = [rate(c) / rate(ref[c["round"]]) for c in cs if c["round"] in ref]
        page_ratios = [(c["ok"] / c["elapsed"]) / (ref[c["round"]]["ok"] / ref[c["round"]]
                                                    ["elapsed"])
                       for c in cs if c["round"] in ref]
        # Were the client the bottleneck, requests/s would go as 1 / CPU per request.
        cpu_ratios = [cpu_per_request(ref[c["round"]]) / cpu_per_request(c)
                      for c in cs if c["round"] in ref]
        table[name] = {
            "runs": len(cs),
            "requests_per_s": median([rate(c) for c in cs]),
            "requests_per_s_all": [round(rate(c)) for c in cs],
            "pages_per_s": median([c["ok"] / c["elapsed"] for c in cs]),
            "ratio": median(ratios),
            "ratio_all": [round(x, 3) for x in ratios],
            "ratio_range": [min(ratios), max(ratios)] if ratios else None,
            "pooled_ratio": pooled([c for c in cs if c["round"] in ref]) / pooled(mates)
            if mates else math.nan,
            "page_ratio": median(page_ratios),
            "cpu_ratio": median(cpu_ratios),
            "cpu_ratio_range": [min(cpu_ratios), max(cpu_ratios)] if cpu_ratios else None,
            "client_busy": median([c["cpu"] / c["elapsed"] for c in cs]),
            "server_requests": cs[0]["server_requests"],
            "robots_requests": cs[0]["server_robots"],
            "not_fetched": max(pages - c["ok"] for c in cs),
            "errors": max(c["errors"] for c in cs),
            "cpu_us_per_page": median([c["cpu"] / pages * 1e6 for c in cs]),
            "gc_us_per_page": median([c["gc_seconds"] / pages * 1e6 for c in cs]),
            "gen0_per_1000_pages": median([c["gc_collections"][0] / pages * 1000 for c in cs]),
            "gen2_collections": median([c["gc_collections"][2] for c in cs]),
            "gc_collected_per_page": median([c["gc_collected"] / pages for c in cs]),
            "tracked_per_host": median([c.get("tracked_kept", math.nan)
                                         / len(spec["base_urls"]) for c in cs]),
            "robotgate": cs[0]["robotgate"],
        }
    return {"hosts": len(spec["base_urls"]), "pages_per_host": spec["pages"],
            "concurrency": spec["concurrency"], "rounds": rounds, "contenders": table,
            "work_charge": _work_charge(runs)}



def _work_charge(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    """How many us of client CPU a page the run charges for 1 us of a page's own work:
    ``floor+work`` over the floor in the same round, over the work's cost timed alone.

    1.0 would mean a page's work costs what it costs alone; more, that the run
    (the loop, the kernel, the other core's server) charges extra for it.
    """
    floors = {c["round"]: c for c in runs.get("floor", [])}
    charges, extra, alone = [], [], []
    for c in runs.get("floor+work", []):
        f = floors.get(c["round"])
        if f is None or not c.get("work_alone_us"):
            continue
        added = (c["cpu"] - f["cpu"]) / c["pages"] * 1e6
        extra.append(added)
        alone.append(c["work_alone_us"])
        charges.append(added / c["work_alone_us"])
    if not charges:
        return None
    return {"charge": median(charges), "charge_range": [min(charges), max(charges)],
            "charge_all": [round(x, 2) for x in charges], "added_us_per_page": median(extra),
            "alone_us": median(alone), "turns": WORK_TURNS}



def _requests_per_instruction(contenders: dict[str, Any], pages: int) -> dict[str, float]:
    """The overhead phase's ratio as callgrind counts it: requests per instruction
    for a host of ``pages`` pages (one new host, then cached pages), over aiohttp's.

    Every contender but plain aiohttp also asks for robots.txt: ``pages + 1`` requests.
    """
    def rate(name: str, c: dict[str, Any]) -> float:
        cost = float(c["instructions_per_new_host"] + (pages - 1) * c["instructions_per_page"])
        return (pages + (name != "aiohttp")) / cost

    ok = {n: c for n, c in contenders.items() if "instructions_per_new_host" in c}
    if "aiohttp" not in ok:
        return {}
    ref = rate("aiohttp", ok["aiohttp"])
    return {n: rate(n, c) / ref for n, c in ok.items()}



async def callgrind_overhead(
    server: ServerProcess, contenders: Sequence[tuple[str, Path | None]], workdir: Path,
    progress: Progress, hosts: tuple[int, int] = (200, 600), pages: tuple[int, int] = (1, 6),
    cache_sim: bool = False, concurrency: int = 200,
) -> dict[str, Any]:
    """Instructions and allocations per cached page and per new host, exactly, under callgrind.

    With ``cache_sim``, also callgrind's simulated first-level instruction and
    data cache misses and mispredicted branches (conditional and indirect).
    ``concurrency``: the tasks of each run (at most ``hosts[0]``).  With one, the order
    of events repeats, and so does a count; at 200, when the young generation is
    collected follows the order of many tasks' allocations and frees (the collector
    starts at 700 allocations net of frees, and a free just after a collection is not
    counted): the collections are counted beside the instructions.

    Each contender runs three times: ``hosts[0]`` hosts with ``pages[0]`` and
    ``pages[1]`` pages each (the same robots.txt fetches and connections, so
    the difference over the extra pages is the cost of a page whose robots.txt
    is cached, on a kept-alive connection), and ``hosts[1]`` hosts with
    ``pages[0]`` (the difference over the extra hosts is the cost of a new
    host: its connection, robots.txt and first page).
    """
    if shutil.which("valgrind") is None:
        return {"error": "valgrind not installed"}
    tasks = min(concurrency, hosts[0])
    out: dict[str, Any] = {"hosts": hosts[0], "new_hosts": list(hosts), "pages": list(pages),
                           "cache_sim": cache_sim, "concurrency": tasks, "contenders": {}}
    for name, src in contenders:
        got: list[dict[str, Any]] = []
        for h, n in ((hosts[0], pages[0]), (hosts[0], pages[1]), (hosts[1], pages[0])):
            progress.start(f"overhead: callgrind {name}, {h} hosts, {n} page(s) per host")
            run = await callgrind_run(server, name, src, h, n, tasks, workdir, cache_sim)
            if "error" in run:
                got = []
                out["contenders"][name] = {"error": run["error"]}
                break
            got.append(run)
        if len(got) != 3:
            continue
        a, b, c = got

        def per(x: dict[str, Any], y: dict[str, Any], n: int) -> dict[str, float]:
            sims = {key: (sum(y["events"].get(e, 0) for e in evs)
                          - sum(x["events"].get(e, 0) for e in evs)) / n
                    for key, evs in SIM_EVENTS.items() if cache_sim}
            return {**sims, "instructions": (y["instructions"] - x["instructions"]) / n,
                    "gc_allocations": (y["calls"]["_PyObject_GC_Link"]
                                       - x["calls"]["_PyObject_GC_Link"]) / n,
                    "mallocs": (y["calls"]["_PyObject_Malloc"]
                                - x["calls"]["_PyObject_Malloc"]) / n,
                    "gc_instructions": (y["inclusive"]["gc_collect_main"]
                                        - x["inclusive"]["gc_collect_main"]) / n,
                    "gc_collections": (y["calls"]["gc_collect_main"]
                                       - x["calls"]["gc_collect_main"]) / n}

        page = per(a, b, hosts[0] * (pages[1] - pages[0]))
        host = per(a, c, hosts[1] - hosts[0])
        out["contenders"][name] = {**{f"{k}_per_page": v for k, v in page.items()},
                                   **{f"{k}_per_new_host": v for k, v in host.items()}}
    return out



async def wrapped_crawl(
    server: ServerProcess, name: str, src: Path | None, hosts: int, pages: int,
    concurrency: int, workdir: Path, wrap: Sequence[str], timeout: float = 1800,
) -> dict[str, Any]:
    """One cold crawl of a contender over the server's first ``hosts`` hosts, in a child
    run under ``wrap`` (a counter's command: callgrind, benchmarks/opcodes.py): the
    child's report, or ``{"error": ...}``."""
    spec_path = workdir / f"cg-spec-{hosts}-{pages}-{concurrency}.json"
    spec_path.write_text(json.dumps({"base_urls": server.base_urls[:hosts], "pages": pages,
                                     "concurrency": concurrency}))
    await server.reset()
    return await child_json(
        SCRIPT, ["--child", name.removesuffix(BEFORE), "--spec", str(spec_path)], timeout, src,
        wrap=wrap)


async def callgrind_run(
    server: ServerProcess, name: str, src: Path | None, hosts: int, pages: int,
    concurrency: int, workdir: Path, cache_sim: bool = False,
) -> dict[str, Any]:
    """One cold run of a contender over the server's first ``hosts`` hosts under callgrind:
    :func:`parse_callgrind`'s counts, the requests the server counted (robots.txt included),
    the pages fetched; or ``{"error": ...}``."""
    cg_file = workdir / "cg.out"
    child = await wrapped_crawl(server, name, src, hosts, pages, concurrency, workdir,
                                valgrind(cg_file, cache_sim))
    if "error" in child:
        return {"error": child["error"]}
    counts = parse_callgrind(cg_file)
    cg_file.unlink()
    return {**counts, "requests": server_requests(await server.totals()),
            "pages": child["pages"], "ok": child["ok"],
            "compiled_modules": child.get("compiled_modules")}



async def callgrind_crawl(
    server: ServerProcess, contenders: Sequence[tuple[str, Path | None]], workdir: Path,
    progress: Progress, hosts: tuple[int, int] = (100, 300), pages: int = 5,
    concurrency: int = 200, repeats: int = 3,
) -> dict[str, Any]:
    """Requests per instruction of cold crawls over new hosts, under callgrind.

    Each contender crawls ``hosts[0]`` and then ``hosts[1]`` hosts x ``pages``
    pages, every host new (a fresh process, robots.txt not cached), with
    ``min(concurrency, hosts[0])`` tasks in both.  What the two crawls share
    (start-up, imports, the loop's first and last turns) cancels in the
    marginal cost :func:`crawl_marginals` takes between them.  Every size runs
    ``repeats`` times, interleaved with the other contenders.
    """
    if shutil.which("valgrind") is None:
        return {"error": "valgrind not installed"}
    tasks = min(concurrency, hosts[0])
    runs: dict[str, list[list[dict[str, Any]]]] = {name: [[], []] for name, _ in contenders}
    for r in range(repeats):
        k = r % len(contenders)
        order = [*contenders[k:], *contenders[:k]]
        for i, h in enumerate(hosts):
            for name, src in order:
                progress.start(f"overhead: callgrind crawl {r + 1}/{repeats}: {name}, "
                               f"{h} hosts x {pages} pages")
                runs[name][i].append(
                    await callgrind_run(server, name, src, h, pages, tasks, workdir))
    return {"hosts": list(hosts), "pages": pages, "concurrency": tasks, "repeats": repeats,
            "contenders": crawl_marginals(runs)}



def crawl_marginals(runs: dict[str, list[list[dict[str, Any]]]]) -> dict[str, dict[str, Any]]:
    """Each contender's marginal instructions per request between its small and large
    crawls, and its requests per instruction over plain aiohttp's.

    ``runs[name]`` holds the small crawl's runs, then the large one's.  A size's
    count is its fewest instructions over the repeats (the count moves a few
    percent with how the event loop batches; nothing makes a run cheaper than
    its work), with that run's requests: marginal = (I_large - I_small) /
    (R_large - R_small).  ``ratio_repeats`` pairs repeat i of both sizes
    instead, for the spread.
    """
    def instructions(run: dict[str, Any]) -> int:
        return int(run["instructions"])

    def gc_allocations(run: dict[str, Any]) -> int:
        return int(run["calls"]["_PyObject_GC_Link"])

    def connections(run: dict[str, Any]) -> int:
        return int(run["calls"].get("connect", 0))

    def marginal(small: dict[str, Any], large: dict[str, Any],
                 count: Callable[[dict[str, Any]], int] = instructions) -> float:
        return (count(large) - count(small)) / int(large["requests"] - small["requests"])

    out: dict[str, dict[str, Any]] = {}
    for name, sizes in runs.items():
        failed = [r for size in sizes for r in size
                  if "error" in r or r["ok"] != r["pages"]]
        if failed or not all(sizes):
            f = failed[0] if failed else {}
            out[name] = {"error": f.get("error") or
                         (f"{f['pages'] - f['ok']} pages not fetched" if f else "no runs")}
            continue
        small, large = (min(size, key=instructions) for size in sizes)
        out[name] = {
            "instructions": [small["instructions"], large["instructions"]],
            "instructions_all": [[r["instructions"] for r in size] for size in sizes],
            "requests": [small["requests"], large["requests"]],
            "instructions_per_request": marginal(small, large),
            "instructions_per_request_repeats": [
                marginal(a, b) for a, b in zip(*sizes, strict=False)],
            "gc_allocations_per_request": marginal(small, large, gc_allocations),
            # One a host when no connection was dropped and opened again.
            "connections_all": [[connections(r) for r in size] for size in sizes],
            "compiled_modules": small.get("compiled_modules"),
        }
    ref = out.get("aiohttp", {})
    for c in out.values():
        if "instructions_per_request" not in c or "instructions_per_request" not in ref:
            continue
        c["ratio"] = ref["instructions_per_request"] / c["instructions_per_request"]
        c["ratio_repeats"] = [a / x for a, x in zip(ref["instructions_per_request_repeats"],
                                                    c["instructions_per_request_repeats"],
                                                    strict=False)]
    return out



async def run(sizes: Sizes, progress: Progress) -> dict[str, Any]:
    """The overhead rounds (and callgrind) against one loopback server; the report."""
    raise_nofile()

    hosts = server_hosts(sizes)

    async def measure() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="robotgate-overhead-") as tmp:
            progress.start(f"overhead: starting a server with {hosts} hosts")
            async with ServerProcess() as server:
                await server.start(["--backlog", "4096"],
                                   plans=[HostPlan("partial")] * hosts, duration=3600)
                return {"overhead": await overhead(server, sizes, Path(tmp), progress)}

    return await measured(progress, dataclasses.asdict(sizes), measure)


def server_hosts(sizes: Sizes) -> int:
    """The loopback hosts the largest run asks for (callgrind's new-host runs: 600)."""
    return max(sizes.hosts, 600 if sizes.callgrind else 0,
               max(sizes.cg_hosts) if sizes.callgrind_crawl else 0)


def table_rows(report: dict[str, Any]) -> list[Row]:
    """One row per figure: its value for robotgate (and the baseline), the goal, pass/fail."""
    rows: list[Row] = []
    if "overhead" in report:
        o = report["overhead"]
        cs = o["contenders"]
        if cs:  # none with --rounds 0
            rows.append({"section": f"overhead: {o['hosts']:,} hosts x {o['pages_per_host']} "
                                    f"pages, {o['concurrency']} tasks, delay 0, caps off, cold, "
                                    f"median of {o['rounds']} interleaved rounds (details below)"})
        for name in ("gate.fetch", "middleware"):
            c = cs.get(name)
            if c is None:
                continue
            b = cs.get("baseline") if name == "gate.fetch" else None
            rows.append({"figure": f"4 requests/s {name} / plain aiohttp",
                         "values": {"robotgate": f"{c['ratio']:.0%}",
                                    "baseline": f"{b['ratio']:.0%}" if b else "-"},
                         "goal": ">= 95%", "pass": c["ratio"] >= 0.95})
            rows.append({"figure": "  pooled: all rounds' requests over their time",
                         "values": {"robotgate": f"{c['pooled_ratio']:.0%}",
                                    "baseline": f"{b['pooled_ratio']:.0%}" if b else "-"},
                         "goal": ">= 95%", "pass": None})
            rows.append({"figure": "  the same by client CPU per request",
                         "values": {"robotgate": f"{c['cpu_ratio']:.0%}",
                                    "baseline": f"{b['cpu_ratio']:.0%}" if b else "-"},
                         "goal": ">= 95%", "pass": None})
        w = o.get("work_charge")
        if w:
            rows.append({"figure": "  client CPU charged for 1 us of a page's own work",
                         "values": {"robotgate": f"{w['charge']:.2f} us"},
                         "goal": "", "pass": None})
        rows += _crawl_rows(o.get("callgrind_crawl"))
    return rows


def _crawl_rows(cg: dict[str, Any] | None) -> list[Row]:
    """``--callgrind-crawl``'s ratios beside their goals (compiled or pure, as each ran)."""
    if not cg or "contenders" not in cg:
        return []
    a, b = cg["hosts"]
    rows: list[Row] = [{"section": f"requests per instruction / plain aiohttp's (callgrind): "
                                   f"marginal between {a} and {b} new hosts x {cg['pages']} "
                                   f"pages, robots.txt counted, fewest of {cg['repeats']}"}]
    for name, c in cg["contenders"].items():
        base = name.removesuffix(BEFORE)
        if base == "aiohttp":
            continue
        if "ratio" not in c:
            rows.append({"figure": f"  {name}", "values": {"robotgate": c.get("error", "-")},
                         "goal": "", "pass": False})
            continue
        compiled = bool(c["compiled_modules"])
        goal = CRAWL_GOALS.get((compiled, base))
        rows.append({"figure": f"  {name}, {'compiled' if compiled else 'pure Python'}",
                     "values": {"robotgate": f"{c['ratio']:.1%}"},
                     "goal": f">= {goal:.0%}" if goal else "",
                     "pass": c["ratio"] >= goal if goal else None})
    return rows


def render_details(report: dict[str, Any]) -> str:
    """The detail tables (Markdown), ready for benchmarks/README.md."""
    out: list[str] = []
    o = report.get("overhead")
    if o:
        body = []
        for name, c in o["contenders"].items():
            lo, hi = c["ratio_range"] or (math.nan, math.nan)
            clo, chi = c["cpu_ratio_range"] or (math.nan, math.nan)
            body.append([name, fmt_int(c["requests_per_s"]), fmt_int(c["server_requests"]),
                         f"{c['ratio']:.1%}", f"{lo:.0%}-{hi:.0%}",
                         f"{c['pooled_ratio']:.1%}", f"{c['client_busy']:.0%}",
                         f"{c['cpu_ratio']:.1%} ({clo:.0%}-{chi:.0%})",
                         f"{c['cpu_us_per_page']:.0f}",
                         f"{c['gc_us_per_page']:.1f}", f"{c['gen0_per_1000_pages']:.1f}",
                         f"{c['tracked_per_host']:.0f}", fmt_int(c["not_fetched"])])
        if body:  # none with --rounds 0
            out.append(f"\n### Overhead: {o['hosts']:,} loopback hosts x {o['pages_per_host']} "
                       f"pages, {o['concurrency']} concurrent, delay 0, caps off, cold (robots.txt "
                       f"fetched in the timed run); median of {o['rounds']} interleaved rounds, "
                       f"each run a fresh process\n")
            out += md(["contender", "requests/s (server)", "requests", "ratio to aiohttp",
                       "range", "pooled ratio", "client CPU busy",
                       "ratio by client CPU per request (range)",
                       "client CPU us/page", "GC us/page", "gen-0 GCs /1000 pages",
                       "GC-tracked objects kept per host", "pages not fetched"], body)
        for e in o.get("errors", []):
            out.append(f"\nerror: {e}")
        w = o.get("work_charge")
        if w:
            lo, hi = w["charge_range"]
            out.append(f"\nThe run's charge for a page's own work: floor+work's {w['turns']} "
                       f"turns of a loop cost {w['alone_us']:.1f} us alone and added "
                       f"{w['added_us_per_page']:.1f} us of client CPU a page over the floor "
                       f"in the same round: **{w['charge']:.2f}x** (range {lo:.2f}-{hi:.2f}x).")
        cg = o.get("callgrind")
        if cg and "contenders" in cg:
            out.append(f"\nCallgrind, per page whose robots.txt is cached (runs with "
                       f"{cg['pages'][1]} and {cg['pages'][0]} pages on {cg['hosts']} hosts, "
                       f"{cg.get('concurrency', 200)} tasks, the difference over the extra "
                       f"pages):\n")
            ref = cg["contenders"].get("aiohttp", {}).get("instructions_per_page")
            body = []
            for name, c in cg["contenders"].items():
                if "error" in c:
                    body.append([name, c["error"], "", "", "", ""])
                    continue
                ins = c["instructions_per_page"]
                body.append([name, fmt_int(ins),
                             f"{ins - ref:+,.0f} ({ins / ref - 1:+.1%})" if ref else "-",
                             f"{c['gc_allocations_per_page']:.1f}",
                             f"{c['mallocs_per_page']:.0f}",
                             fmt_int(c["gc_instructions_per_page"])])
            out += md(["contender", "instructions/page", "vs aiohttp",
                        "GC-tracked allocations/page", "small allocations/page",
                        "GC instructions/page"], body)
            floor = cg["contenders"].get("floor", {}).get("instructions_per_new_host")
            hosts = cg.get("new_hosts", [0, 0])
            out.append(f"\nCallgrind, per new host: its connection, robots.txt (but for "
                       f"aiohttp) and first page (runs with {hosts[1]} and {hosts[0]} hosts, "
                       f"one page each; the floor is aiohttp plus an unparsed robots.txt "
                       f"request):\n")
            pages = int(o.get("pages_per_host") or 5)
            model = _requests_per_instruction(cg["contenders"], pages)
            body = []
            for name, c in cg["contenders"].items():
                if "instructions_per_new_host" not in c:
                    continue
                ins = c["instructions_per_new_host"]
                body.append([name, fmt_int(ins),
                             f"{ins - floor:+,.0f}" if floor else "-",
                             f"{c['gc_allocations_per_new_host']:.1f}",
                             fmt_int(c["gc_instructions_per_new_host"]),
                             f"{c.get('gc_collections_per_new_host', math.nan) * 1000:.0f}",
                             f"{model[name]:.1%}" if name in model else "-"])
            out += md(["contender", "instructions/new host", "vs floor",
                        "GC-tracked allocations/new host", "GC instructions/new host",
                        "collections/1,000 new hosts",
                        f"requests per instruction vs aiohttp, {pages} pages a host"], body)
            if cg.get("cache_sim"):
                out.append("\nCallgrind's simulated caches and branch predictor (first-level "
                           "cache misses; mispredicted conditional and indirect branches):\n")
                body = [[name, *(f"{c[f'{k}_per_{w}']:,.0f}" for w in ("page", "new_host")
                                 for k in SIM_EVENTS)]
                        for name, c in cg["contenders"].items() if "i1_misses_per_page" in c]
                out += md(["contender", *(f"{k.replace('_', ' ')}/{w}"
                                           for w in ("page", "new host") for k in SIM_EVENTS)],
                           body)
        out += _crawl_details(o.get("callgrind_crawl"))
        for name, prof in (o.get("profile") or {}).items():
            if not isinstance(prof, dict):
                out.append(f"\ncProfile {name}: {prof}")
                continue
            out.append(f"\ncProfile of {name} (cProfile inflates every call; read shares, not "
                       f"times): robotgate's own functions {prof['robotgate_us_per_page']:.0f} "
                       f"of {prof['total_us_per_page']:.0f} us/page self time\n")
            out += md(["robotgate function", "calls/page", "self us/page", "cum us/page"],
                       [[r["function"], f"{r['calls_per_page']:.2f}",
                         f"{r['self_us_per_page']:.1f}", f"{r['cum_us_per_page']:.1f}"]
                        for r in prof["top"][:10]])
    return "\n".join(out)


def _crawl_details(cg: dict[str, Any] | None) -> list[str]:
    """``--callgrind-crawl``'s table (Markdown)."""
    if not cg:
        return []
    if "contenders" not in cg:
        return [f"\nCallgrind crawls: {cg.get('error')}"]
    a, b = cg["hosts"]
    out = [f"\nCallgrind, whole cold crawls over new hosts: {a} and {b} hosts x {cg['pages']} "
           f"pages, {cg['concurrency']} tasks, each size's fewest instructions of "
           f"{cg['repeats']} runs; instructions a request = (I_{b} - I_{a}) / (requests_{b} - "
           f"requests_{a}), robots.txt requests counted:\n"]
    body = []
    for name, c in cg["contenders"].items():
        if "error" in c:
            body.append([name, c["error"], *[""] * 7])
            continue
        n = c["compiled_modules"]
        body.append([name, "-" if name == "aiohttp" else "compiled" if n else "pure",
                     *(fmt_int(i) for i in c["instructions"]),
                     " / ".join(fmt_int(r) for r in c["requests"]),
                     fmt_int(c["instructions_per_request"]),
                     f"{c['gc_allocations_per_request']:.1f}",
                     f"{c['ratio']:.1%}" if "ratio" in c else "-",
                     " ".join(f"{x:.1%}" for x in c.get("ratio_repeats", []))])
    out += md(["contender", "robotgate", f"instructions, {a} hosts", f"instructions, {b} hosts",
               "requests", "instructions/request", "GC-tracked allocations/request",
               "requests per instruction vs aiohttp", "the same by repeat"], body)
    extra = [f"{name}: {' / '.join(str(n) for n in size)} at {h} hosts"
             for name, c in cg["contenders"].items()
             for h, size in zip((a, b), c.get("connections_all", []), strict=False)
             if any(n > h for n in size)]
    if extra:
        out.append("\nRuns that opened more connections than hosts (reconnects cost "
                   "instructions): " + "; ".join(extra))
    return out


def host_pair(text: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two host counts A,B; got {text!r}") from None
    if not 0 < a < b:
        raise argparse.ArgumentTypeError(f"expected 0 < A < B; got {text!r}")
    return a, b


def _names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(","))
    unknown = [n for n in names if n not in OVERHEAD_CONTENDERS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown contender(s) {', '.join(unknown)}; "
                                         f"expected some of {', '.join(OVERHEAD_CONTENDERS)}")
    return names


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    d = Sizes()
    ap.add_argument("--hosts", type=int, default=d.hosts, help="loopback hosts")
    ap.add_argument("--pages", type=int, default=d.pages, help="pages per host")
    ap.add_argument("--concurrency", type=int, default=d.concurrency, help="tasks at once")
    ap.add_argument("--rounds", type=int, default=d.rounds, help="interleaved rounds")
    ap.add_argument("--profile", action="store_true",
                    help="one more run of gate.fetch and the middleware under cProfile")
    ap.add_argument("--callgrind", action="store_true",
                    help="exact instructions and allocations per page under valgrind "
                         "(slow: minutes)")
    ap.add_argument("--cache-sim", action="store_true",
                    help="with --callgrind: also simulate the caches and branch predictor "
                         "(about twice as slow)")
    ap.add_argument("--callgrind-crawl", action="store_true",
                    help="requests per instruction under valgrind: the marginal instructions "
                         "between cold crawls of --cg-hosts new hosts x --pages pages, against "
                         "plain aiohttp (slow: minutes a run)")
    ap.add_argument("--cg-hosts", type=host_pair, default=d.cg_hosts, metavar="A,B",
                    help="with --callgrind-crawl: the two crawl sizes in hosts (default "
                         "%(default)s)")
    ap.add_argument("--cg-repeats", type=int, default=d.cg_repeats,
                    help="with --callgrind-crawl: runs of each size; each size's fewest "
                         "instructions count")
    ap.add_argument("--before-src", type=Path,
                    help="another tree's src/ (e.g. a git worktree of an older commit): its "
                         "gate.fetch and middleware run interleaved with this one's")
    ap.add_argument("--only", type=_names, metavar="A,B",
                    help=f"run these contenders only (of {', '.join(OVERHEAD_CONTENDERS)})")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--json", type=Path, default=RESULTS / "overhead.json",
                    help="write the results here")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--spec", type=Path, help=argparse.SUPPRESS)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.child is not None:  # one run, in this process: one JSON line
        spec = json.loads(args.spec.read_text())
        print(json.dumps(asyncio.run(overhead_child(args.child, spec, args.profile))))
        return 0
    sizes = Sizes(hosts=args.hosts, pages=args.pages, concurrency=args.concurrency,
                  rounds=args.rounds, profile=args.profile, callgrind=args.callgrind,
                  cache_sim=args.cache_sim, callgrind_crawl=args.callgrind_crawl,
                  cg_hosts=args.cg_hosts, cg_repeats=args.cg_repeats, only=args.only,
                  before_src=args.before_src.resolve() if args.before_src else None)
    if args.quick:
        sizes = dataclasses.replace(sizes, hosts=100, pages=5, rounds=2, cg_hosts=(20, 60),
                                    cg_repeats=1)
    # Each contender keeps a connection to every host; the server holds a
    # listening socket per host plus the other end of each connection.
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    need = server_hosts(sizes) * 6 + 1000
    if hard != resource.RLIM_INFINITY and need > hard:
        print(f"{server_hosts(sizes)} hosts need about {need:,} open files; "
              f"the limit here is {hard:,}", file=sys.stderr)
        return 2
    report = asyncio.run(run(sizes, Progress(enabled=not args.no_progress)))
    return finish(report, table_rows(report), render_details(report), args.json, argv,
                  columns=("robotgate", "baseline"))


if __name__ == "__main__":
    sys.exit(main())
