"""The gate's promises under load on loopback, beside the alternatives.

    python benchmarks/promises.py [--quick] [--only crawl,burst,limits] [--skip-alternatives]
        [--hosts 200] [--pages 50] [--concurrency 10000] [--delay 0.2] [--timeout 5]
        [--json benchmarks/results/promises.json]

The loopback server (:mod:`testbed.server`) runs in a child process, so it has one core and the
client the other; every request goes to 127.0.0.0/8.  The checks on the server's records are
:mod:`testbed.crawl`'s, the ones ``tests/e2e/test_load_small.py`` asserts.  A progress line goes
to stderr, the tables to stdout, everything as JSON to ``--json``.  Every phase is bounded in
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
          between page requests per host (the smallest too) against
          max(D, Crawl-delay), a definite answer (page or Disallowed) per
          task, the slowest verdict on an unreachable robots.txt, and the end
          within a bound.  Scrapy and crawlee stop themselves after
          max(20 s, robotgate's time) + 5 s and report what they answered.
burst     (figure 7) one host, 1,000 tasks at once, robots.txt after 2 s, 20 %
          of the pages disallowed, delay 0, 8 requests in flight.
limits    (issue 14) 10 hosts on two ports each (two origins, one server),
          delay 0.2 s: the smallest interval per host at the server; and a
          server letting one request per 0.2 s through (429 without
          Retry-After beyond), 50 pages at once: the share of 429s.
          robotgate (and pace_by="origin"), the baseline, Scrapy, crawlee.

Caveats: timings on a shared 2-core machine are noisy; the server's arrival times stand for what
a site would see.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` and `testbed.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from benchmarks.baselines import HandRolled, RobotsDenied, alternative_available
from benchmarks.harness import RESULTS, ROOT, connector
from benchmarks.harness.children import raise_nofile
from benchmarks.harness.progress import Progress, measured
from benchmarks.harness.report import IMPLS, Row, finish, fmt_int, md
from robotgate import RobotGate
from testbed.crawl import (
    FROM,
    USER_AGENT,
    CrawlChecks,
    CrawlConfig,
    Drive,
    Fetch,
    Host,
    check_crawl,
    crawl_hosts,
    crawl_robotgate,
    crawl_urls,
    drive,
    gate_fetcher,
)
from testbed.server import SCENARIOS, HostPlan, ServerProcess, stop_process

PHASES = ("crawl", "burst", "limits")
HAVE_PROTEGO = alternative_available("protego")[0]



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
    limit_delay: float = 0.2
    limit_pages: int = 50
    rate_limit: float = 0.2
    alternatives: bool = True
    alt_time_factor: float = 1.0
    phases: tuple[str, ...] = PHASES


def baseline_fetcher(crawler: HandRolled) -> Fetch:
    async def fetch(url: str) -> str:
        try:
            status = await crawler.fetch(url)
        except RobotsDenied:
            return "disallowed"
        return "fetched" if status == 200 else f"status {status}"

    return fetch



async def crawl_baseline(
    base_urls: Sequence[str], hosts: Sequence[Host], cfg: CrawlConfig,
    progress: Progress | None = None,
) -> tuple[Drive, list[tuple[str, Host, str]], dict[str, int]]:
    urls = crawl_urls(base_urls, hosts)
    async with aiohttp.ClientSession(connector=connector()) as session:
        crawler = HandRolled(session, USER_AGENT, delay=cfg.delay, per_origin=cfg.per_origin,
                             timeout=cfg.timeout)
        result = await drive([u for u, _, _ in urls], baseline_fetcher(crawler), cfg.concurrency,
                             cfg.bound(hosts), progress.answered if progress else None)
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
            drive_result, urls, _ = await crawl_robotgate(server.base_urls, hosts, cfg,
                                                             progress.answered)
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
            return await drive(urls, gate_fetcher(gate), len(urls), bound, progress.answered), ""
    if impl == "baseline":
        if not HAVE_PROTEGO:
            return None, "Protego not installed"
        async with aiohttp.ClientSession(connector=connector()) as session:
            crawler = HandRolled(session, USER_AGENT, delay=delay, timeout=10)
            result = await drive(urls, baseline_fetcher(crawler), len(urls), bound,
                                 progress.answered)
            return result, ""
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



def _kind_counts(hosts: Sequence[Host]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for h in hosts:
        counts[h.kind] = counts.get(h.kind, 0) + 1
    return counts



async def run(sizes: Sizes, progress: Progress) -> dict[str, Any]:
    """Every phase in ``sizes.phases``; the report."""
    raise_nofile()

    async def measure() -> dict[str, Any]:
        report: dict[str, Any] = {}
        with tempfile.TemporaryDirectory(prefix="robotgate-promises-") as tmp:
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
            if "limits" in sizes.phases:  # issue 14: per host, 429 share
                report["limits"] = await limits(sizes, workdir, progress)
        return report

    return await measured(progress, dataclasses.asdict(sizes), measure)


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
                     "values": per(lambda r: fmt_int(r["disallowed_fetched"])),
                     "goal": "0", "pass": ok and gate["disallowed_fetched"] == 0})
        rows.append({"figure": "  allowed pages not fetched",
                     "values": per(lambda r: fmt_int(r["allowed_skipped"])),
                     "goal": "0", "pass": ok and gate["allowed_skipped"] == 0})
        if paced:
            rows.append({"figure": f"3 intervals below the delay ({cfg['delay']:g} s)",
                         "values": per(lambda r: fmt_int(r["pacing_violations"])),
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
                         "goal": "", "pass": None})  # how busy the machine is: a figure
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
                     "values": per(lambda r: fmt_int(r["pages_per_s"])), "goal": "",
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
    return rows


def render_details(report: dict[str, Any]) -> str:
    """The detail tables (Markdown), ready for benchmarks/README.md."""
    out: list[str] = []
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
        out += md(["implementation", f"smallest interval per host (delay {lim['delay']:g} s)",
                    "intervals below the delay", "robots.txt requests per host (2 origins)",
                    f"429 share ({lim['rate_pages']} pages, 1 per {lim['rate_limit']:g} s)"], body)
    return "\n".join(out)


def alternative_notes(report: dict[str, Any]) -> dict[str, list[str]]:
    """What Scrapy and crawlee said of their runs (a version, or why they did not run)."""
    notes: dict[str, list[str]] = {}
    for section in ("crawl", "burst"):
        for impl in ("scrapy", "crawlee"):
            r = report.get(section, {}).get("results", {}).get(impl)
            if r is not None and r.get("note"):
                notes.setdefault(impl, []).append(f"{section}: {r['note']}")
    return notes


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
    ap.add_argument("--rate-limit", type=float, default=d.rate_limit,
                    help="limits: seconds per request the rate-limited server lets through")
    ap.add_argument("--alt-time-factor", type=float, default=d.alt_time_factor,
                    help="Scrapy/crawlee are stopped after this many times robotgate's "
                         "crawl time (at least 20 s), plus 5 s to start")
    ap.add_argument("--skip-alternatives", action="store_true",
                    help="skip Scrapy and crawlee (the hand-rolled baseline still runs)")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--only", default=",".join(PHASES),
                    help=f"comma-separated phases to run (default: all of {','.join(PHASES)})")
    ap.add_argument("--json", type=Path, default=RESULTS / "promises.json",
                    help="write the results here")
    ap.add_argument("--no-progress", action="store_true")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    sizes = Sizes(
        hosts=args.hosts, pages=args.pages, concurrency=args.concurrency, delay=args.delay,
        timeout=args.timeout, burst_pages=args.burst_pages,
        burst_per_origin=args.burst_per_origin, rate_limit=args.rate_limit,
        alternatives=not args.skip_alternatives, alt_time_factor=args.alt_time_factor,
        phases=tuple(p for p in PHASES if p in args.only.split(",")),
    )
    if args.quick:
        sizes = dataclasses.replace(sizes, hosts=40, pages=10, concurrency=400, delay=0.1,
                                    timeout=2.0, burst_pages=200, limit_pages=20)
    if sizes.hosts < len(SCENARIOS) + 1:
        print(f"--hosts must be at least {len(SCENARIOS) + 1}", file=sys.stderr)
        return 2
    report = asyncio.run(run(sizes, Progress(enabled=not args.no_progress)))
    return finish(report, table_rows(report), render_details(report), args.json, argv,
                  notes=alternative_notes(report))


if __name__ == "__main__":
    sys.exit(main())
