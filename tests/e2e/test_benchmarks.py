"""Each benchmark still runs, through its own command line, at a tiny size.

The benchmarks are scripts: these run them as a user does (a child process, from another
directory) and read the JSON they write, so the tests import nothing from ``benchmarks/``.
What is checked is what the figures rest on: every contender fetched every page, the gate's
verdicts equal the parser's, the promises held.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testbed.children import child_env

pytestmark = pytest.mark.slow

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
CORPUS = BENCHMARKS.parents[1] / "shared" / "corpus" / "robots"


def run_benchmark(tmp_path: Path, script: str, *args: str) -> tuple[dict[str, Any], str]:
    """``python benchmarks/SCRIPT ARGS`` in ``tmp_path``: its JSON report and its stdout."""
    out = tmp_path / f"{script}.json"
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args, "--no-progress", "--json", str(out)],
        cwd=tmp_path, env=child_env(None), capture_output=True, text=True, timeout=240)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    # Each names the command line that made its figures.
    assert f"python benchmarks/{script} " in done.stdout
    report: dict[str, Any] = json.loads(out.read_text())
    return report, done.stdout


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
def test_overhead_contenders_fetch_every_page(tmp_path: Path) -> None:
    report, _ = run_benchmark(tmp_path, "overhead.py", "--hosts", "6", "--pages", "3",
                              "--concurrency", "4", "--rounds", "1")
    contenders = report["overhead"]["contenders"]
    assert {"aiohttp", "floor", "floor+work", "gate.fetch", "middleware"} <= set(contenders)
    assert report["overhead"]["errors"] == []
    for name, c in contenders.items():
        assert (c["not_fetched"], c["errors"]) == (0, 0), name
        # robots.txt once per host through the gate and the baseline, never for aiohttp
        assert c["robots_requests"] == (0 if name == "aiohttp" else 6), name
    assert report["overhead"]["work_charge"]["alone_us"] > 0


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")
def test_cached_decisions_agree_with_the_parser(tmp_path: Path) -> None:
    report, _ = run_benchmark(tmp_path, "decisions.py", "--origins", "30", "--per-origin", "10",
                              "--rounds", "1", "--repeats", "1")
    after = report["decisions"]["after"]
    assert after["robots_requests"] == 0  # installed from the store: no network
    assert after["urls"] + after["dropped"] == 300 and after["urls"] >= 290
    assert after["mismatches"] == 0, after["first_mismatch"]
    assert 0 < after["allowed_share"] < 1  # both verdicts occur
    assert {"parser", "allowed"} <= set(after["rates"])


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
def test_promises_hold_in_the_crawl_and_the_burst(tmp_path: Path) -> None:
    report, stdout = run_benchmark(
        tmp_path, "promises.py", "--only", "crawl,burst", "--skip-alternatives", "--hosts", "14",
        "--pages", "3", "--concurrency", "50", "--delay", "0.1", "--timeout", "2",
        "--burst-pages", "50")
    for phase in ("crawl", "burst"):
        gate = report[phase]["results"]["robotgate"]
        assert gate["measured"] and gate["robots_wrong"] == [], phase
        assert gate["disallowed_fetched"] == gate["pacing_violations"] == 0, phase
        assert gate["definite"] == gate["tasks"] > 0, phase
    assert [r for r in report["table"] if r.get("pass") is False] == []
    assert "FAIL" not in stdout


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")
def test_memory_per_origin_is_measured(tmp_path: Path) -> None:
    report, _ = run_benchmark(tmp_path, "memory.py", "--origins", "300")
    memory = report["memory"]
    assert memory["origins"] == 300
    assert memory["rss_cached"] > 0 and memory["rules_bytes"] > 0


def test_report_of_a_crawl_log_says_every_total(tmp_path: Path) -> None:
    report, stdout = run_benchmark(tmp_path, "report.py", "--lines", "3000", "--hosts", "40",
                                   "--before", "HEAD")
    assert report["totals_exact"] and not report["secret_shown"] and report["pass"]
    assert report["written"]["lines"] == 3000 and report["written"]["failed"] > 0
    for run in ("before", "after"):
        figures = report["runs"][run]
        assert figures["peak_rss_mb"] > 0 and figures["html_mb"] > 0, run
    assert "totals exact: True" in stdout


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
def test_page_links_reads_the_links_it_read_before(tmp_path: Path) -> None:
    # Without valgrind (a run under it takes minutes): what the counts rest on, the links.
    report, stdout = run_benchmark(tmp_path, "page_links.py", "--kb", "8", "--loops", "1",
                                   "--repeats", "1", "--readers", "html.parser", "--no-callgrind")
    assert report["same_links_as_before"], stdout
    readers = report["readers"]
    assert set(readers) == {"re.findall", "page_links", "page_links before", "html.parser"}
    assert readers["page_links"]["links"] == readers["page_links before"]["links"] > 0


def test_crawl_directives_reports_each_way(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "crawl_directives.py"), "--pages", "5", "--runs", "1"],
        cwd=tmp_path, env=child_env(None), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "python benchmarks/crawl_directives.py --pages 5 --runs 1" in done.stdout
    rows = {line[:24].strip(): line.split() for line in done.stdout.splitlines()}
    # Five pages read each way; directives read only where something uses them.
    assert rows["no consumer"][-3:-2] == ["0"] and rows["record_directives"][-3:-2] == ["5"]
    assert rows["links (obey_nofollow)"][-3:-2] == ["5"]


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
def test_pages_bench_reads_every_entry_and_holds_none_for_one_walk(tmp_path: Path) -> None:
    # Without valgrind (its directives and sitemap counts take minutes): memory and the index.
    report, stdout = run_benchmark(tmp_path, "pages_bench.py", "--only", "memory,index",
                                   "--urls", "300", "--files", "2")
    assert report["memory"]["robotgate (after)"]["entries"] == 300
    assert report["memory"]["robotgate (after)"]["peak"] > 0
    index = report["index"]
    assert index["robotgate, 1 walk (after)"]["entries"] == [600]
    assert index["robotgate, 2 walks (after)"]["entries"] == [600, 600]
    # One walk: nothing held for another; each file requested once for both walks.
    assert index["robotgate, 1 walk (after)"]["held_entries_max"] == 0
    assert index["robotgate, 2 walks (after)"]["requests"] == 3
    assert "walking the index" in stdout


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
def test_httpx_cold_profiles_each_contender(tmp_path: Path) -> None:
    report, _ = run_benchmark(tmp_path, "httpx_cold.py", "--hosts", "6", "--pages", "2",
                              "--concurrency", "4")
    for kind in ("plain", "gate-cold", "gate-warm"):
        assert report[kind]["cpu_s"] > 0 and report[kind]["profiled_s"], kind
    # The gate's own code shows up where the gate runs, and only there.
    assert "robotgate" in report["gate-cold"]["profiled_s"]
    assert "robotgate" not in report["plain"]["profiled_s"]


def test_httpx_pool_counts_the_turns_a_robots_txt_connection_waits(tmp_path: Path) -> None:
    report, _ = run_benchmark(tmp_path, "httpx_pool.py", "--hosts", "6", "--pages", "5",
                              "--concurrency", "3")
    assert report["plain"]["robots_requests"] == 0
    assert report["plain"]["idle_seen_after_robots"] == 0
    for kind in ("plain-robots", "plain-flight", "gate-cold"):
        assert report[kind]["robots_requests"] == 6, kind
        assert report[kind]["page_requests"] == 24, kind
    # Asked inline, robots.txt hands its connection to the host's page in the same turn;
    # awaited in a task of its own, at least a turn later.
    assert report["plain-robots"]["turns_to_next_request"] == {"0": 6}
    for kind in ("plain-flight", "gate-cold"):
        turns = report[kind]["turns_to_next_request"]
        assert sum(turns.values()) == 6 and "0" not in turns, (kind, turns)


@pytest.mark.soak
def test_httpx_instructions_children_fetch_the_same_pages() -> None:
    # Without valgrind (a run under it takes minutes): the child each count rests on.
    fetched = {}
    for kind in ("plain", "plain-robots", "plain-polite", "plain-flight", "gate-cold",
                 "gate-warm"):
        done = subprocess.run(
            [sys.executable, str(BENCHMARKS / "httpx_instructions.py"), "--child", kind, "2",
             "4", "5", "3"], env=child_env(None), capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-2000:]
        fetched[kind] = json.loads(done.stdout.strip().splitlines()[-1])["pages_a_run"]
    # 4 hosts x 5 pages, one in five disallowed: every contender fetches the 16 others.
    assert set(fetched.values()) == {16}, fetched


def test_decode_instructions_children_decode_each_body_whole() -> None:
    # Without valgrind: the child each count rests on decodes every body to the same text.
    decoded = {}
    for name in ("text 150 B", "text 4 KiB", "gzip of 4 KiB"):
        done = subprocess.run(
            [sys.executable, str(BENCHMARKS / "decode_instructions.py"), "--child", name, "3"],
            env=child_env(None), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        decoded[name] = json.loads(done.stdout.strip().splitlines()[-1])["decoded_bytes"]
    assert decoded == {"text 150 B": 150, "text 4 KiB": 4096, "gzip of 4 KiB": 4096}


def test_browser_cost_measures_each_contender_on_every_page(tmp_path: Path) -> None:
    from tests.support.browser import chromium_path

    pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                        "(pip install 'robotgate[playwright]')")
    pytest.importorskip("crawl4ai", reason="crawl4ai is not installed "
                        "(pip install 'robotgate[crawl4ai]')")
    report, stdout = run_benchmark(tmp_path, "browser_cost.py", "--pages", "2", "--rounds", "1",
                                   "--chromium", chromium_path())
    contenders = {"playwright", "attach", "crawl4ai", "crawl4ai-gate"}
    assert set(report["per_page_cpu_s"]) == contenders
    assert all(len(costs) == 1 and costs[0] > 0 for costs in report["per_page_cpu_s"].values())
    # Every contender was answered every page: the figures are of pages loaded.
    assert report["pages_served"] == report["pages_asked"] == 4 * 3
    assert set(report["ratio_to_plain"]) == {"attach", "crawl4ai-gate"}
    assert "its plain run" in stdout


def test_browser_cost_counts_the_drivers_messages_a_page(tmp_path: Path) -> None:
    from tests.support.browser import chromium_path

    pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                        "(pip install 'robotgate[playwright]')")
    report, _ = run_benchmark(tmp_path, "browser_cost.py", "--pages", "2", "--rounds", "0",
                              "--counts", "--only", "playwright,attach",
                              "--chromium", chromium_path())
    # Every page of the counted crawls was answered.
    assert report["pages_served"] == report["pages_asked"] == 2 * 3
    # One navigation a page; through the gate, each of the page's five requests (the
    # page, its style sheet, its script and two images) fulfilled as well.
    counts = report["counts_a_page"]
    assert counts["playwright"]["sent_by_method"] == {"frame.goto": 1.0}
    assert counts["attach"]["sent_by_method"] == {"frame.goto": 1.0, "route.fulfill": 5.0}
    assert all(told["python_calls"] > 0 and told["bytes_heard"] > 0 for told in counts.values())


def test_browser_bodies_refuses_the_big_answer_and_loads_the_next_page(tmp_path: Path) -> None:
    from tests.support.browser import chromium_path

    pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                        "(pip install 'robotgate[playwright]')")
    pytest.importorskip("psutil", reason="psutil is not installed (pip install psutil)")
    report, _ = run_benchmark(tmp_path, "browser_bodies.py", "--mib", "80",
                              "--chromium", chromium_path())
    after = report["results"]["after"]
    assert "ERR_BLOCKED_BY_CLIENT" in after["big"], after  # past attach's 64 MiB
    assert after["next_page"] == 200 and after["driver_alive_after"], after
    assert after["rss_before"] > 0 and after["rss_peak_during"] > 0, after


def test_million_origins_allows_and_fetches_every_origin_within_the_connection_bound(
        tmp_path: Path) -> None:
    report, _ = run_benchmark(tmp_path, "million_origins.py", "--origins", "200",
                              "--samples", "2", "--concurrency", "16", "--max-origins", "50")
    allowed, crawl = report["allowed"], report["crawl"]
    assert (allowed["allowed"], allowed["robots_requests"]) == (200, 200)
    assert (crawl["pages"], crawl["unreachable"], crawl["errors"]) == (200, 0, 0)
    for part in (allowed, crawl):
        assert part["nofile_limit"] == 1024
        assert all(s["connections"] <= part["max_connections"] for s in part["samples"])


@pytest.mark.soak
def test_opcodes_counts_each_trees_functions_of_a_request(tmp_path: Path) -> None:
    src = str(BENCHMARKS.parent / "src")
    report, out = run_benchmark(tmp_path, "opcodes.py", "--before-src", src,
                                "--cg-hosts", "2,4", "--only", "middleware,gate.fetch")
    for name in ("middleware", "gate.fetch"):
        for tree in (name, name + " (before)"):
            counts = report["per_request"][tree]
            # start-up cancels out between the sizes: the client is made once in each
            assert counts["robotgate/gate/aiohttp_client.py:__init__"] == 0, tree
            # the adapters' Python functions, named alike in either tree, are counted
            # (a compiled wheel's modules are not)
            assert any(n.startswith("robotgate/gate/") and c > 0 for n, c in counts.items())
            assert sum(counts.values()) > 1000, tree
        assert f"{name}: " in out
