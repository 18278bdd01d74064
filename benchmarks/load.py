"""Load benchmarks on loopback: the gate's promises and its cost, beside the alternatives.

    python benchmarks/load.py [--quick] [--only PHASE,...] [--skip-alternatives]
        [--hosts 200] [--pages 50] [--concurrency 10000] [--delay 0.2] [--timeout 5]
        [--overhead-rounds 5] [--before-src OLD/src] [--profile] [--callgrind [--cache-sim]]
        [--memory-origins 100000] [--json benchmarks/results/load.json]

The loopback server (``tests/support/server.py``'s :class:`BenchServer`) runs in a
child process (:class:`tests.support.server.ServerProcess`, plans on stdin), so it has one core and
the client the other; every request goes to 127.0.0.0/8.  A progress line
goes to stderr, the tables to stdout (the detail tables in Markdown), everything
as JSON to ``--json``.  Every phase is bounded in count and time; every child
process is stopped at the end.

crawl     (figures 1, 2, 3, 8 and 7) H hosts x P pages, all C tasks started
          at once, delay D, robots.txt timeout T.  One host per server
          scenario (allow, partial, crawl_delay, 404, 500, 503_retry, 429,
          slow (answers after T/2), redirect_chain, redirect_loop, huge,
          garbage, reset) plus ``slow_timeout`` (answers after 2T: unreachable),
          the rest 50 % partial, 30 % allow, 20 % crawl_delay (1.5 D).
          robotgate, then the hand-rolled baseline, Scrapy and crawlee on the
          same server (reset in between), each checked on the server's
          records: robots.txt requests per origin, pages that robots.txt (or
          an unreachable robots.txt, RFC 9309 2.3.1.4) forbids, intervals
          between page requests per host (the smallest too) against
          max(D, Crawl-delay), a definite answer (page or Disallowed) per
          task, the slowest verdict on an unreachable robots.txt, and the end
          within a bound.  Scrapy and crawlee stop themselves after
          max(20 s, robotgate's time) + 5 s and report what they answered.
burst     (figure 7) one host, 1,000 tasks at once, robots.txt after 2 s, 20 %
          of the pages disallowed, delay 0, 8 requests in flight.
overhead  (figure 4, issue 15) 1,000 hosts x 5 pages, 200 tasks, delay 0,
          caps off, the same TCPConnector settings for plain aiohttp,
          gate.fetch, a session with gate.middleware and the hand-rolled
          baseline.  Each run is a fresh client process, cold (robots.txt
          fetched in the timed run, as work the gate must do); the rate is
          the HTTP requests the server counted (robots.txt included) over the
          run's time.  Rounds rotate the order; a ratio is the median over
          rounds of contender/aiohttp in the same round.  Each run also gives
          its CPU time per page (getrusage) and its garbage collections
          (gc.callbacks: count and time).  ``--before-src`` adds the
          gate.fetch and middleware of another tree (e.g. a worktree of an
          older commit), interleaved; ``--profile`` one cProfile run each;
          ``--callgrind`` exact instructions and GC-tracked allocations
          (calls of ``_PyObject_GC_Link``) per cached page and per new host
          under valgrind; with ``--cache-sim`` also callgrind's simulated
          instruction-cache misses and mispredicted branches (what costs
          time beside instructions; this VM has no hardware counters).
          ``floor`` is plain aiohttp plus one unparsed
          robots.txt request per host: what any client that asks for
          robots.txt must at least do.  ``floor+work`` is the floor plus a
          fixed loop of pure CPU a page (``WORK_TURNS``), timed alone in the
          same process after its run: over the floor in the same round, it
          gives the run's charge for a page's own work (1.0: what it costs
          alone).
decisions (figure 5, issue 15) 1,000 corpus robots.txt files installed
          through a MemoryStore (no network), 50 URLs each: the parser's own
          ``allowed`` (and ``decide``) on the gate's parsed rules, ``await
          gate.allowed`` and ``gate.check``, per CPU second, rounds rotated,
          a child process per tree; verdicts compared URL by URL.
limits    (issue 14) 10 hosts on two ports each (two origins, one server),
          delay 0.2 s: the smallest interval per host at the server; and a
          server letting one request per 0.2 s through (429 without
          Retry-After beyond), 50 pages at once: the share of 429s.
          robotgate (and pace_by="origin"), the baseline, Scrapy, crawlee.
hol       (issue 13) benchmarks/crawl_bench.py: a naive worker pool over
          gate.fetch vs gate.crawl, 4 workers, 20 hosts x 10 pages, 0.5 s.
clients   (issue 16) benchmarks/clients_bench.py: Scrapy with robotgate's
          middleware beside Scrapy's own, httpx through the gate beside plain.
memory    (figure 6) 100,000 origins installed through the gate's own path
          (entry_for_response, store.save_robots, RobotsCache._install) with
          corpus bodies cycled, each origin its own copy of the body; RSS
          before and after in a child process; the parsed rules measured
          apart with tracemalloc in another child and subtracted.

Caveats: timings on a shared 2-core machine are noisy, so throughput is
only compared within a run (ratios, medians over interleaved runs); the
server's arrival times stand for what a site would see.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import itertools
import json
import math
import os
import random
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from benchmarks.baselines import HandRolled, RobotsDenied, alternative_available
from robotgate import Disallowed, FetchPolicy, RobotGate
from robotgate.compiled import compiled_modules
from tests.support.server import (
    SCENARIOS,
    HostPlan,
    ServerProcess,
    is_disallowed,
    page_paths,
    stop_process,
)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "robots"
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "load.json"
USER_AGENT = "RobotGateBench/1.0 (+https://example.invalid/bench)"
FROM = "bench@example.invalid"
#: Scenarios whose robots.txt is unreachable: the whole site is disallowed (RFC 9309 2.3.1.4).
UNREACHABLE = frozenset({"500", "503_retry", "429", "reset", "slow_timeout"})
#: Extra kind beside the server's scenarios: a robots.txt slower than the robots timeout.
SLOW_TIMEOUT = "slow_timeout"
IMPLS = ("robotgate", "baseline", "scrapy", "crawlee")
PHASES = ("crawl", "burst", "overhead", "decisions", "limits", "hol", "clients", "memory")
HAVE_PROTEGO = alternative_available("protego")[0]

Fetch = Callable[[str], Awaitable[str]]


# -- hosts and what a polite crawler must do on each --------------------------


@dataclass(frozen=True)
class Host:
    """One loopback host of a run: its kind (a scenario or ``slow_timeout``) and plan."""

    kind: str
    plan: HostPlan


def crawl_hosts(
    n_hosts: int, pages: int, delay: float, timeout: float, seed: int = 0
) -> list[Host]:
    """One host per fault scenario (and one whose robots.txt outlasts ``timeout``),
    the rest half ``partial``, 30 % ``allow``, 20 % ``crawl_delay``, shuffled."""
    template = HostPlan(
        pages=pages,
        crawl_delay=round(delay * 1.5, 3) if delay > 0 else 0.1,
        slow_seconds=timeout / 2,
    )
    hosts = [Host(s, dataclasses.replace(template, scenario=s)) for s in SCENARIOS]
    hosts.append(Host(SLOW_TIMEOUT, dataclasses.replace(template, scenario="slow",
                                                        slow_seconds=timeout * 2)))
    if n_hosts < len(hosts):
        raise ValueError(f"at least {len(hosts)} hosts are needed (one per fault scenario)")
    rest = n_hosts - len(hosts)
    weights = {"partial": 0.5, "allow": 0.3, "crawl_delay": 0.2}
    counts = {k: int(rest * w) for k, w in weights.items()}
    counts["partial"] += rest - sum(counts.values())
    hosts += [Host(k, dataclasses.replace(template, scenario=k))
              for k, c in counts.items() for _ in range(c)]
    random.Random(seed).shuffle(hosts)
    return hosts


def must_skip(kind: str, path: str) -> bool:
    """Whether a polite crawler must not fetch ``path`` on a host of ``kind``."""
    if kind in UNREACHABLE:
        return True
    return is_disallowed(kind, path)


def interval_of(host: Host, delay: float) -> float:
    """The least interval between two page requests the host must see."""
    if host.kind == "crawl_delay":
        return max(delay, host.plan.crawl_delay)
    return delay


def retry_window(host: Host, policy: FetchPolicy) -> float:
    """Least seconds between two robots.txt requests of an unreachable host."""
    if host.kind == "503_retry":
        return float(host.plan.retry_after if host.plan.retry_after is not None else 1)
    return policy.retry_base


def crawl_urls(base_urls: Sequence[str], hosts: Sequence[Host]) -> list[tuple[str, Host, str]]:
    """(url, host, path) for every page of every host, page by page across hosts."""
    per_host = [page_paths(h.plan.pages, h.plan.private_fraction) for h in hosts]
    out = []
    for i in range(max((len(p) for p in per_host), default=0)):
        for base, host, paths in zip(base_urls, hosts, per_host, strict=True):
            if i < len(paths):
                out.append((base + paths[i], host, paths[i]))
    return out


# -- driving tasks --------------------------------------------------------------


@dataclass
class Progress:
    """The progress line on stderr (``\\r``-updated while a ticker runs)."""

    enabled: bool = True
    phase: str = ""
    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.monotonic)
    phase_started: float = field(default_factory=time.monotonic)

    def start(self, phase: str, total: int = 0) -> None:
        self.phase, self.done, self.total = phase, 0, total
        self.phase_started = time.monotonic()
        self.show()

    def show(self) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        count = f" {self.done:,}/{self.total:,}" if self.total else ""
        line = (f"[{now - self.started:6.1f}s] {self.phase}{count} "
                f"({now - self.phase_started:.1f}s)")
        sys.stderr.write("\r" + line[:110].ljust(110))
        sys.stderr.flush()

    def clear(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 110 + "\r")
            sys.stderr.flush()

    async def tick(self) -> None:
        while True:
            self.show()
            await asyncio.sleep(0.25)


@dataclass
class Drive:
    """What a set of tasks answered: one outcome per URL and how long each took."""

    outcomes: dict[str, str]
    durations: dict[str, float]
    elapsed: float
    unanswered: int
    ended_by_itself: bool
    max_loop_lag: float | None = None  # longest stall of this event loop (in-process runs)


async def drive(
    urls: Sequence[str],
    fetch: Fetch,
    concurrency: int,
    bound: float,
    progress: Progress | None = None,
) -> Drive:
    """Run ``fetch`` over ``urls`` with ``concurrency`` tasks; stop them at ``bound`` s.

    An outcome is what ``fetch`` returned, or ``"error: Type"`` if it raised.
    """
    loop = asyncio.get_running_loop()
    outcomes: dict[str, str] = {}
    durations: dict[str, float] = {}
    todo: Iterator[str] = iter(urls)

    async def worker() -> None:
        for url in todo:
            t = loop.time()
            try:
                outcome = await fetch(url)
            except Exception as exc:  # every other answer is recorded as an error
                outcome = f"error: {type(exc).__name__}"
            outcomes[url] = outcome
            durations[url] = loop.time() - t
            if progress is not None:
                progress.done += 1

    lag = [0.0]

    async def watch() -> None:
        # How late a 10 ms sleep wakes up: the loop's longest stall.
        while True:
            t = loop.time()
            await asyncio.sleep(0.01)
            lag[0] = max(lag[0], loop.time() - t - 0.01)

    watcher = loop.create_task(watch())
    t0 = loop.time()
    tasks = [loop.create_task(worker()) for _ in range(max(1, min(concurrency, len(urls))))]
    _, pending = await asyncio.wait(tasks, timeout=bound)
    elapsed = loop.time() - t0
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    watcher.cancel()
    await asyncio.gather(watcher, return_exceptions=True)
    return Drive(outcomes, durations, elapsed, len(urls) - len(outcomes), not pending, lag[0])


def gate_fetcher(gate: RobotGate) -> Fetch:
    async def fetch(url: str) -> str:
        try:
            async with gate.fetch(url) as resp:
                await resp.read()
                return "fetched" if resp.status == 200 else f"status {resp.status}"
        except Disallowed:
            return "disallowed"

    return fetch


def baseline_fetcher(crawler: HandRolled) -> Fetch:
    async def fetch(url: str) -> str:
        try:
            status = await crawler.fetch(url)
        except RobotsDenied:
            return "disallowed"
        return "fetched" if status == 200 else f"status {status}"

    return fetch


# -- checking the server's records ------------------------------------------------


@dataclass
class CrawlChecks:
    """Figures 1, 2, 3 and 8 of one implementation's crawl, from the server's records."""

    origins: int
    robots_min: int
    robots_max: int
    robots_wrong: list[str]
    refetches_after_backoff: int
    disallowed_fetched: int
    allowed_skipped: int
    pacing_violations: int
    pacing_hosts_checked: int
    worst_min_ratio: float | None
    worst_mean_excess: float | None
    median_mean_excess: float | None
    tasks: int
    definite: int
    errors: dict[str, int]
    unanswered: int
    slowest_fault_verdict: float | None
    elapsed: float
    ended_by_itself: bool
    max_loop_lag: float | None
    pages_fetched: int
    pages_per_s: float
    per_kind: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The smallest gap between two page requests to one host (server address,
    #: whatever the port or name), over the paced hosts.
    smallest_gap: float | None = None

    def problems(self) -> list[str]:
        """Every broken correctness promise, in words (empty when all hold)."""
        out = []
        if self.robots_wrong:
            out.append(f"robots.txt request count wrong on {self.robots_wrong[:5]}")
        if self.disallowed_fetched:
            out.append(f"{self.disallowed_fetched} disallowed pages reached the server")
        if self.allowed_skipped:
            out.append(f"{self.allowed_skipped} allowed pages were not fetched")
        if self.pacing_violations:
            out.append(f"{self.pacing_violations} page intervals below the delay")
        if self.definite != self.tasks:
            out.append(f"{self.tasks - self.definite} tasks without a definite answer "
                       f"({self.errors}, {self.unanswered} unanswered)")
        if not self.ended_by_itself:
            out.append("the run did not end by itself within its bound")
        return out


def check_crawl(
    stats: dict[str, Any],
    hosts: Sequence[Host],
    addresses: Sequence[str],
    urls: Sequence[tuple[str, Host, str]],
    drive_result: Drive,
    *,
    delay: float,
    policy: FetchPolicy,
) -> CrawlChecks:
    """Check a crawl against the server's per-host records (``/__stats`` JSON, with times)."""
    per_host = stats["hosts"]
    robots_counts: list[int] = []
    robots_wrong: list[str] = []
    refetches = 0
    disallowed_fetched = 0
    violations = 0
    min_ratios: list[float] = []
    mean_excess: list[float] = []
    smallest: list[float] = []
    per_kind: dict[str, dict[str, Any]] = {}

    def kind_row(kind: str) -> dict[str, Any]:
        return per_kind.setdefault(kind, {
            "hosts": 0, "robots_requests": 0, "page_requests": 0, "disallowed_fetched": 0,
            "allowed_skipped": 0, "pacing_violations": 0, "outcomes": {}, "slowest_answer": 0.0,
        })

    for addr, host in zip(addresses, hosts, strict=True):
        rec = per_host[addr]
        n = rec["robots_requests"]
        robots_counts.append(n)
        row = kind_row(host.kind)
        row["hosts"] += 1
        row["robots_requests"] += n
        row["page_requests"] += rec["page_requests"]
        if host.kind in UNREACHABLE and n > 1:
            # A retry after the back-off is the policy, not a second fetch in a burst.
            times = rec.get("robots_times") or []
            window = retry_window(host, policy)
            if all(b - a >= window for a, b in itertools.pairwise(times)):
                refetches += n - 1
            else:
                robots_wrong.append(f"{addr} ({host.kind}): {n}")
        elif n != 1:
            robots_wrong.append(f"{addr} ({host.kind}): {n}")
        # On an unreachable robots.txt (a timeout too) every page counts.
        bad = rec["page_requests"] if host.kind in UNREACHABLE else rec["disallowed_page_requests"]
        disallowed_fetched += bad
        row["disallowed_fetched"] += bad
        interval = interval_of(host, delay)
        times = rec.get("page_times") or []
        gaps = [b - a for a, b in itertools.pairwise(times)]
        if interval > 0 and gaps:
            below = sum(g < interval for g in gaps)
            violations += below
            row["pacing_violations"] += below
            min_ratios.append(min(gaps) / interval)
            smallest.append(min(gaps))
            mean_excess.append(statistics.fmean(gaps) / interval - 1.0)
    outcomes = drive_result.outcomes
    allowed_skipped = 0
    definite = 0
    errors: dict[str, int] = {}
    fault_durations: list[float] = []
    fetched_tasks = 0
    for url, host, path in urls:
        outcome = outcomes.get(url)
        row = kind_row(host.kind)
        key = outcome or "unanswered"
        row["outcomes"][key] = row["outcomes"].get(key, 0) + 1
        if outcome in ("fetched", "disallowed"):
            definite += 1
        elif outcome is not None:
            errors[outcome] = errors.get(outcome, 0) + 1
        if outcome == "fetched":
            fetched_tasks += 1
        elif not must_skip(host.kind, path):
            allowed_skipped += 1
            row["allowed_skipped"] += 1
        took = drive_result.durations.get(url)
        if took is not None:
            row["slowest_answer"] = max(row["slowest_answer"], took)
            if host.kind in UNREACHABLE:
                fault_durations.append(took)
    pages = stats["totals"]["page_requests"]
    return CrawlChecks(
        origins=len(hosts),
        robots_min=min(robots_counts, default=0),
        robots_max=max(robots_counts, default=0),
        robots_wrong=robots_wrong,
        refetches_after_backoff=refetches,
        disallowed_fetched=disallowed_fetched,
        allowed_skipped=allowed_skipped,
        pacing_violations=violations,
        pacing_hosts_checked=len(min_ratios),
        worst_min_ratio=min(min_ratios) if min_ratios else None,
        worst_mean_excess=max(mean_excess) if mean_excess else None,
        median_mean_excess=statistics.median(mean_excess) if mean_excess else None,
        tasks=len(urls),
        definite=definite,
        errors=errors,
        unanswered=drive_result.unanswered,
        slowest_fault_verdict=max(fault_durations) if fault_durations else None,
        elapsed=drive_result.elapsed,
        ended_by_itself=drive_result.ended_by_itself,
        max_loop_lag=drive_result.max_loop_lag,
        pages_fetched=pages,
        pages_per_s=fetched_tasks / drive_result.elapsed if drive_result.elapsed > 0 else 0.0,
        per_kind=per_kind,
        smallest_gap=min(smallest) if smallest else None,
    )


# -- the server: a child process (or in-process for the tests) ------------------


# -- figure 1-3 and 8: the crawl, for robotgate, the baseline and the alternatives --


@dataclass
class CrawlConfig:
    hosts: int
    pages: int
    concurrency: int
    delay: float
    timeout: float
    per_origin: int = 1

    def policy(self) -> FetchPolicy:
        return FetchPolicy(timeout=self.timeout)

    def bound(self, hosts: Sequence[Host]) -> float:
        """How long the crawl may take before it counts as hung."""
        # At least 5 ms a page even unpaced: one host's pages go out a few at a time.
        longest = max(h.plan.pages * max(interval_of(h, self.delay), 0.005 / self.per_origin)
                      for h in hosts)
        slowest_robots = max(h.plan.slow_seconds for h in hosts)
        return min(slowest_robots, self.timeout) + longest * 1.6 + 10.0


async def crawl_robotgate(
    base_urls: Sequence[str], hosts: Sequence[Host], cfg: CrawlConfig,
    progress: Progress | None = None,
) -> tuple[Drive, list[tuple[str, Host, str]], dict[str, int]]:
    urls = crawl_urls(base_urls, hosts)
    async with RobotGate(USER_AGENT, from_=FROM, delay=cfg.delay, max_per_origin=cfg.per_origin,
                         policy=cfg.policy()) as gate:
        result = await drive([u for u, _, _ in urls], gate_fetcher(gate), cfg.concurrency,
                             cfg.bound(hosts), progress)
        return result, urls, dict(gate.stats)


async def crawl_baseline(
    base_urls: Sequence[str], hosts: Sequence[Host], cfg: CrawlConfig,
    progress: Progress | None = None,
) -> tuple[Drive, list[tuple[str, Host, str]], dict[str, int]]:
    urls = crawl_urls(base_urls, hosts)
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        crawler = HandRolled(session, USER_AGENT, delay=cfg.delay, per_origin=cfg.per_origin,
                             timeout=cfg.timeout)
        result = await drive([u for u, _, _ in urls], baseline_fetcher(crawler), cfg.concurrency,
                             cfg.bound(hosts), progress)
        return result, urls, {"robots_requests": crawler.robots_requests}


async def crawl_alternative(
    name: str, base_urls: Sequence[str], hosts: Sequence[Host], cfg: CrawlConfig,
    workdir: Path, deadline: float | None = None,
) -> tuple[Drive | None, list[tuple[str, Host, str]], str]:
    """Run Scrapy or crawlee in a child process on the same crawl; (result, urls, note).

    The child stops itself after ``deadline`` seconds (default: the crawl's
    bound) and reports what it answered by then.
    """
    urls = crawl_urls(base_urls, hosts)
    spec: dict[str, Any] = {
        "urls": [u for u, _, _ in urls],
        "user_agent": USER_AGENT,
        "delay": cfg.delay,
        "per_origin": cfg.per_origin,
        "concurrency": cfg.concurrency,
        "timeout": cfg.timeout,
        "deadline": deadline if deadline is not None else cfg.bound(hosts),
    }
    result, note = await run_alternative(name, spec, workdir)
    return result, urls, note


async def run_alternative(name: str, spec: dict[str, Any], workdir: Path
                          ) -> tuple[Drive | None, str]:
    """``baselines.py NAME`` on ``spec`` (see its docstring) in a child; (result, note)."""
    ok, version = alternative_available(name)
    if not ok:
        return None, version
    limit = float(spec["deadline"])
    n = len(spec["urls"])
    spec_path = workdir / f"{name}-spec.json"
    out_path = workdir / f"{name}-out.json"
    log_path = workdir / f"{name}.log"
    spec_path.write_text(json.dumps(spec))
    out_path.unlink(missing_ok=True)
    bound = limit + 20.0  # the child should have stopped itself long before
    env = dict(os.environ, CRAWLEE_STORAGE_DIR=str(workdir / "crawlee-storage"),
               PYTHONWARNINGS="ignore")
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "benchmarks" / "baselines.py"), name, str(spec_path),
            str(out_path), stdout=log, stderr=log, env=env, cwd=str(workdir),
        )
        try:
            await asyncio.wait_for(proc.wait(), bound)
            ended = True
        except asyncio.TimeoutError:
            ended = False
            await stop_process(proc)
    wall = time.monotonic() - t0
    if not out_path.exists():
        tail = log_path.read_text(errors="replace")[-400:]
        note = f"{version}: no result (exit {proc.returncode}, {wall:.0f} s)"
        if tail:
            note += ": " + tail
        outcomes: dict[str, str] = {}
        return Drive(outcomes, {}, wall, n, ended), note
    out = json.loads(out_path.read_text())
    if "error" in out:
        return None, out["error"]
    outcomes = out.get("outcomes", {})
    times = out.get("times", {})
    elapsed = times["last"] - times["first"] if "last" in times and "first" in times else wall
    finished = ended and bool(out.get("finished"))
    result = Drive(outcomes, {}, max(elapsed, 1e-9), n - len(outcomes), finished)
    note = f"{name} {out.get('version', version)}"
    if not finished:
        note += f" (stopped at its deadline, {limit:.0f} s)"
    return result, note


# -- figure 4: overhead, each run a fresh client process ------------------------------

#: The overhead contenders; a name with BEFORE runs on the ``--before-src`` tree.
OVERHEAD_CONTENDERS = ("aiohttp", "floor", "floor+work", "gate.fetch", "middleware", "baseline")
BEFORE = " (before)"
#: ``floor+work``'s fixed CPU work a page: this many turns of a small Python loop
#: (about 10 us on the machine of the README's figures), timed alone after the run.
WORK_TURNS = 400
#: C functions counted in callgrind runs: GC-tracked allocations, small-object
#: allocations, and the collector itself (its inclusive instructions).
CG_FUNCTIONS = ("_PyObject_GC_Link", "_PyObject_Malloc", "gc_collect_main")
#: ``--cache-sim``'s figures and callgrind's events they add up.
SIM_EVENTS = {"i1_misses": ("I1mr",), "d1_misses": ("D1mr", "D1mw"),
              "mispredicts": ("Bcm", "Bim")}


def _connector() -> aiohttp.TCPConnector:
    # The same settings for every contender; no total cap (the gate's own default).
    return aiohttp.TCPConnector(limit=0, limit_per_host=0)


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
        s = aiohttp.ClientSession(connector=_connector(), **kwargs)
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
        gate = RobotGate(USER_AGENT, from_=FROM, delay=0, max_per_origin=big, session=session())
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
    if gate is not None:
        await gate.close()
    for s in sessions:
        await s.close()
    out: dict[str, Any] = {
        "name": name, "robotgate": str(Path(robotgate.__file__).parent), "pages": len(urls),
        "ok": counts["ok"], "errors": counts["errors"], "elapsed": elapsed,
        "cpu": _cpu(r1) - _cpu(r0), "gc_collections": watch.collections,
        "gc_collected": watch.collected, "gc_seconds": watch.seconds,
        "robots_requests": robots, "tracked_kept": kept,
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


def _child_env(src: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if src is not None:
        # The tree under test first; benchmarks/ and tests/ still come from here.
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(src), env.get("PYTHONPATH", "")) if p)
    return env


async def _child_json(args: Sequence[str], timeout: float, src: Path | None = None,
                      wrap: Sequence[str] = ()) -> dict[str, Any]:
    """Run ``load.py ARGS`` in a child (under ``wrap``, e.g. valgrind); its last stdout line."""
    proc = await asyncio.create_subprocess_exec(
        *wrap, sys.executable, str(Path(__file__).resolve()), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=_child_env(src))
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        await stop_process(proc)
        return {"error": f"{args[0]} timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        return {"error": f"{args[0]} exited {proc.returncode}: {' | '.join(tail)}"}
    data: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return data


def _contenders(names: Sequence[str], before: Path | None) -> list[tuple[str, Path | None]]:
    out: list[tuple[str, Path | None]] = [(n, None) for n in names]
    if before is not None:
        out += [(n + BEFORE, before) for n in names if n in ("gate.fetch", "middleware")]
    return out


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


async def overhead(
    server: ServerProcess, sizes: Sizes, workdir: Path, progress: Progress,
) -> dict[str, Any]:
    """Figure 4: requests/s counted by the server, each contender cold in a fresh process.

    Each round runs every contender once in rotated order; a ratio is the
    median over rounds of the contender's rate over plain aiohttp's in the
    same round, so load from other processes hits both sides.
    """
    base_urls = server.base_urls[: sizes.overhead_hosts]
    spec_path = workdir / "overhead-spec.json"
    spec = {"base_urls": base_urls, "pages": sizes.overhead_pages,
            "concurrency": sizes.overhead_concurrency}
    spec_path.write_text(json.dumps(spec))
    names = [n for n in OVERHEAD_CONTENDERS if n != "baseline" or HAVE_PROTEGO]
    contenders = _contenders(names, sizes.before_src)
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n, _ in contenders}
    errors: list[str] = []
    rounds = sizes.overhead_rounds
    for r in range(rounds):
        k = r % len(contenders)
        order = contenders[k:] + contenders[:k]
        if r % 2:
            order.reverse()  # neither always first nor always after the same one
        for name, src in order:
            progress.start(f"overhead round {r + 1}/{rounds}: {name}")
            await server.reset()
            child = await _child_json(
                ["--overhead-child", name.removesuffix(BEFORE), "--spec", str(spec_path)],
                900, src)
            if "error" in child:
                errors.append(f"{name}: {child['error']}")
                continue
            totals = await server.totals()
            child["server_requests"] = (totals["robots_requests"] + totals["page_requests"]
                                        + totals["redirect_hops"] + totals["other_requests"])
            child["server_robots"] = totals["robots_requests"]
            child["round"] = r
            runs[name].append(child)
    out = _overhead_summary(runs, spec, rounds)
    out["errors"] = errors
    out["runs"] = runs  # every run's figures, to recompute or compare runs later
    if sizes.overhead_profile:
        out["profile"] = {}
        for name, src in contenders:
            if name.removesuffix(BEFORE) not in ("gate.fetch", "middleware"):
                continue
            progress.start(f"overhead: cProfile of {name}")
            await server.reset()
            child = await _child_json(["--overhead-child", name.removesuffix(BEFORE), "--spec",
                                       str(spec_path), "--profile"], 900, src)
            out["profile"][name] = child.get("profile", child.get("error"))
    if sizes.callgrind:
        out["callgrind"] = await callgrind_overhead(server, contenders, workdir, progress,
                                                    cache_sim=sizes.cache_sim)
    return out


def _overhead_summary(runs: dict[str, list[dict[str, Any]]], spec: dict[str, Any],
                      rounds: int) -> dict[str, Any]:
    ref = {c["round"]: c for c in runs.get("aiohttp", [])}

    def rate(c: dict[str, Any]) -> float:
        return float(c["server_requests"]) / float(c["elapsed"])

    def cpu_per_request(c: dict[str, Any]) -> float:
        return float(c["cpu"]) / float(c["server_requests"])

    def pooled(cs: list[dict[str, Any]]) -> float:
        # Every round's requests over every round's time: a slow round weighs by its length.
        return sum(c["server_requests"] for c in cs) / sum(c["elapsed"] for c in cs)

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
            "requests_per_s": _median([rate(c) for c in cs]),
            "requests_per_s_all": [round(rate(c)) for c in cs],
            "pages_per_s": _median([c["ok"] / c["elapsed"] for c in cs]),
            "ratio": _median(ratios),
            "ratio_all": [round(x, 3) for x in ratios],
            "ratio_range": [min(ratios), max(ratios)] if ratios else None,
            "pooled_ratio": pooled([c for c in cs if c["round"] in ref]) / pooled(mates)
            if mates else math.nan,
            "page_ratio": _median(page_ratios),
            "cpu_ratio": _median(cpu_ratios),
            "cpu_ratio_range": [min(cpu_ratios), max(cpu_ratios)] if cpu_ratios else None,
            "client_busy": _median([c["cpu"] / c["elapsed"] for c in cs]),
            "server_requests": cs[0]["server_requests"],
            "robots_requests": cs[0]["server_robots"],
            "not_fetched": max(pages - c["ok"] for c in cs),
            "errors": max(c["errors"] for c in cs),
            "cpu_us_per_page": _median([c["cpu"] / pages * 1e6 for c in cs]),
            "gc_us_per_page": _median([c["gc_seconds"] / pages * 1e6 for c in cs]),
            "gen0_per_1000_pages": _median([c["gc_collections"][0] / pages * 1000 for c in cs]),
            "gen2_collections": _median([c["gc_collections"][2] for c in cs]),
            "gc_collected_per_page": _median([c["gc_collected"] / pages for c in cs]),
            "tracked_per_host": _median([c.get("tracked_kept", math.nan)
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
    return {"charge": _median(charges), "charge_range": [min(charges), max(charges)],
            "charge_all": [round(x, 2) for x in charges], "added_us_per_page": _median(extra),
            "alone_us": _median(alone), "turns": WORK_TURNS}


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


def parse_callgrind(path: Path) -> dict[str, Any]:
    """Total instructions, every event's total, and calls and inclusive instructions
    of :data:`CG_FUNCTIONS`."""
    names: dict[str, str] = {}
    calls = dict.fromkeys(CG_FUNCTIONS, 0)
    inclusive = dict.fromkeys(CG_FUNCTIONS, 0)
    events = ["Ir"]
    totals: dict[str, int] = {}
    target: str | None = None
    pending: str | None = None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split(":", 1)[1].split()
            elif line.startswith(("cfn=", "fn=")):
                ref = line.split("=", 1)[1].strip()
                if ref.startswith("("):
                    ident, _, name = ref.partition(")")
                    name = name.strip()
                    if name:
                        names[ident] = name
                    ref = names.get(ident, ident)
                if line.startswith("cfn="):
                    target = ref
            elif line.startswith("calls="):
                pending = target
                if target in calls:
                    calls[target] += int(line.split("=", 1)[1].split()[0])
            elif pending is not None:
                if pending in inclusive:
                    # "<line> <Ir> <other events...>": trailing zeros may be left out.
                    costs = line.split()
                    inclusive[pending] += int(costs[1]) if len(costs) > 1 else 0
                pending = None
            elif line.startswith(("summary:", "totals:")):
                values = [int(v) for v in line.split(":", 1)[1].split()]
                totals = dict(zip(events, values + [0] * (len(events) - len(values)), strict=True))
    return {"instructions": totals.get("Ir", 0), "events": totals, "calls": calls,
            "inclusive": inclusive}


async def callgrind_overhead(
    server: ServerProcess, contenders: Sequence[tuple[str, Path | None]], workdir: Path,
    progress: Progress, hosts: tuple[int, int] = (200, 600), pages: tuple[int, int] = (1, 6),
    cache_sim: bool = False,
) -> dict[str, Any]:
    """Instructions and allocations per cached page and per new host, exactly, under callgrind.

    With ``cache_sim``, also callgrind's simulated first-level instruction and
    data cache misses and mispredicted branches (conditional and indirect).

    Each contender runs three times: ``hosts[0]`` hosts with ``pages[0]`` and
    ``pages[1]`` pages each (the same robots.txt fetches and connections, so
    the difference over the extra pages is the cost of a page whose robots.txt
    is cached, on a kept-alive connection), and ``hosts[1]`` hosts with
    ``pages[0]`` (the difference over the extra hosts is the cost of a new
    host: its connection, robots.txt and first page).
    """
    if shutil.which("valgrind") is None:
        return {"error": "valgrind not installed"}
    out: dict[str, Any] = {"hosts": hosts[0], "new_hosts": list(hosts), "pages": list(pages),
                           "cache_sim": cache_sim, "contenders": {}}
    sim = ["--cache-sim=yes", "--branch-sim=yes"] if cache_sim else []
    for name, src in contenders:
        got: list[dict[str, Any]] = []
        for h, n in ((hosts[0], pages[0]), (hosts[0], pages[1]), (hosts[1], pages[0])):
            spec_path = workdir / f"cg-spec-{h}-{n}.json"
            spec_path.write_text(json.dumps({"base_urls": server.base_urls[:h], "pages": n,
                                             "concurrency": min(200, h)}))
            cg_file = workdir / f"cg-{len(got)}.out"
            progress.start(f"overhead: callgrind {name}, {h} hosts, {n} page(s) per host")
            await server.reset()
            child = await _child_json(
                ["--overhead-child", name.removesuffix(BEFORE), "--spec", str(spec_path)], 1800,
                src, wrap=["valgrind", "--tool=callgrind", *sim,
                           f"--callgrind-out-file={cg_file}"])
            if "error" in child:
                got = []
                out["contenders"][name] = {"error": child["error"]}
                break
            got.append(parse_callgrind(cg_file))
            cg_file.unlink()
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
                                        - x["inclusive"]["gc_collect_main"]) / n}

        page = per(a, b, hosts[0] * (pages[1] - pages[0]))
        host = per(a, c, hosts[1] - hosts[0])
        out["contenders"][name] = {**{f"{k}_per_page": v for k, v in page.items()},
                                   **{f"{k}_per_new_host": v for k, v in host.items()}}
    return out


# -- figure 5: cached decisions -----------------------------------------------------

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
    params = inspect.signature(RobotGate).parameters
    if "on_long_delay" in params:
        options["on_long_delay"] = "honour"  # a verdict of the gate's, not the parser's
    if "respect_crawl_delay" in params:
        options["respect_crawl_delay"] = False  # the core run must not wait: verdicts only
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

    # The politeness core's whole per-page path, without HTTP: check, take the
    # turn, hear the answer, let go (allowed URLs: a refusal raises).
    admission = getattr(gate, "admission", None)
    core_urls = [u for f, u in pairs if f(u, agent)]

    async def run_core() -> None:
        assert admission is not None
        admit, answered, done = admission.admit, admission.answered, admission.done
        for u in core_urls:
            g = admit(u)
            if hasattr(g, "__await__"):  # the server's group is new: made once
                g = await g
            answered(g, 200, None)
            done(g)

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
    names += ["core"] if hasattr(admission, "admit") else []
    result: dict[str, Any] = {
        "robotgate": str(Path(robotgate.__file__).parent), "origins": origins,
        "urls": len(kept), "dropped": dropped, "mismatches": mismatches,
        "first_mismatch": first_mismatch, "allowed_share": allowed_share,
        "install_cpu_s": install_s, "has_check": check is not None,
        "has_core": hasattr(admission, "admit"), "core_urls": len(core_urls),
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
    result["rates"] = {k: _median(v) for k, v in rates.items()}
    result["ratios"] = {
        k: _median([a / b for a, b in zip(rates[k], rates["parser"], strict=True)])
        for k in names}
    result["robots_requests"] = gate.stats["robots_requests"]
    await gate.close()
    return result


async def decisions(sizes: Sizes, progress: Progress) -> dict[str, Any]:
    """Figure 5: the decisions child on this tree (and the before tree), interleaved."""
    if not sizes.corpus.is_dir():
        return {"error": f"corpus not found: {sizes.corpus}"}
    args = ["--decisions-child", "--corpus", str(sizes.corpus), "--origins",
            str(sizes.decision_origins), "--per-origin", str(sizes.decision_per_origin),
            "--rounds", str(sizes.decision_rounds)]
    trees: list[tuple[str, Path | None]] = [("after", None)]
    if sizes.before_src is not None:
        trees.append(("before", sizes.before_src))
    runs: dict[str, list[dict[str, Any]]] = {t: [] for t, _ in trees}
    for rep in range(sizes.decision_repeats):
        for label, src in (trees if rep % 2 == 0 else trees[::-1]):
            progress.start(f"decisions: {label}, run {rep + 1}/{sizes.decision_repeats}")
            child = await _child_json(args, 900, src)
            if "error" in child:
                return {"error": f"{label}: {child['error']}"}
            runs[label].append(child)
    out: dict[str, Any] = {"origins": sizes.decision_origins,
                           "per_origin": sizes.decision_per_origin,
                           "rounds": sizes.decision_rounds, "repeats": sizes.decision_repeats}
    for label, cs in runs.items():
        names = list(cs[0]["rates"])
        out[label] = {
            "urls": cs[0]["urls"], "dropped": cs[0]["dropped"],
            "mismatches": max(c["mismatches"] for c in cs),
            "first_mismatch": next((c["first_mismatch"] for c in cs if c["first_mismatch"]),
                                   None),
            "allowed_share": cs[0]["allowed_share"],
            "robots_requests": max(c["robots_requests"] for c in cs),
            "rates": {k: _median([c["rates"][k] for c in cs]) for k in names},
            "ratios": {k: _median([c["ratios"][k] for c in cs]) for k in names},
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
                child = await _child_json(
                    ["--decisions-child", "--corpus", str(sizes.corpus), "--origins",
                     str(origins), "--per-origin", str(sizes.decision_per_origin),
                     "--decisions-only", name, "--loops", str(loops)], 1800, src,
                    wrap=["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg_file}"])
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


# -- issue 14: the smallest interval per host, and a rate-limited server -------------

#: Hosts served on two ports each (two origins, one server) in the limits phase.
LIMIT_HOSTS = 10


async def _server_log(server: ServerProcess) -> dict[str, Any]:
    await asyncio.sleep(0.3)  # the last requests land in the records
    async with server._session.get(  # type: ignore[union-attr]
            server.info["control"] + "?times=1&log=1") as resp:
        data: dict[str, Any] = await resp.json()
        return data


async def limits(sizes: Sizes, workdir: Path, progress: Progress) -> dict[str, Any]:
    """Issue 14 beside the alternatives, both measured at the server.

    per host   ``LIMIT_HOSTS`` hosts, each on two ports (two origins), 20 pages
               a host alternating between them, delay D, all tasks at once:
               the smallest interval per host (by server address, whatever the
               port) and robots.txt requests per origin.
    429 share  one host taking 1 request per ``rate_limit`` s (429 without
               Retry-After beyond), 50 pages at once, delay 0: how many 429s.
    """
    delay = sizes.limit_delay
    pages = 20
    plans = [HostPlan("allow", pages=pages)] * LIMIT_HOSTS
    plans.append(HostPlan("allow", pages=sizes.limit_pages, rate_limit=sizes.rate_limit))
    impls = ["robotgate", "robotgate pace_by=origin", "baseline", "scrapy", "crawlee"]
    out: dict[str, Any] = {"delay": delay, "hosts": LIMIT_HOSTS, "pages_per_host": pages,
                           "rate_limit": sizes.rate_limit, "rate_pages": sizes.limit_pages,
                           "per_host": {}, "rate_limited": {}}
    async with ServerProcess() as server:
        await server.start(["--extra-ports", "1"], plans=plans, duration=900)
        ports = server.info["ports"]
        hosts = server.info["hosts"]
        per_host = [f"http://{h}:{ports[i % 2]}/page/{i}" for i in range(pages)
                    for h in hosts[:LIMIT_HOSTS]]
        limited = [f"http://{hosts[LIMIT_HOSTS]}:{ports[0]}/page/{i}"
                   for i in range(sizes.limit_pages)]
        for scenario, urls, d in (("per_host", per_host, delay), ("rate_limited", limited, 0.0)):
            for impl in impls:
                if impl == "robotgate pace_by=origin" and scenario == "rate_limited":
                    continue
                progress.start(f"limits {scenario}: {impl}", len(urls))
                await server.reset()
                await asyncio.sleep(0.1)
                result, note = await _limits_run(impl, urls, d, sizes, workdir, progress)
                log = await _server_log(server)
                watched = hosts[:LIMIT_HOSTS] if scenario == "per_host" else hosts[LIMIT_HOSTS:]
                out[scenario][impl] = _limits_figures(log, result, note, d, watched)
    return out


async def _limits_run(impl: str, urls: list[str], delay: float, sizes: Sizes, workdir: Path,
                      progress: Progress) -> tuple[Drive | None, str]:
    bound = 120.0
    if impl.startswith("robotgate"):
        options: dict[str, Any] = {"pace_by": "origin"} if impl.endswith("origin") else {}
        async with RobotGate(USER_AGENT, from_=FROM, delay=delay, **options) as gate:
            return await drive(urls, gate_fetcher(gate), len(urls), bound, progress), ""
    if impl == "baseline":
        if not HAVE_PROTEGO:
            return None, "Protego not installed"
        async with aiohttp.ClientSession(connector=_connector()) as session:
            crawler = HandRolled(session, USER_AGENT, delay=delay, timeout=10)
            return await drive(urls, baseline_fetcher(crawler), len(urls), bound, progress), ""
    if not sizes.alternatives:
        return None, "skipped (--skip-alternatives)"
    spec = {"urls": urls, "user_agent": USER_AGENT, "delay": delay, "per_origin": 1,
            "concurrency": len(urls), "timeout": 10.0, "deadline": bound}
    return await run_alternative(impl, spec, workdir)


def _limits_figures(log: dict[str, Any], result: Drive | None, note: str, delay: float,
                    hosts: Sequence[str]) -> dict[str, Any]:
    if result is None:
        return {"measured": False, "note": note}
    gaps: list[float] = []
    robots: list[int] = []
    statuses: dict[int, int] = {}
    for h in hosts:
        rec = log["hosts"][h]
        times = rec.get("page_times") or []
        gaps += [b - a for a, b in itertools.pairwise(times)]
        robots.append(rec["robots_requests"])
        for _t, _path, status in rec.get("page_log") or []:
            statuses[status] = statuses.get(status, 0) + 1
    pages = sum(statuses.values())
    return {
        "measured": True, "note": note,
        "smallest_interval": min(gaps) if gaps else None,
        "below_delay": sum(g < delay for g in gaps) if delay > 0 else None,
        "robots_requests": [min(robots), max(robots)],
        "page_requests": pages,
        "status_429": statuses.get(429, 0),
        "share_429": statuses.get(429, 0) / pages if pages else None,
        "elapsed": result.elapsed, "answered": len(result.outcomes),
    }


# -- issues 13 and 16: head-of-line, and the other clients through the gate ---------


async def head_of_line_phase(progress: Progress) -> dict[str, Any]:
    """benchmarks/crawl_bench.py (Helper E's): naive worker pool vs ``gate.crawl``."""
    try:
        from benchmarks.crawl_bench import head_of_line
    except ImportError as exc:
        return {"error": f"benchmarks/crawl_bench.py not importable: {exc}"}
    progress.start("head-of-line: naive pool over gate.fetch vs gate.crawl (~25 s)")
    result: dict[str, Any] = await head_of_line()
    return result


async def clients_phase(workdir: Path, progress: Progress) -> dict[str, Any]:
    """benchmarks/clients_bench.py (Helper G's), if present: Scrapy/httpx through the gate."""
    script = ROOT / "benchmarks" / "clients_bench.py"
    if not script.exists():
        return {"error": "benchmarks/clients_bench.py is not there yet (Helper G's); "
                         "this phase runs it with --json when it is"}
    progress.start("clients: benchmarks/clients_bench.py")
    out_json = workdir / "clients.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), "--json", str(out_json), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, cwd=str(ROOT))
    try:
        text, _ = await asyncio.wait_for(proc.communicate(), 900)
    except asyncio.TimeoutError:
        await stop_process(proc)
        return {"error": "clients_bench.py timed out after 900 s"}
    result: dict[str, Any] = {"exit": proc.returncode,
                              "output": text.decode(errors="replace")[-4000:]}
    if out_json.exists():
        result["json"] = json.loads(out_json.read_text())
    return result


# -- figure 6: memory, in child processes ------------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _corpus_bodies(corpus: Path, max_bytes: int) -> list[bytes]:
    # What a fetch keeps: at most max_bytes of each body.
    return [(corpus / f).read_bytes()[:max_bytes] for f in sorted(os.listdir(corpus))]


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
        gate = RobotGate(USER_AGENT, from_=FROM, delay=1.0, max_origins=n)
        cache = gate.cache
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
        for i, site in enumerate(sites):
            key = await gate.keys.key(f"https://site{i}.example")
            site.host = gate.scheduler.add(key, HostState(key)).state
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
        held.append(parse_entry(entry, gate.cache.how))
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
    rules = await _child_json(["--rules-child", str(n), "--corpus", str(corpus)], 300)
    if "error" in rules:
        return rules
    progress.start(f"memory: {n:,} origins cached (RSS, a child process)")
    args = ["--memory-child", str(n), "--corpus", str(corpus)]
    result = await _child_json(args + (["--memory-parse-all"] if parse_all else []), 300)
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
    return result


# -- the run ---------------------------------------------------------------------


@dataclass
class Sizes:
    hosts: int = 200
    pages: int = 50
    concurrency: int = 10_000
    delay: float = 0.2
    timeout: float = 5.0
    burst_pages: int = 1000
    burst_robots_seconds: float = 2.0
    burst_per_origin: int = 8
    overhead_hosts: int = 1000
    overhead_pages: int = 5
    overhead_concurrency: int = 200
    overhead_rounds: int = 5
    overhead_profile: bool = False
    callgrind: bool = False
    cache_sim: bool = False
    before_src: Path | None = None
    decision_origins: int = 1000
    decision_per_origin: int = 50
    decision_rounds: int = 5
    decision_repeats: int = 2
    limit_delay: float = 0.2
    limit_pages: int = 50
    rate_limit: float = 0.2
    memory_origins: int = 100_000
    alternatives: bool = True
    alt_time_factor: float = 1.0
    memory_parse_all: bool = False
    corpus: Path = CORPUS
    phases: tuple[str, ...] = PHASES


def _checks_json(c: CrawlChecks | None, note: str) -> dict[str, Any]:
    if c is None:
        return {"measured": False, "note": note}
    return {"measured": True, "note": note, **dataclasses.asdict(c)}


async def run_crawl_phase(
    label: str, server: ServerProcess, hosts: list[Host], cfg: CrawlConfig, sizes: Sizes,
    progress: Progress, workdir: Path,
) -> dict[str, dict[str, Any]]:
    """The same crawl for every implementation, the server reset before each."""
    results: dict[str, dict[str, Any]] = {}
    addresses = server.info["hosts"]
    policy = cfg.policy()
    deadline = cfg.bound(hosts)
    for impl in IMPLS:
        if impl in ("scrapy", "crawlee") and not sizes.alternatives:
            results[impl] = _checks_json(None, "skipped (--skip-alternatives)")
            continue
        if impl == "baseline" and not HAVE_PROTEGO:
            results[impl] = _checks_json(None, "Protego not installed (the extra 'bench')")
            continue
        await server.reset()
        await asyncio.sleep(0.2)
        total = len(crawl_urls(server.base_urls, hosts))
        progress.start(f"{label}: {impl}", total if impl in ("robotgate", "baseline") else 0)
        note = ""
        if impl == "robotgate":
            drive_result, urls, _ = await crawl_robotgate(server.base_urls, hosts, cfg, progress)
            # The alternatives get this much longer than robotgate took (and their start-up).
            deadline = min(deadline, max(20.0, sizes.alt_time_factor * drive_result.elapsed) + 5)
        elif impl == "baseline":
            drive_result, urls, _ = await crawl_baseline(server.base_urls, hosts, cfg, progress)
        else:
            alt, urls, note = await crawl_alternative(impl, server.base_urls, hosts, cfg, workdir,
                                                      deadline)
            if alt is None:
                results[impl] = _checks_json(None, note)
                continue
            drive_result = alt
        await asyncio.sleep(0.3)  # let the last requests land in the server's records
        stats = await server.stats(times=True)
        checks = check_crawl(stats, hosts, addresses, urls, drive_result, delay=cfg.delay,
                             policy=policy)
        results[impl] = _checks_json(checks, note)
    return results


async def run(sizes: Sizes, json_path: Path | None, progress: Progress) -> dict[str, Any]:
    """Every phase in ``sizes.phases``; the report (also written to ``json_path``)."""
    _raise_nofile()
    ticker = asyncio.get_running_loop().create_task(progress.tick())
    report: dict[str, Any] = {"sizes": dataclasses.asdict(sizes), "machine": _machine()}
    t_start = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="robotgate-load-") as tmp:
            workdir = Path(tmp)
            if "crawl" in sizes.phases:  # figures 1, 2, 3, 8, and the alternatives
                cfg = CrawlConfig(sizes.hosts, sizes.pages, sizes.concurrency, sizes.delay,
                                  sizes.timeout)
                hosts = crawl_hosts(sizes.hosts, sizes.pages, sizes.delay, sizes.timeout)
                progress.start(f"crawl: starting a server with {len(hosts)} hosts")
                async with ServerProcess() as server:
                    plans = [h.plan for h in hosts]
                    await server.start(["--backlog", "4096"], plans=plans, duration=900)
                    report["crawl"] = {
                        "config": dataclasses.asdict(cfg),
                        "kinds": _kind_counts(hosts),
                        "results": await run_crawl_phase("crawl", server, hosts, cfg, sizes,
                                                         progress, workdir),
                    }
            if "burst" in sizes.phases:  # one host, robots.txt after 2 s, 20 % disallowed
                burst_cfg = CrawlConfig(1, sizes.burst_pages, sizes.burst_pages, 0.0,
                                        max(sizes.timeout, sizes.burst_robots_seconds * 2),
                                        per_origin=sizes.burst_per_origin)
                burst_host = Host("slow", HostPlan("slow", pages=sizes.burst_pages,
                                                   slow_seconds=sizes.burst_robots_seconds))
                progress.start("burst: starting a server")
                async with ServerProcess() as server:
                    await server.start(["--backlog", "4096"], plans=[burst_host.plan], duration=600)
                    report["burst"] = {
                        "config": dataclasses.asdict(burst_cfg),
                        "results": await run_crawl_phase("burst", server, [burst_host],
                                                         burst_cfg, sizes, progress, workdir),
                    }
            if "overhead" in sizes.phases:  # figure 4
                progress.start(f"overhead: starting a server with {sizes.overhead_hosts} hosts")
                async with ServerProcess() as server:
                    await server.start(
                        ["--backlog", "4096"], plans=[HostPlan("partial")] * sizes.overhead_hosts,
                        duration=3600,
                    )
                    report["overhead"] = await overhead(server, sizes, workdir, progress)
            if "decisions" in sizes.phases:  # figure 5
                report["decisions"] = await decisions(sizes, progress)
            if "limits" in sizes.phases:  # issue 14: per host, 429 share
                report["limits"] = await limits(sizes, workdir, progress)
            if "hol" in sizes.phases:  # issue 13: head-of-line
                report["hol"] = await head_of_line_phase(progress)
            if "clients" in sizes.phases:  # issue 16: Scrapy and httpx through the gate
                report["clients"] = await clients_phase(workdir, progress)
            if "memory" in sizes.phases:  # figure 6
                report["memory"] = await memory(sizes.memory_origins, sizes.corpus, progress,
                                                sizes.memory_parse_all)
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
        progress.clear()
    report["seconds"] = time.monotonic() - t_start
    report["table"] = table_rows(report)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(report, indent=1, default=str))
    return report


def _kind_counts(hosts: Sequence[Host]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for h in hosts:
        counts[h.kind] = counts.get(h.kind, 0) + 1
    return counts


def _machine() -> dict[str, Any]:
    import platform
    import subprocess

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "aiohttp": aiohttp.__version__, "load_average": os.getloadavg(),
            # The children run this install; a --before-src tree runs whatever it holds.
            "compiled": compiled_modules(),
            "commit": git("rev-parse", "--short", "HEAD"),
            "src_changed": bool(git("status", "--porcelain", "--", "src"))}


def _raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# -- the table ---------------------------------------------------------------------

Row = dict[str, Any]


def _fmt_int(n: float) -> str:
    return f"{n:,.0f}"


def table_rows(report: dict[str, Any]) -> list[Row]:
    """One row per figure: its value for each implementation, the goal, pass/fail."""
    rows: list[Row] = []

    def crawl_rows(section: str, title: str, paced: bool) -> None:
        data = report[section]
        cfg = data["config"]
        res = data["results"]
        timeout = cfg["timeout"]

        def per(fn: Callable[[dict[str, Any]], str]) -> dict[str, str]:
            return {i: (fn(res[i]) if res[i]["measured"] else "n/a") for i in IMPLS}

        def robots(r: dict[str, Any]) -> str:
            lo, hi = r["robots_min"], r["robots_max"]
            s = f"{lo} on all {r['origins']}" if lo == hi else f"{lo}-{hi}"
            if r["robots_wrong"]:
                s += f" ({len(r['robots_wrong'])} wrong)"
            return s

        gate = res["robotgate"]
        ok = gate["measured"]
        rows.append({"section": title})
        rows.append({"figure": "1 robots.txt requests per origin", "values": per(robots),
                     "goal": "exactly 1", "pass": ok and not gate["robots_wrong"]})
        rows.append({"figure": "2 disallowed pages at the server",
                     "values": per(lambda r: _fmt_int(r["disallowed_fetched"])),
                     "goal": "0", "pass": ok and gate["disallowed_fetched"] == 0})
        rows.append({"figure": "  allowed pages not fetched",
                     "values": per(lambda r: _fmt_int(r["allowed_skipped"])),
                     "goal": "0", "pass": ok and gate["allowed_skipped"] == 0})
        if paced:
            rows.append({"figure": f"3 intervals below the delay ({cfg['delay']:g} s)",
                         "values": per(lambda r: _fmt_int(r["pacing_violations"])),
                         "goal": "0", "pass": ok and gate["pacing_violations"] == 0})
            rows.append({"figure": "3 smallest interval per host (x interval)",
                         "values": per(lambda r: "n/a" if r.get("smallest_gap") is None
                                       else f"{r['smallest_gap']:.3f} s "
                                            f"({r['worst_min_ratio']:.2f}x)"),
                         "goal": ">= 1.00x", "pass": ok and gate.get("worst_min_ratio") is not None
                         and gate["worst_min_ratio"] >= 1.0})
            rows.append({"figure": "3 mean interval over delay, worst host",
                         "values": per(lambda r: "n/a" if r["worst_mean_excess"] is None
                                       else f"{r['worst_mean_excess']:+.1%}"),
                         "goal": "<= +10%",
                         "pass": ok and gate["worst_mean_excess"] is not None
                         and gate["worst_mean_excess"] <= 0.10})
        else:
            rows.append({"figure": "3 intervals below the delay",
                         "values": per(lambda r: "n/a (delay 0)"), "goal": "n/a",
                         "pass": None})
        rows.append({"figure": "8 tasks with a definite answer",
                     "values": per(lambda r: f"{r['definite']:,}/{r['tasks']:,}"),
                     "goal": "all", "pass": ok and gate["definite"] == gate["tasks"]})
        rows.append({"figure": f"8 slowest fault verdict (timeout {timeout:g} s)",
                     "values": per(lambda r: "n/a" if r["slowest_fault_verdict"] is None
                                   else f"{r['slowest_fault_verdict']:.2f} s"),
                     "goal": f"<= {timeout + 1:g} s",
                     "pass": None if gate.get("slowest_fault_verdict") is None
                     else gate["slowest_fault_verdict"] <= timeout + 1})
        rows.append({"figure": "8 ended by itself, in",
                     "values": per(lambda r: f"{'yes' if r['ended_by_itself'] else 'NO'}, "
                                   f"{r['elapsed']:.1f} s"),
                     "goal": "yes", "pass": ok and gate["ended_by_itself"]})
        rows.append({"figure": "  longest event-loop stall (client)",
                     "values": per(lambda r: "n/a" if r["max_loop_lag"] is None
                                   else f"{r['max_loop_lag']:.2f} s"),
                     "goal": "", "pass": None})
        rows.append({"figure": "  pages/s" + (" (paced)" if paced else ""),
                     "values": per(lambda r: _fmt_int(r["pages_per_s"])), "goal": "",
                     "pass": None})

    if "crawl" in report:
        c = report["crawl"]["config"]
        crawl_rows("crawl", f"crawl: {c['hosts']} hosts x {c['pages']} pages, "
                   f"{c['concurrency']:,} tasks, delay {c['delay']:g} s", paced=True)
    if "burst" in report:
        c = report["burst"]["config"]
        crawl_rows("burst", f"burst: 1 host, {c['pages']:,} tasks at once, robots.txt after "
                   f"{report['sizes']['burst_robots_seconds']:g} s, 20% disallowed, delay 0, "
                   f"{c['per_origin']} in flight", paced=False)
    if "overhead" in report:
        o = report["overhead"]
        cs = o["contenders"]
        rows.append({"section": f"overhead: {o['hosts']:,} hosts x {o['pages_per_host']} pages, "
                                f"{o['concurrency']} tasks, delay 0, caps off, cold, median of "
                                f"{o['rounds']} interleaved rounds (details below)"})
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
                     "values": {"robotgate": _fmt_int(d["mismatches"])},
                     "goal": "0", "pass": d["mismatches"] == 0})
    if "limits" in report:
        lim = report["limits"]
        ph = lim["per_host"]
        rl = lim["rate_limited"]

        def limit_cell(r: dict[str, Any] | None, fmt: Callable[[dict[str, Any]], str]) -> str:
            if r is None:
                return "-"
            return fmt(r) if r.get("measured") else "n/a"

        def gap(r: dict[str, Any]) -> str:
            g = r["smallest_interval"]
            return "n/a" if g is None else f"{g:.3f} s"

        def share(r: dict[str, Any]) -> str:
            s = r["share_429"]
            return "n/a" if s is None else f"{s:.0%} ({r['status_429']}/{r['page_requests']})"

        rows.append({"section": f"pace by host: {lim['hosts']} hosts on 2 ports each (2 origins), "
                                f"delay {lim['delay']:g} s; a server taking one request per "
                                f"{lim['rate_limit']:g} s, {lim['rate_pages']} pages at once"})
        g = ph.get("robotgate", {})
        rows.append({"figure": "14 smallest interval per host (server)",
                     "values": {i: limit_cell(ph.get(i), gap) for i in IMPLS},
                     "goal": f">= {lim['delay']:g} s",
                     "pass": bool(g.get("measured")) and g["smallest_interval"] is not None
                     and g["smallest_interval"] >= lim["delay"]})
        r = rl.get("robotgate", {})
        rows.append({"figure": "14 429 share, rate-limited server",
                     "values": {i: limit_cell(rl.get(i), share) for i in IMPLS},
                     "goal": "<= 20%",
                     "pass": bool(r.get("measured")) and r["share_429"] is not None
                     and r["share_429"] <= 0.2})
    if "hol" in report and "error" not in report["hol"]:
        h = report["hol"]
        rows.append({"section": f"head-of-line: {h['workers']} workers, {h['hosts']} hosts x "
                                f"{h['pages_per_host']} pages sorted by host, delay "
                                f"{h['delay']:g} s (bound ~{h['bound_s']:g} s)"})
        for key, label in (("naive", "naive pool over gate.fetch"), ("crawl", "gate.crawl")):
            r = h[key]
            rows.append({"figure": f"13 {label}",
                         "values": {"robotgate": f"{r['pages']}/{r['of']} in {r['seconds']:.1f} s"},
                         "goal": "all, near the bound" if key == "crawl" else "",
                         "pass": (r["finished"] and r["seconds"] <= h["bound_s"] * 1.5 + 2)
                         if key == "crawl" else None})
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
            # The store keeps each body zlib-compressed, so the RSS holds less
            # than the raw size; the raw size is shown for scale only.
            rows.append({"figure": "  raw robots.txt body (stored compressed)",
                         "values": {"robotgate": f"{m['body_per_origin']:,.0f} B"},
                         "goal": "", "pass": None})
            rows.append({"figure": "  parsed rules (tracemalloc), not counted",
                         "values": {"robotgate": f"{m['rules_per_origin']:,.0f} B"},
                         "goal": "", "pass": None})
            rows.append({"figure": "  after one visit (+ pacer), less rules",
                         "values": {"robotgate": f"{m['visited_less_rules']:,.0f} B"},
                         "goal": "", "pass": None})
    return rows


def render_table(rows: Sequence[Row], report: dict[str, Any]) -> str:
    notes: dict[str, list[str]] = {}
    for section in ("crawl", "burst"):
        for impl in ("scrapy", "crawlee"):
            r = report.get(section, {}).get("results", {}).get(impl)
            if r is not None and r.get("note"):
                notes.setdefault(impl, []).append(f"{section}: {r['note']}")
    cols = ["robotgate", "baseline", "scrapy", "crawlee"]
    widths = [44, 16, 16, 16, 16, 18, 5]
    head = ["figure", *cols, "goal", "pass"]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    lines.append("-" * len(lines[0]))
    for row in rows:
        if "section" in row:
            lines.append(f"[{row['section']}]")
            continue
        values = row.get("values", {})
        cells = [row["figure"], *(values.get(c, "-") for c in cols), row["goal"],
                 {True: "PASS", False: "FAIL", None: ""}[row["pass"]]]
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True))
                     .rstrip())
    if notes:
        lines.append("")
        for impl, texts in notes.items():
            lines.append(f"{impl}: {'; '.join(texts)}")
    return "\n".join(lines)


def _md(head: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return lines


def render_details(report: dict[str, Any]) -> str:
    """The detail tables (Markdown), ready for benchmarks/README.md."""
    out: list[str] = []
    compiled = report.get("machine", {}).get("compiled")
    if compiled is not None:
        out.append("\nrobotgate's hot path ran " + (
            f"compiled with mypyc ({', '.join(compiled)})" if compiled else "as pure Python"))
    o = report.get("overhead")
    if o:
        out.append(f"\n### Overhead: {o['hosts']:,} loopback hosts x {o['pages_per_host']} pages, "
                   f"{o['concurrency']} concurrent, delay 0, caps off, cold (robots.txt fetched "
                   f"in the timed run); median of {o['rounds']} interleaved rounds, each run a "
                   f"fresh process\n")
        body = []
        for name, c in o["contenders"].items():
            lo, hi = c["ratio_range"] or (math.nan, math.nan)
            clo, chi = c["cpu_ratio_range"] or (math.nan, math.nan)
            body.append([name, _fmt_int(c["requests_per_s"]), _fmt_int(c["server_requests"]),
                         f"{c['ratio']:.1%}", f"{lo:.0%}-{hi:.0%}",
                         f"{c['pooled_ratio']:.1%}", f"{c['client_busy']:.0%}",
                         f"{c['cpu_ratio']:.1%} ({clo:.0%}-{chi:.0%})",
                         f"{c['cpu_us_per_page']:.0f}",
                         f"{c['gc_us_per_page']:.1f}", f"{c['gen0_per_1000_pages']:.1f}",
                         f"{c['tracked_per_host']:.0f}", _fmt_int(c["not_fetched"])])
        out += _md(["contender", "requests/s (server)", "requests", "ratio to aiohttp",
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
                       f"the difference over the extra pages):\n")
            ref = cg["contenders"].get("aiohttp", {}).get("instructions_per_page")
            body = []
            for name, c in cg["contenders"].items():
                if "error" in c:
                    body.append([name, c["error"], "", "", "", ""])
                    continue
                ins = c["instructions_per_page"]
                body.append([name, _fmt_int(ins),
                             f"{ins - ref:+,.0f} ({ins / ref - 1:+.1%})" if ref else "-",
                             f"{c['gc_allocations_per_page']:.1f}",
                             f"{c['mallocs_per_page']:.0f}",
                             _fmt_int(c["gc_instructions_per_page"])])
            out += _md(["contender", "instructions/page", "vs aiohttp",
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
                body.append([name, _fmt_int(ins),
                             f"{ins - floor:+,.0f}" if floor else "-",
                             f"{c['gc_allocations_per_new_host']:.1f}",
                             _fmt_int(c["gc_instructions_per_new_host"]),
                             f"{model[name]:.1%}" if name in model else "-"])
            out += _md(["contender", "instructions/new host", "vs floor",
                        "GC-tracked allocations/new host", "GC instructions/new host",
                        f"requests per instruction vs aiohttp, {pages} pages a host"], body)
            if cg.get("cache_sim"):
                out.append("\nCallgrind's simulated caches and branch predictor (first-level "
                           "cache misses; mispredicted conditional and indirect branches):\n")
                body = [[name, *(f"{c[f'{k}_per_{w}']:,.0f}" for w in ("page", "new_host")
                                 for k in SIM_EVENTS)]
                        for name, c in cg["contenders"].items() if "i1_misses_per_page" in c]
                out += _md(["contender", *(f"{k.replace('_', ' ')}/{w}"
                                           for w in ("page", "new host") for k in SIM_EVENTS)],
                           body)
        for name, prof in (o.get("profile") or {}).items():
            if not isinstance(prof, dict):
                out.append(f"\ncProfile {name}: {prof}")
                continue
            out.append(f"\ncProfile of {name} (cProfile inflates every call; read shares, not "
                       f"times): robotgate's own functions {prof['robotgate_us_per_page']:.0f} "
                       f"of {prof['total_us_per_page']:.0f} us/page self time\n")
            out += _md(["robotgate function", "calls/page", "self us/page", "cum us/page"],
                       [[r["function"], f"{r['calls_per_page']:.2f}",
                         f"{r['self_us_per_page']:.1f}", f"{r['cum_us_per_page']:.1f}"]
                        for r in prof["top"][:10]])
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
                    body.append([f"{k} ({label})", _fmt_int(rate), f"{t['ratios'][k]:.2f}x",
                                 f"{lo:.2f}-{hi:.2f}"])
            out += _md(["contender", "decisions/s", "ratio to parser", "range"], body)
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
                out += _md(["contender", "instructions/decision", "GC-tracked allocations"],
                           [[k, _fmt_int(v["instructions_per_decision"]),
                             f"{v['gc_allocations_per_decision']:.2f}"] for k, v in cg.items()])
    lim = report.get("limits")
    if lim:
        out.append("\n### Pace by host; a rate-limited server (issue 14), at the server\n")
        body = []
        for impl in ("robotgate", "robotgate pace_by=origin", "baseline", "scrapy", "crawlee"):
            a = lim["per_host"].get(impl)
            b = lim["rate_limited"].get(impl)
            if a is None:
                continue

            def cells(r: dict[str, Any] | None) -> list[str]:
                if r is None:
                    return ["-", "-"]
                if not r.get("measured"):
                    return [r.get("note", "n/a")[:60], ""]
                return [
                    "n/a" if r["smallest_interval"] is None
                    else f"{r['smallest_interval']:.3f} s",
                    f"{r['below_delay']}" if r["below_delay"] is not None else "",
                ]

            pa = cells(a)
            share = ("-" if b is None else
                     (b.get("note", "n/a")[:40] if not b.get("measured") else
                      f"{b['share_429']:.0%} ({b['status_429']}/{b['page_requests']}), "
                      f"{b['elapsed']:.1f} s"))
            robots = (f"{a['robots_requests'][0]}-{a['robots_requests'][1]}"
                      if a.get("measured") else "")
            body.append([impl, *pa, robots, share])
        out += _md(["implementation", f"smallest interval per host (delay {lim['delay']:g} s)",
                    "intervals below the delay", "robots.txt requests per host (2 origins)",
                    f"429 share ({lim['rate_pages']} pages, 1 per {lim['rate_limit']:g} s)"], body)
    h = report.get("hol")
    if h:
        if "error" in h:
            out.append(f"\nhead-of-line: {h['error']}")
        else:
            out.append(f"\n### Head-of-line (issue 13, benchmarks/crawl_bench.py): "
                       f"{h['workers']} workers, {h['hosts']} hosts x {h['pages_per_host']} pages "
                       f"sorted by host, delay {h['delay']:g} s, bound ~{h['bound_s']:g} s\n")
            body = []
            for key, label in (("naive", "naive worker pool over gate.fetch"),
                               ("crawl", "gate.crawl")):
                r = h[key]
                gap = r.get("min_interval_s")
                body.append([label, f"{r['pages']}/{r['of']}", f"{r['seconds']:.1f} s"
                             + ("" if r["finished"] else " (stopped)"),
                             "-" if gap is None else f"{gap:.3f} s"])
            out += _md(["contender", "pages", "time", "smallest interval per host"], body)
    c = report.get("clients")
    if c:
        out.append("\n### Scrapy and httpx through the gate (issue 16, "
                   "benchmarks/clients_bench.py)\n")
        text = c.get("error") or c.get("output", "")
        lines = text.splitlines()
        # The per-round lines are in the JSON; the summary starts at its header.
        start = next((i for i, line in enumerate(lines) if line.startswith("contender")), 0)
        out.append("```\n" + "\n".join(lines[start:]).strip() + "\n```")
    return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    d = Sizes()
    ap.add_argument("--hosts", type=int, default=d.hosts, help="crawl hosts (>= 14)")
    ap.add_argument("--pages", type=int, default=d.pages, help="pages per crawl host")
    ap.add_argument("--concurrency", type=int, default=d.concurrency, help="crawl tasks at once")
    ap.add_argument("--delay", type=float, default=d.delay, help="crawl delay per host (s)")
    ap.add_argument("--timeout", type=float, default=d.timeout, help="robots.txt timeout (s)")
    ap.add_argument("--burst-pages", type=int, default=d.burst_pages,
                    help="burst: tasks at once on the one host")
    ap.add_argument("--burst-per-origin", type=int, default=d.burst_per_origin,
                    help="burst: requests in flight per origin (Scrapy's default is 8)")
    ap.add_argument("--overhead-hosts", type=int, default=d.overhead_hosts)
    ap.add_argument("--overhead-pages", type=int, default=d.overhead_pages)
    ap.add_argument("--overhead-concurrency", type=int, default=d.overhead_concurrency)
    ap.add_argument("--overhead-rounds", type=int, default=d.overhead_rounds)
    ap.add_argument("--profile", action="store_true",
                    help="overhead: one more run of gate.fetch and the middleware under cProfile")
    ap.add_argument("--callgrind", action="store_true",
                    help="overhead and decisions: exact instructions and allocations per page "
                         "and per decision under valgrind (slow: minutes)")
    ap.add_argument("--cache-sim", action="store_true",
                    help="with --callgrind: the overhead phase's runs also simulate the caches "
                         "and branch predictor (about twice as slow)")
    ap.add_argument("--before-src", type=Path,
                    help="another tree's src/ (e.g. a git worktree of an older commit): its "
                         "gate.fetch, middleware and decisions run interleaved with this one's")
    ap.add_argument("--decision-origins", type=int, default=d.decision_origins)
    ap.add_argument("--decision-per-origin", type=int, default=d.decision_per_origin)
    ap.add_argument("--decision-rounds", type=int, default=d.decision_rounds)
    ap.add_argument("--decision-repeats", type=int, default=d.decision_repeats,
                    help="decisions: processes per tree, alternating trees")
    ap.add_argument("--rate-limit", type=float, default=d.rate_limit,
                    help="limits: seconds per request the rate-limited server lets through")
    ap.add_argument("--memory-origins", type=int, default=d.memory_origins)
    ap.add_argument("--alt-time-factor", type=float, default=d.alt_time_factor,
                    help="Scrapy/crawlee are stopped after this many times robotgate's "
                         "crawl time (at least 20 s), plus 5 s to start")
    ap.add_argument("--skip-alternatives", action="store_true",
                    help="skip Scrapy and crawlee (the hand-rolled baseline still runs)")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--only", default=",".join(PHASES),
                    help=f"comma-separated phases to run (default: all of {','.join(PHASES)})")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON, help="write the results here")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--corpus", type=Path, default=CORPUS, help=argparse.SUPPRESS)
    ap.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rules-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--overhead-child", help=argparse.SUPPRESS)
    ap.add_argument("--spec", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--decisions-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--origins", type=int, default=d.decision_origins, help=argparse.SUPPRESS)
    ap.add_argument("--per-origin", type=int, default=d.decision_per_origin,
                    help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=d.decision_rounds, help=argparse.SUPPRESS)
    ap.add_argument("--decisions-only", help=argparse.SUPPRESS)
    ap.add_argument("--loops", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--memory-parse-all", action="store_true",
                    help="parse every cached origin's robots.txt (exact, ~1 min at 100,000) "
                         "instead of one shared parse per corpus file")
    return ap


def _children(args: argparse.Namespace) -> dict[str, Any] | None:
    """The child-process modes (each prints one JSON line), or None."""
    if args.memory_child is not None:
        return memory_child(args.memory_child, args.corpus, args.memory_parse_all)
    if args.rules_child is not None:
        return rules_child(args.rules_child, args.corpus)
    if args.overhead_child is not None:
        spec = json.loads(args.spec.read_text())
        return asyncio.run(overhead_child(args.overhead_child, spec, args.profile))
    if args.decisions_child:
        return asyncio.run(decisions_child(args.corpus, args.origins, args.per_origin,
                                           args.rounds, args.decisions_only, args.loops))
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    child = _children(args)
    if child is not None:
        print(json.dumps(child))
        return 0
    sizes = Sizes(
        hosts=args.hosts, pages=args.pages, concurrency=args.concurrency, delay=args.delay,
        timeout=args.timeout, burst_pages=args.burst_pages,
        burst_per_origin=args.burst_per_origin, overhead_hosts=args.overhead_hosts,
        overhead_pages=args.overhead_pages, overhead_concurrency=args.overhead_concurrency,
        overhead_rounds=args.overhead_rounds, overhead_profile=args.profile,
        callgrind=args.callgrind, cache_sim=args.cache_sim,
        before_src=args.before_src.resolve() if args.before_src else None,
        decision_origins=args.decision_origins, decision_per_origin=args.decision_per_origin,
        decision_rounds=args.decision_rounds, decision_repeats=args.decision_repeats,
        rate_limit=args.rate_limit,
        memory_origins=args.memory_origins, alternatives=not args.skip_alternatives,
        alt_time_factor=args.alt_time_factor, memory_parse_all=args.memory_parse_all,
        corpus=args.corpus,
        phases=tuple(p for p in PHASES if p in args.only.split(",")),
    )
    if args.quick:
        sizes = dataclasses.replace(
            sizes, hosts=40, pages=10, concurrency=400, delay=0.1, timeout=2.0, burst_pages=200,
            overhead_hosts=100, overhead_pages=5, overhead_rounds=2, decision_origins=100,
            decision_per_origin=20, decision_rounds=2, decision_repeats=1, limit_pages=20,
            memory_origins=5000)
    if sizes.hosts < len(SCENARIOS) + 1:
        print(f"--hosts must be at least {len(SCENARIOS) + 1}", file=sys.stderr)
        return 2
    # Each overhead contender keeps a connection to every host; the server holds a
    # listening socket per host plus the other end of each connection.
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    need = sizes.overhead_hosts * 6 + 1000
    if "overhead" in sizes.phases and hard != resource.RLIM_INFINITY and need > hard:
        print(f"--overhead-hosts {sizes.overhead_hosts} needs about {need:,} open files; "
              f"the limit here is {hard:,}", file=sys.stderr)
        return 2
    progress = Progress(enabled=not args.no_progress)
    report = asyncio.run(run(sizes, args.json, progress))
    print(render_table(report["table"], report))
    print(render_details(report))
    print(f"\n{report['seconds']:.0f} s in all; JSON: {args.json}")
    gate_rows = [r for r in report["table"] if r.get("pass") is False]
    return 1 if gate_rows else 0


if __name__ == "__main__":
    sys.exit(main())
