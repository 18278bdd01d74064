"""The gate's promises under load (figures 1, 2, 3 and 8) at a small size.

``benchmarks/promises.py`` reports them at 10,000 tasks beside the alternatives; here the same
crawl and the same checks (``testbed/crawl.py``) run against an in-process loopback server:
every fault scenario, 2,000 tasks at once, a delay, and robots.txt single-flight, no disallowed
page at the server, no interval below the delay, a definite answer for every task, and an end
within a bound.
"""

from __future__ import annotations

import time

import pytest

from robotgate import FetchPolicy
from testbed.crawl import (
    SLOW_TIMEOUT,
    UNREACHABLE,
    CrawlConfig,
    Drive,
    Host,
    check_crawl,
    crawl_hosts,
    crawl_robotgate,
    crawl_urls,
    must_skip,
)
from testbed.server import SCENARIOS, BenchServer, HostPlan, page_paths

DELAY = 0.1
TIMEOUT = 2.0


def test_hosts_cover_every_fault_scenario() -> None:
    hosts = crawl_hosts(30, pages=10, delay=DELAY, timeout=TIMEOUT)
    kinds = {h.kind for h in hosts}
    assert set(SCENARIOS) <= kinds
    assert SLOW_TIMEOUT in kinds
    slow = next(h for h in hosts if h.kind == "slow")
    late = next(h for h in hosts if h.kind == SLOW_TIMEOUT)
    assert slow.plan.slow_seconds < TIMEOUT < late.plan.slow_seconds
    # What a polite crawler may fetch: RFC 9309 2.3.1.4 for the unreachable ones.
    assert must_skip("500", "/page/1") and must_skip(SLOW_TIMEOUT, "/page/1")
    assert must_skip("partial", "/private/4") and not must_skip("partial", "/page/1")
    assert not must_skip("404", "/private/4")


def _stats(times: dict[str, list[float]], robots: dict[str, int]) -> dict[str, object]:
    hosts = {
        addr: {
            "robots_requests": robots[addr],
            "robots_times": [float(i) for i in range(robots[addr])],
            "page_requests": len(t),
            "disallowed_page_requests": 0,
            "page_times": t,
        }
        for addr, t in times.items()
    }
    return {"hosts": hosts, "totals": {"page_requests": sum(len(t) for t in times.values())}}


def test_checks_catch_broken_promises() -> None:
    # The checker itself: a second robots.txt request, a short interval, a
    # fetched page on an unreachable host and a task without an answer all show.
    hosts = [Host("allow", HostPlan("allow", pages=3)), Host("500", HostPlan("500", pages=3))]
    addrs = ["127.0.1.1", "127.0.1.2"]
    urls = crawl_urls(["http://127.0.1.1:1", "http://127.0.1.2:1"], hosts)
    outcomes = {u: ("fetched" if h.kind == "allow" else "disallowed") for u, h, _ in urls}
    del outcomes[urls[-1][0]]
    stats = _stats({addrs[0]: [0.0, 0.25, 0.3], addrs[1]: [1.0]}, {addrs[0]: 2, addrs[1]: 1})
    result = Drive(outcomes, {}, 1.0, 1, True)
    checks = check_crawl(stats, hosts, addrs, urls, result, delay=0.2, policy=FetchPolicy())
    assert checks.robots_wrong == ["127.0.1.1 (allow): 2"]
    assert checks.pacing_violations == 1
    assert checks.disallowed_fetched == 1
    assert checks.definite == len(urls) - 1
    assert len(checks.problems()) == 4
    # An unreachable robots.txt asked again after its back-off is the policy.
    stats = _stats({addrs[0]: [0.0, 0.25, 0.5], addrs[1]: []}, {addrs[0]: 1, addrs[1]: 2})
    stats["hosts"][addrs[1]]["robots_times"] = [0.0, 10.5]  # type: ignore[index]
    outcomes = {u: ("fetched" if h.kind == "allow" else "disallowed") for u, h, _ in urls}
    checks = check_crawl(stats, hosts, addrs, urls, Drive(outcomes, {}, 1.0, 0, True),
                         delay=0.2, policy=FetchPolicy())
    assert checks.problems() == []
    assert checks.refetches_after_backoff == 1


@pytest.mark.slow
async def test_crawl_keeps_every_promise() -> None:
    # 40 hosts (one per fault scenario, one whose robots.txt outlasts the
    # timeout, the rest partial/allow/crawl_delay) x 50 pages: 2,000 tasks at once.
    hosts = crawl_hosts(40, pages=50, delay=DELAY, timeout=TIMEOUT)
    cfg = CrawlConfig(hosts=40, pages=50, concurrency=2_000, delay=DELAY, timeout=TIMEOUT)
    bound = cfg.bound(hosts)
    async with BenchServer([h.plan for h in hosts]) as server:
        base_urls = [server.base_url(i) for i in range(len(hosts))]
        t0 = time.monotonic()
        result, urls, gate_stats = await crawl_robotgate(base_urls, hosts, cfg)
        took = time.monotonic() - t0
        stats = server.stats_json(log=False)
    checks = check_crawl(stats, hosts, server.hosts, urls, result, delay=DELAY,
                         policy=cfg.policy())
    assert checks.problems() == []
    # 1. one robots.txt request per origin (all tasks ask within the first back-off)
    assert checks.robots_min == checks.robots_max == 1
    assert gate_stats["robots_requests"] == len(hosts)
    # 2. no disallowed page reached the server, and every allowed one did
    assert checks.disallowed_fetched == 0
    assert checks.allowed_skipped == 0
    # 3. no two page requests to a host closer than its interval, at the server
    assert checks.pacing_violations == 0
    assert checks.pacing_hosts_checked >= len(hosts) - len(UNREACHABLE)
    # 8. a definite answer for every task, robots.txt verdicts within the timeout
    # (plus the loop's own stalls), and the run ended by itself within its bound
    assert checks.definite == checks.tasks == len(urls) >= 2_000
    assert checks.unanswered == 0 and checks.errors == {}
    assert checks.slowest_fault_verdict is not None
    assert checks.slowest_fault_verdict <= TIMEOUT + 1.0 + (checks.max_loop_lag or 0.0)
    assert checks.ended_by_itself and took < bound


@pytest.mark.slow
async def test_burst_on_one_host_with_slow_robots() -> None:
    # Where the alternatives break: 500 tasks at once on one host whose
    # robots.txt answers after 1 s, 20 % of the pages disallowed.
    host = Host("slow", HostPlan("slow", pages=500, slow_seconds=1.0))
    cfg = CrawlConfig(hosts=1, pages=500, concurrency=500, delay=0.0, timeout=3.0)
    async with BenchServer([host.plan]) as server:
        result, urls, _ = await crawl_robotgate([server.base_url(0)], [host], cfg)
        stats = server.stats_json(log=False)
    checks = check_crawl(stats, [host], server.hosts, urls, result, delay=0.0,
                         policy=cfg.policy())
    assert checks.problems() == []
    assert checks.robots_max == 1
    assert checks.disallowed_fetched == 0
    assert checks.pages_fetched == sum(not p.startswith("/private/") for p in page_paths(500))
