"""A polite crawl on the loopback server, and what the server's records say of it.

The hosts of a run (one per fault scenario of :mod:`testbed.server`, the rest ordinary), the
tasks that crawl them (:func:`drive`), and the checks on the server's records: robots.txt
requests per origin, pages that robots.txt (or an unreachable robots.txt, RFC 9309 2.3.1.4)
forbids, intervals between page requests per host, a definite answer per task, an end within a
bound.  ``tests/e2e/test_load_small.py`` asserts them; ``benchmarks/promises.py`` reports them
for robotgate and the alternatives.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import random
import statistics
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from robotgate import Disallowed, FetchPolicy, RobotGate
from testbed.server import SCENARIOS, HostPlan, is_disallowed, page_paths

USER_AGENT = "RobotGateBench/1.0 (+https://example.invalid/bench)"
FROM = "bench@example.invalid"
#: Scenarios whose robots.txt is unreachable (or no text): the whole site is disallowed
#: (RFC 9309 2.3.1.4).
UNREACHABLE = frozenset({"500", "503_retry", "429", "reset", "garbage", "slow_timeout"})
#: Extra kind beside the server's scenarios: a robots.txt slower than the robots timeout.
SLOW_TIMEOUT = "slow_timeout"

Fetch = Callable[[str], Awaitable[str]]


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
    on_answer: Callable[[], None] | None = None,
) -> Drive:
    """Run ``fetch`` over ``urls`` with ``concurrency`` tasks; stop them at ``bound`` s.

    An outcome is what ``fetch`` returned, or ``"error: Type"`` if it raised; ``on_answer``
    is called after each answer.
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
            if on_answer is not None:
                on_answer()

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
    on_answer: Callable[[], None] | None = None,
) -> tuple[Drive, list[tuple[str, Host, str]], dict[str, int]]:
    urls = crawl_urls(base_urls, hosts)
    async with RobotGate(USER_AGENT, from_=FROM, delay=cfg.delay, max_per_host=cfg.per_origin,
                         policy=cfg.policy()) as gate:
        result = await drive([u for u, _, _ in urls], gate_fetcher(gate), cfg.concurrency,
                             cfg.bound(hosts), on_answer)
        return result, urls, dict(gate.stats)

