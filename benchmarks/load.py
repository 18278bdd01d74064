"""Load benchmarks on loopback: the gate's promises and its cost, beside the alternatives.

    python benchmarks/load.py [--quick] [--only crawl,burst,overhead,memory]
        [--hosts 200] [--pages 50] [--concurrency 10000] [--delay 0.2] [--timeout 5]
        [--memory-origins 100000] [--skip-alternatives] [--json benchmarks/results/load.json]

The loopback server (``tests/support/server.py``'s :class:`BenchServer`) runs in a
child process (:class:`tests.support.server.ServerProcess`, plans on stdin), so it has one core and
this client the other; every request goes to 127.0.0.0/8.  A progress line
goes to stderr, the table to stdout, everything as JSON to ``--json``.  The
default run takes about 2.5 minutes on 2 cores.  Every phase is bounded in
count and time; every child process is stopped at the end.

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
          between page requests per host against max(D, Crawl-delay), a
          definite answer (page or Disallowed) per task, the slowest verdict
          on an unreachable robots.txt, and the end within a bound.  Scrapy
          and crawlee stop themselves after max(20 s, robotgate's time) + 5 s
          and report what they answered by then.
burst     (figure 7) one host, 1,000 tasks at once, robots.txt after 2 s, 20 %
          of the pages disallowed, delay 0, 8 requests in flight.
overhead  (figure 4) 1,000 hosts, delay 0, caps off, 256 tasks, the same
          TCPConnector settings for plain aiohttp, gate.fetch, a session with
          gate.middleware and the baseline; robots.txt fetched and cached
          before timing; rounds interleave the contenders and a ratio is the
          median over rounds of contender/aiohttp in the same round.
allowed   (figure 5) allowed() on those 1,000 cached origins from 10,000 tasks;
          decisions per second of client CPU time (one core) and by wall clock.
memory    (figure 6) 100,000 origins installed through the gate's own path
          (entry_for_response, store.save_robots, gate._install) with corpus
          bodies cycled, each origin its own copy of the body; RSS before and
          after in a child process; the parsed rules measured apart with
          tracemalloc in another child and subtracted.

Caveats: timings on a shared 2-core machine are noisy, so throughput is
only compared within a run (ratios); the server's arrival times stand for
what a site would see.
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
import resource
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
PHASES = ("crawl", "burst", "overhead", "memory")
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
    ok, version = alternative_available(name)
    if not ok:
        return None, urls, version
    limit = deadline if deadline is not None else cfg.bound(hosts)
    spec: dict[str, Any] = {
        "urls": [u for u, _, _ in urls],
        "user_agent": USER_AGENT,
        "delay": cfg.delay,
        "per_origin": cfg.per_origin,
        "concurrency": cfg.concurrency,
        "timeout": cfg.timeout,
        "deadline": limit,
    }
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
        return Drive(outcomes, {}, wall, len(urls), ended), urls, note
    out = json.loads(out_path.read_text())
    if "error" in out:
        return None, urls, out["error"]
    outcomes = out.get("outcomes", {})
    times = out.get("times", {})
    elapsed = times["last"] - times["first"] if "last" in times and "first" in times else wall
    finished = ended and bool(out.get("finished"))
    result = Drive(outcomes, {}, max(elapsed, 1e-9), len(urls) - len(outcomes), finished)
    note = f"{name} {out.get('version', version)}"
    if not finished:
        note += f" (stopped at its deadline, {limit:.0f} s)"
    return result, urls, note


# -- figure 4 and 5: overhead and allowed() throughput -------------------------------


def _connector() -> aiohttp.TCPConnector:
    # The same settings for every contender; no total cap (the gate's own default).
    return aiohttp.TCPConnector(limit=0, limit_per_host=0)


async def overhead(
    base_urls: Sequence[str], pages: int, concurrency: int, rounds: int,
    allowed_tasks: int, allowed_per_task: int, progress: Progress,
) -> dict[str, Any]:
    """pages/s of plain aiohttp, gate.fetch, the middleware and the baseline, same run;
    then allowed() decisions/s on the gate's cached origins.

    Each round runs every contender once on the same URLs (in rotated order);
    a contender's ratio is the median over rounds of its rate over plain
    aiohttp's in the same round, so load from other processes hits both sides.
    """
    urls = [f"{b}/page/{i}" for i in range(pages) for b in base_urls]
    warm = [f"{b}/page/0" for b in base_urls]
    plain = aiohttp.ClientSession(connector=_connector())
    gate_session = aiohttp.ClientSession(connector=_connector())
    big = 1_000_000
    gate = RobotGate(USER_AGENT, from_=FROM, delay=0, max_per_origin=big, session=gate_session)
    mw_session = aiohttp.ClientSession(connector=_connector(), middlewares=[gate.middleware])
    base_session = aiohttp.ClientSession(connector=_connector())
    try:
        await gate.open()
        headers = {"User-Agent": USER_AGENT, "From": FROM}

        async def plain_fetch(url: str) -> str:
            async with plain.get(url, headers=headers) as resp:
                await resp.read()
                return "fetched" if resp.status == 200 else f"status {resp.status}"

        async def mw_fetch(url: str) -> str:
            async with mw_session.get(url) as resp:
                await resp.read()
                return "fetched" if resp.status == 200 else f"status {resp.status}"

        contenders: dict[str, Fetch] = {
            "aiohttp": plain_fetch,
            "gate.fetch": gate_fetcher(gate),
            "middleware": mw_fetch,
        }
        if HAVE_PROTEGO:
            baseline = HandRolled(base_session, USER_AGENT, delay=0, per_origin=big, timeout=30)
            contenders["baseline"] = baseline_fetcher(baseline)
        # Untimed: one page per host per contender opens the connections and, for the
        # gate and the baseline, fetches and caches every robots.txt.
        progress.start("overhead: warm-up (robots.txt cached before timing)")
        for fetch in contenders.values():
            await drive(warm, fetch, concurrency, 120)
        robots_before = gate.stats["robots_requests"]
        rates: dict[str, list[float]] = {k: [] for k in contenders}
        cpu: dict[str, list[float]] = {k: [] for k in contenders}
        bad: dict[str, int] = {k: 0 for k in contenders}
        order = list(contenders)
        for r in range(rounds):
            for name in order[r % len(order):] + order[: r % len(order)]:
                progress.start(f"overhead round {r + 1}/{rounds}: {name}", len(urls))
                gc.collect()
                c0 = time.process_time()
                result = await drive(urls, contenders[name], concurrency, 300, progress)
                cpu[name].append((time.process_time() - c0) / len(urls) * 1e6)
                good = sum(o == "fetched" for o in result.outcomes.values())
                bad[name] += len(urls) - good
                rates[name].append(good / result.elapsed)

        def ratio(name: str) -> float:
            return statistics.median(
                a / b for a, b in zip(rates[name], rates["aiohttp"], strict=True))

        out: dict[str, Any] = {
            "hosts": len(base_urls), "pages_per_host": pages, "requests_per_round": len(urls),
            "concurrency": concurrency, "rounds": rounds, "pages_per_s": rates,
            "median_pages_per_s": {k: statistics.median(v) for k, v in rates.items()},
            "client_cpu_us_per_page": {k: statistics.median(v) for k, v in cpu.items()},
            "not_fetched": bad,
            "ratio": {k: ratio(k) for k in contenders},
            "robots_requests_while_timed": gate.stats["robots_requests"] - robots_before,
        }
        out["allowed"] = await allowed_throughput(gate, base_urls, allowed_tasks,
                                                  allowed_per_task, progress)
        return out
    finally:
        await gate.close()
        for s in (plain, gate_session, mw_session, base_session):
            await s.close()


async def allowed_throughput(
    gate: RobotGate, base_urls: Sequence[str], tasks: int, per_task: int, progress: Progress,
    repeats: int = 3,
) -> dict[str, Any]:
    """allowed() decisions/s from ``tasks`` concurrent tasks on cached origins.

    Best of ``repeats`` by wall clock, and per second of this process's CPU
    time (the client is one thread: that is "on one core", whatever else runs).
    """
    paths = page_paths(20)  # /page/N and /private/N: both verdicts
    urls = [b + p for p in paths for b in base_urls]
    for u in urls[: len(base_urls)]:
        await gate.allowed(u)  # all cached already; make sure
    n = len(urls)
    robots_before = gate.stats["robots_requests"]
    wall_best = cpu_best = 0.0
    allowed_count = 0

    async def task(start: int, counts: list[int]) -> None:
        ok = 0
        for k in range(per_task):
            if await gate.allowed(urls[(start + k * 7919) % n]):
                ok += 1
        counts[0] += ok

    for rep in range(repeats):
        progress.start(f"allowed(): {tasks:,} tasks x {per_task}, run {rep + 1}/{repeats}")
        gc.collect()
        counts = [0]
        c0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(task(i * 131, counts) for i in range(tasks)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        wall_best = max(wall_best, tasks * per_task / wall)
        cpu_best = max(cpu_best, tasks * per_task / max(cpu, 1e-9))
        allowed_count = counts[0]
    return {
        "tasks": tasks, "decisions_per_task": per_task, "origins": len(base_urls),
        "decisions_per_s": wall_best, "decisions_per_cpu_s": cpu_best,
        "allowed_fraction": allowed_count / (tasks * per_task),
        "robots_requests_during": gate.stats["robots_requests"] - robots_before,
    }


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
    ``store.save_robots``, ``gate._install``: parse and cache) without the HTTP
    request; bodies are the corpus files cycled, each origin with its own copy
    as read from a socket.  Unless ``parse_all``, origins with the same corpus
    file share one parsed ``RobotsTxt`` (parsing 100,000 bodies takes most of
    a minute, and the parsed rules are subtracted anyway); the RSS then holds
    the rules of each corpus file once.
    """
    from robotgate.policy import entry_for_response
    from robotgate.store.base import HostState
    from robotgate.urls import robots_url

    policy = FetchPolicy()
    bodies = _corpus_bodies(corpus, policy.max_bytes)
    k = len(bodies)
    result: dict[str, Any] = {"origins": n, "corpus_files": k}

    async def fill() -> None:
        gate = RobotGate(USER_AGENT, from_=FROM, delay=1.0, max_origins=n)
        current = [0]
        if not parse_all:
            parse = gate._parse
            memo: dict[int, Any] = {}

            def shared_parse(entry: Any) -> Any:
                rules = memo.get(current[0])
                if rules is None:
                    rules = memo[current[0]] = parse(entry)
                return rules

            gate._parse = shared_parse  # type: ignore[method-assign]
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
            current[0] = i % k
            sites.append(gate._install(origin, entry, HostState(origin), -math.inf))
        result["fill_seconds"] = time.perf_counter() - t0
        gc.collect()
        rss1 = _rss()
        # Then one visit each: the per-origin pacer a crawl creates on the first page.
        for i, site in enumerate(sites):
            gate._pacer(f"https://site{i}.example", site)
        del sites
        gc.collect()
        result["rss_cached"] = rss1 - rss0
        result["rss_visited"] = _rss() - rss0
        result["cached_origins"] = len(gate._sites)
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
        held.append(gate._parse(entry))
        sizes.append(tracemalloc.get_traced_memory()[0] - before)
    tracemalloc.stop()
    k = len(bodies)
    return {"rules_bytes": sum(sizes[i % k] for i in range(n)),
            "rules_bytes_each_file_once": sum(sizes[: min(n, k)]),
            "rules_per_file_mean": statistics.fmean(sizes)}


async def _child_json(args: Sequence[str], timeout: float) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(__file__).resolve()), *args, stdout=asyncio.subprocess.PIPE)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.communicate()
        return {"error": f"{args[0]} timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"error": f"{args[0]} exited {proc.returncode}"}
    data: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return data


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
    overhead_pages: int = 2
    overhead_concurrency: int = 256
    overhead_rounds: int = 6
    allowed_tasks: int = 10_000
    allowed_per_task: int = 50
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
            if "overhead" in sizes.phases:  # figures 4 and 5
                progress.start(f"overhead: starting a server with {sizes.overhead_hosts} hosts")
                async with ServerProcess() as server:
                    await server.start(
                        ["--backlog", "4096"], plans=[HostPlan("partial")] * sizes.overhead_hosts,
                        duration=900,
                    )
                    report["overhead"] = await overhead(
                        server.base_urls, sizes.overhead_pages, sizes.overhead_concurrency,
                        sizes.overhead_rounds, sizes.allowed_tasks, sizes.allowed_per_task,
                        progress)
                    stats = await server.stats(times=False)
                    report["overhead"]["server_robots_requests"] = (
                        stats["totals"]["robots_requests"])
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

    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "aiohttp": aiohttp.__version__}


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
        rate = o["median_pages_per_s"]
        ratio = o["ratio"]
        us = o["client_cpu_us_per_page"]
        rows.append({"section": f"overhead: {o['hosts']:,} hosts, delay 0, caps off, "
                                f"{o['concurrency']} tasks, {o['rounds']} rounds of "
                                f"{o['requests_per_round']:,} (robots.txt cached before timing)"})

        def speed(name: str) -> str:
            return f"{_fmt_int(rate[name])} ({ratio[name]:.0%})"

        rows.append({"figure": "4 pages/s plain aiohttp (reference)",
                     "values": {"robotgate": _fmt_int(rate["aiohttp"])}, "goal": "",
                     "pass": None})
        rows.append({"figure": "4 pages/s gate.fetch (vs aiohttp)",
                     "values": {"robotgate": speed("gate.fetch"),
                                "baseline": speed("baseline") if "baseline" in rate else "n/a"},
                     "goal": ">= 90% of aiohttp", "pass": ratio["gate.fetch"] >= 0.9})
        rows.append({"figure": "4 pages/s middleware (vs aiohttp)",
                     "values": {"robotgate": speed("middleware")},
                     "goal": ">= 90% of aiohttp", "pass": ratio["middleware"] >= 0.9})
        rows.append({"figure": "  client CPU per page: aiohttp",
                     "values": {"robotgate": f"{us['aiohttp']:.0f} us"}, "goal": "",
                     "pass": None})
        rows.append({"figure": "  client CPU per page: gate.fetch",
                     "values": {"robotgate": f"{us['gate.fetch']:.0f} us",
                                "baseline": f"{us['baseline']:.0f} us" if "baseline" in us
                                else "n/a"},
                     "goal": "", "pass": None})
        rows.append({"figure": "  client CPU per page: middleware",
                     "values": {"robotgate": f"{us['middleware']:.0f} us"}, "goal": "",
                     "pass": None})
        a = o["allowed"]
        rows.append({"figure": f"5 allowed()/s per CPU-s, {a['tasks']:,} tasks",
                     "values": {"robotgate": _fmt_int(a["decisions_per_cpu_s"])},
                     "goal": ">= 200,000/s", "pass": a["decisions_per_cpu_s"] >= 200_000})
        rows.append({"figure": "  allowed()/s by wall clock",
                     "values": {"robotgate": _fmt_int(a["decisions_per_s"])}, "goal": "",
                     "pass": None})
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
    ap.add_argument("--allowed-tasks", type=int, default=d.allowed_tasks)
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
    ap.add_argument("--memory-parse-all", action="store_true",
                    help="parse every cached origin's robots.txt (exact, ~1 min at 100,000) "
                         "instead of one shared parse per corpus file")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.memory_child is not None:
        print(json.dumps(memory_child(args.memory_child, args.corpus, args.memory_parse_all)))
        return 0
    if args.rules_child is not None:
        print(json.dumps(rules_child(args.rules_child, args.corpus)))
        return 0
    sizes = Sizes(
        hosts=args.hosts, pages=args.pages, concurrency=args.concurrency, delay=args.delay,
        timeout=args.timeout, burst_pages=args.burst_pages,
        burst_per_origin=args.burst_per_origin, overhead_hosts=args.overhead_hosts,
        overhead_pages=args.overhead_pages, overhead_concurrency=args.overhead_concurrency,
        overhead_rounds=args.overhead_rounds, allowed_tasks=args.allowed_tasks,
        memory_origins=args.memory_origins, alternatives=not args.skip_alternatives,
        alt_time_factor=args.alt_time_factor, memory_parse_all=args.memory_parse_all,
        corpus=args.corpus,
        phases=tuple(p for p in PHASES if p in args.only.split(",")),
    )
    if args.quick:
        sizes = dataclasses.replace(
            sizes, hosts=40, pages=10, concurrency=400, delay=0.1, timeout=2.0, burst_pages=200,
            overhead_hosts=100, overhead_pages=5, overhead_rounds=2, allowed_tasks=1000,
            allowed_per_task=20, memory_origins=5000)
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
    print(f"\n{report['seconds']:.0f} s in all; JSON: {args.json}")
    gate_rows = [r for r in report["table"] if r.get("pass") is False]
    return 1 if gate_rows else 0


if __name__ == "__main__":
    sys.exit(main())
