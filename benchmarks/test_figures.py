"""The benchmarks' own arithmetic: the overhead ratios, the work charge, callgrind's counts.

The figures in benchmarks/README.md come out of these functions; a wrong sum here would be a
wrong figure there.  (Whether each benchmark still runs is tests/e2e/test_benchmarks.py's.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.stats import parse_callgrind
from benchmarks.overhead import _crawl_details, crawl_marginals, overhead_summary


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
    c = overhead_summary(runs, spec, 2)["contenders"]["gate.fetch"]
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
    w = overhead_summary(runs, spec, 2)["work_charge"]
    assert w["charge"] == pytest.approx(1.75)  # the median of 1.5 and 2.0
    assert w["charge_range"] == pytest.approx([1.5, 2.0])
    assert w["added_us_per_page"] == pytest.approx(17.5)
    # Without its floor in the same round there is nothing to charge.
    assert overhead_summary({"floor+work": runs["floor+work"]}, spec, 2)["work_charge"] is None


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


def test_crawl_marginals_take_each_sizes_fewest_instructions_over_the_extra_requests() -> None:
    def run(instructions: int, requests: int, gc: int = 0, ok: int = 10,
            connect: int = 0) -> dict[str, Any]:
        return {"instructions": instructions, "requests": requests, "pages": 10, "ok": ok,
                "calls": {"_PyObject_GC_Link": gc, "connect": connect}, "compiled_modules": 0}
    runs = {
        # aiohttp: 1,000 pages more cost 1,000,000 instructions more (the fewest of each size).
        "aiohttp": [[run(5_000_000, 500), run(4_900_000, 500)],
                    [run(6_000_000, 1500, 100), run(5_900_000, 1500, 100)]],
        # the gate: 1,200 requests more (robots.txt counted) for 1,500,000 instructions more.
        "gate.fetch": [[run(5_100_000, 600, connect=100), run(5_000_000, 600, connect=100)],
                       [run(6_500_000, 1800, 240, connect=300),
                        run(6_600_000, 1800, connect=420)]],
        "middleware": [[run(5_000_000, 600)], [run(6_000_000, 1800, ok=9)]],
    }
    cs = crawl_marginals(runs)
    assert cs["aiohttp"]["instructions_per_request"] == pytest.approx(1000)
    assert cs["gate.fetch"]["instructions"] == [5_000_000, 6_500_000]
    assert cs["gate.fetch"]["instructions_per_request"] == pytest.approx(1250)
    assert cs["gate.fetch"]["gc_allocations_per_request"] == pytest.approx(0.2)
    assert cs["gate.fetch"]["ratio"] == pytest.approx(0.8)
    # Repeat by repeat: aiohttp 1,000 both times; the gate 1,400,000 then 1,600,000 / 1,200.
    assert cs["gate.fetch"]["ratio_repeats"] == pytest.approx([6 / 7, 0.75])
    # Every run's connections, so that a run which reconnected shows.
    assert cs["gate.fetch"]["connections_all"] == [[100, 100], [300, 420]]
    details = "\n".join(_crawl_details({"hosts": [100, 300], "pages": 5, "concurrency": 100,
                                        "repeats": 2, "contenders": cs}))
    assert "more connections than hosts (reconnects cost instructions): " \
           "gate.fetch: 300 / 420 at 300 hosts" in details
    assert "aiohttp:" not in details
    # A run that missed a page makes no figure.
    assert cs["middleware"] == {"error": "1 pages not fetched"}


def test_fleet_load_reads_each_request_from_tcpdumps_text_and_gaps_per_host() -> None:
    from benchmarks.fleet_load import kernel_figures, requests_seen

    text = """\
1764140000.100000 IP 127.0.0.1.50000 > 127.0.1.1.8080: Flags [P.], seq 1:80, length 79
\t0x0000:  ....E..GET /robots.txt HTTP/1.1
1764140000.150000 IP 127.0.0.1.50001 > 127.0.1.2.8080: Flags [.], ack 1, length 0
1764140000.350000 IP 127.0.0.1.50000 > 127.0.1.1.8080: Flags [P.], seq 80:160, length 80
....E..GET /page/1 HTTP/1.1
Host: 127.0.1.1:8080
1764140000.500000 IP 127.0.0.1.50002 > 127.0.1.1.8080: Flags [P.], seq 1:80, length 79
....E..GET /page/2 HTTP/1.1
1764140000.520000 IP 127.0.0.1.50003 > 127.0.1.2.8080: Flags [P.], seq 1:80, length 79
....E..GET /page/1 HTTP/1.1
""".splitlines()
    seen = requests_seen(text)
    # An acknowledgement carries no request; a request's own lines are read once.
    assert seen == [(1764140000.1, "127.0.1.1.8080", "/robots.txt"),
                    (1764140000.35, "127.0.1.1.8080", "/page/1"),
                    (1764140000.5, "127.0.1.1.8080", "/page/2"),
                    (1764140000.52, "127.0.1.2.8080", "/page/1")]
    page_gap, page_short, any_gap, any_short = kernel_figures(seen, 0.2)
    # Pages: 0.15 s apart on host 1 (one short); robots.txt counted in, 0.25 s before.
    assert page_gap == pytest.approx(0.15) and page_short == 1
    assert any_gap == pytest.approx(0.15) and any_short == 1
    assert kernel_figures(seen, 0.1) == (pytest.approx(0.15), 0, pytest.approx(0.15), 0)


def test_parse_vs_google_says_what_is_missing_and_exits_0(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.parse_vs_google import ENV_SRC, main

    monkeypatch.delenv(ENV_SRC, raising=False)
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "not measured" in out and f"--google-src DIR or set ${ENV_SRC}" in out
    assert main(["--google-src", str(tmp_path)]) == 0
    assert f"no robots.cc and robots.h in {tmp_path}" in capsys.readouterr().out
