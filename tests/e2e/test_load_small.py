"""The load benchmark's correctness checks (figures 1, 2, 3 and 8) at a small size.

``benchmarks/load.py`` runs them at 10,000 tasks; here the same crawl code and
the same checks run against an in-process loopback server: every fault
scenario, 2,000 tasks at once, a delay, and robots.txt single-flight, no
disallowed page at the server, no interval below the delay, a definite answer
for every task, and an end within a bound.  The overhead and decisions
harnesses run at a tiny size too: every contender fetches every page, and
the gate's verdicts equal the parser's.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.load import (
    CORPUS,
    OVERHEAD_CONTENDERS,
    SLOW_TIMEOUT,
    UNREACHABLE,
    CrawlConfig,
    Drive,
    Host,
    _overhead_summary,
    check_crawl,
    crawl_hosts,
    crawl_robotgate,
    crawl_urls,
    decisions_child,
    must_skip,
    overhead_child,
    parse_callgrind,
)
from robotgate import FetchPolicy
from tests.support.server import SCENARIOS, BenchServer, HostPlan, page_paths

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


async def test_overhead_contenders_fetch_every_page() -> None:
    # Cold runs as the overhead phase makes them, 6 hosts x 3 pages.
    async with BenchServer([HostPlan("partial")] * 6) as server:
        spec = {"base_urls": [server.base_url(i) for i in range(6)], "pages": 3,
                "concurrency": 4}
        for name in OVERHEAD_CONTENDERS:
            server.reset()
            out = await overhead_child(name, spec)
            assert (out["ok"], out["errors"], out["pages"]) == (18, 0, 18), name
            totals = server.stats_json(times=False, log=False)["totals"]
            assert totals["page_requests"] == 18
            # robots.txt once per host through the gate and the baseline, never for aiohttp
            assert totals["robots_requests"] == (0 if name == "aiohttp" else 6)
            assert out["cpu"] > 0 and len(out["gc_collections"]) == 3
            # Only the calibration measures its work alone, and that work costs something.
            assert ("work_alone_us" in out) == (name == "floor+work")
            assert out.get("work_alone_us", 1.0) > 0


def test_pooled_ratio_weighs_each_round_by_its_time() -> None:
    def run(name: str, r: int, elapsed: float) -> dict[str, Any]:
        return {"name": name, "round": r, "pages": 10, "ok": 10, "errors": 0,
                "elapsed": elapsed, "cpu": elapsed, "server_requests": 100,
                "server_robots": 0, "gc_collections": [0, 0, 0], "gc_collected": 0,
                "gc_seconds": 0.0, "robotgate": ""}
    # aiohttp 1 s both rounds; the gate 1 s, then 3 s: ratios 1.0 and 1/3.
    runs = {"aiohttp": [run("aiohttp", 0, 1.0), run("aiohttp", 1, 1.0)],
            "gate.fetch": [run("gate.fetch", 0, 1.0), run("gate.fetch", 1, 3.0)]}
    spec = {"base_urls": ["http://a"], "pages": 10, "concurrency": 1}
    c = _overhead_summary(runs, spec, 2)["contenders"]["gate.fetch"]
    assert c["ratio"] == pytest.approx(2 / 3)  # the median of 1 and 1/3
    assert c["pooled_ratio"] == pytest.approx(0.5)  # 200 requests in 4 s against 2 s


def test_work_charge_is_added_cpu_over_the_work_alone_in_the_same_round() -> None:
    def run(name: str, r: int, cpu: float, alone: float | None = None) -> dict[str, Any]:
        out = {"name": name, "round": r, "pages": 1000, "ok": 1000, "errors": 0,
               "elapsed": 1.0, "cpu": cpu, "server_requests": 1000, "server_robots": 0,
               "gc_collections": [0, 0, 0], "gc_collected": 0, "gc_seconds": 0.0,
               "robotgate": ""}
        if alone is not None:
            out["work_alone_us"] = alone
        return out
    # Round 0: 10 us of work alone adds 15 us a page (0.015 s over 1,000 pages); round 1:
    # 20 us a page over a slower floor.  Paired by round, not floor+work over any floor.
    runs = {"floor": [run("floor", 0, 0.100), run("floor", 1, 0.200)],
            "floor+work": [run("floor+work", 1, 0.220, 10.0), run("floor+work", 0, 0.115, 10.0)]}
    spec = {"base_urls": ["http://a"], "pages": 1000, "concurrency": 1}
    w = _overhead_summary(runs, spec, 2)["work_charge"]
    assert w["charge"] == pytest.approx(1.75)  # the median of 1.5 and 2.0
    assert w["charge_range"] == pytest.approx([1.5, 2.0])
    assert w["added_us_per_page"] == pytest.approx(17.5)
    # Without its floor in the same round there is nothing to charge.
    assert _overhead_summary({"floor+work": runs["floor+work"]}, spec, 2)["work_charge"] is None


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")
async def test_cached_decisions_agree_with_the_parser() -> None:
    out = await decisions_child(CORPUS, origins=30, per_origin=10, rounds=1)
    assert out["robots_requests"] == 0  # installed from the store: no network
    assert out["urls"] + out["dropped"] == 300 and out["urls"] >= 290
    assert out["mismatches"] == 0, out["first_mismatch"]
    assert 0 < out["allowed_share"] < 1  # both verdicts occur
    assert set(out["rates"]) >= {"parser", "allowed"}


def test_callgrind_output_is_read(tmp_path: Path) -> None:
    # Compressed names ("(id) name", then "(id)"), calls and inclusive costs.
    text = """events: Ir
fn=(1) main
0 10
cfn=(2) _PyObject_GC_Link
calls=3 0
0 30
cfn=(3) gc_collect_main
calls=1 0
0 500
fn=(4) other
0 5
cfn=(2)
calls=2 0
0 20
totals: 565
"""
    path = tmp_path / "cg.out"
    path.write_text(text)
    got = parse_callgrind(path)
    assert got["instructions"] == 565
    assert got["calls"]["_PyObject_GC_Link"] == 5
    assert got["inclusive"]["gc_collect_main"] == 500


def test_callgrind_output_with_simulated_caches_is_read(tmp_path: Path) -> None:
    # --cache-sim: several events a line, Ir first; trailing zeros left out.
    text = """events: Ir I1mr D1mr Bcm Bim
fn=(1) main
0 10 1 2
cfn=(3) gc_collect_main
calls=1 0
0 500 7 0 3 4
totals: 510 8 2 3 4
"""
    path = tmp_path / "cg.out"
    path.write_text(text)
    got = parse_callgrind(path)
    assert got["instructions"] == 510
    assert got["inclusive"]["gc_collect_main"] == 500
    assert got["events"] == {"Ir": 510, "I1mr": 8, "D1mr": 2, "Bcm": 3, "Bim": 4}
