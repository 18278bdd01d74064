"""The disk store on loopback: restarts of a 10,000-origin crawl, and what the store costs.

    python benchmarks/store_bench.py [--hosts 10000] [--page] [--reference] [--cost-hosts 1000]
                                     [--pages 2] [--rounds 10] [--json PATH]

The loopback server (``testbed/server.py``, its CLI) runs in a child
process with ``--hosts N`` hosts on 127.0.X.Y, every one serving a robots.txt
with ETag and Last-Modified that disallows ``/private/``.  Two phases:

restart   Each run is a new gate on a new store object, as a new process would
          open it, and asks every origin twice (``/page/1`` allowed,
          ``/private/4`` not); with ``--page`` it also fetches one page:

          cold (memory)   with ``--reference``: the same start on a MemoryStore;
          fill (SQLite)   an empty file: one robots.txt request per origin;
          warm (SQLite)   the same file: every entry fresh, 0 robots.txt requests;
          stale (SQLite)  ``fresh_until`` rewritten into the past in the file:
                          every entry revalidated with a conditional request,
                          all answered 304 (no body sent again).

          Counts come from the server.  With ``--page`` the host visit counts
          must carry over from run to run (1, 2, 3).
cost      The same gate settings over MemoryStore and SQLiteStore, same run,
          rounds interleaved: ``gate.fetch`` pages/s (delay 0) on the first
          ``--cost-hosts`` origins, and ``allowed()`` decisions/s on cached
          origins.  Both as wall-clock rates and as the process CPU time per
          operation (this process, the SQLite thread included).  Other work on
          a shared machine only adds time, so each store's best round is shown,
          and its ratio (SQLite / memory) beside the median of the per-round
          ratios.  The store only enters ``allowed()`` on an origin's first ask
          (or a refresh), so on cached origins the two must come out equal:
          how far apart they come is the noise of the run.

Progress goes to stderr, the table to stdout, everything as JSON to ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from benchmarks.harness.report import command_line, write_json
from robotgate import MemoryStore, RobotGate, SQLiteStore, Store
from testbed.server import ServerProcess

AGENT = "StoreBench/1.0 (+https://example.com/bot)"


def say(text: str) -> None:
    print(f"[store_bench] {text}", file=sys.stderr, flush=True)


# -- the server in a child process -------------------------------------------------


async def drive(items: Sequence[str], job: Callable[[str], Awaitable[None]],
                concurrency: int) -> float:
    """Run ``job`` over ``items`` with ``concurrency`` workers; the wall time taken."""
    feed = iter(items)

    async def worker() -> None:
        for item in feed:
            await job(item)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(items)))))
    return time.perf_counter() - t0


# -- phase 1: restarts -----------------------------------------------------------------


def make_stale(path: Path) -> int:
    """Move every stored entry's freshness into the past, as time would; rows changed."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        return conn.execute("UPDATE robots SET fresh_until = fetched_at").rowcount
    finally:
        conn.close()


async def restart_run(
    name: str, server: ServerProcess, bases: Sequence[str], store: Store, visits: int | None,
    concurrency: int,
) -> dict[str, Any]:
    """A new gate on ``store``: ask every origin twice (and, when ``visits`` is given,
    fetch one page and check the host's visit count); server-side counts."""
    before = await server.totals()
    # force_close: 10,000 idle keep-alive connections would exhaust the server's files.
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=2.0))
    gate = RobotGate(AGENT, delay=0, store=store, session=session)
    wrong = {"verdicts": 0, "visits": 0, "pages": 0}

    async def one(base: str) -> None:
        if not await gate.allowed(base + "/page/1") or await gate.allowed(base + "/private/4"):
            wrong["verdicts"] += 1
        if visits is None:
            return
        resp = await gate.fetch(base + "/page/0")
        resp.release()
        if resp.status != 200:
            wrong["pages"] += 1
        state = gate.host_state(base)
        if state is None or state.visits != visits:
            wrong["visits"] += 1

    try:
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        await gate.open()
        work = await drive(bases, one, concurrency)
        t1 = time.perf_counter()
        await gate.close()  # writes the host states still batched
        close = time.perf_counter() - t1
        cpu = time.process_time() - cpu0
    finally:
        await gate.close()
        await session.close()
    after = await server.totals()
    delta = {k: after[k] - before[k] for k in after}
    return {
        "run": name,
        "store": type(store).__name__,
        "origins": len(bases),
        "robots_requests": delta["robots_requests"],
        "robots_304": delta["robots_304"],
        "robots_200": delta["robots_requests"] - delta["robots_304"],
        "page_requests": delta["page_requests"],
        "gate_robots_requests": gate.stats["robots_requests"],
        "wrong_verdicts": wrong["verdicts"],
        "wrong_visits": wrong["visits"],
        "failed_pages": wrong["pages"],
        "seconds": t1 - t0,
        "work_seconds": work,
        "close_seconds": close,
        "cpu_seconds": cpu,
    }


async def restarts(
    server: ServerProcess, workdir: Path, origins: int, concurrency: int, page: bool,
    reference: bool,
) -> dict[str, Any]:
    path = workdir / "restart.sqlite3"
    bases = server.base_urls[:origins]
    n = len(bases)
    runs: list[dict[str, Any]] = []
    say(f"restart: cold, memory store, {n:,} origins")

    async def one_run(name: str, store: Store, visits: int) -> None:
        run = await restart_run(name, server, bases, store, visits if page else None,
                                concurrency)
        runs.append(run)

    if reference:
        await one_run("cold (memory)", MemoryStore(), 1)
    say("restart: fill an empty SQLite file")
    await one_run("fill (SQLite)", SQLiteStore(path), 1)
    say("restart: warm file, every entry fresh")
    await one_run("warm (SQLite)", SQLiteStore(path), 2)
    stale = make_stale(path)
    say(f"restart: {stale:,} entries made stale in the file")
    await one_run("stale (SQLite)", SQLiteStore(path), 3)
    fill, warm, old = runs[-3:]
    checks = {
        "fill: one robots.txt request per origin": fill["robots_requests"] == n,
        "warm: 0 robots.txt requests": warm["robots_requests"] == 0,
        "stale: every origin revalidated": old["robots_requests"] == n,
        "stale: only 304s (no body refetched)": old["robots_200"] == 0 and old["robots_304"] == n,
        "verdicts unchanged": all(r["wrong_verdicts"] == 0 for r in runs),
    }
    if page:
        checks["host visits carried over (1, 2, 3)"] = all(r["wrong_visits"] == 0 for r in runs)
        checks["every page fetched"] = all(r["failed_pages"] == 0 for r in runs)
    return {
        "origins": n,
        "page_per_origin": page,
        "concurrency": concurrency,
        "entries_made_stale": stale,
        "file_bytes": sum(
            p.stat().st_size for p in workdir.iterdir() if p.name.startswith(path.name)
        ),
        "runs": runs,
        "checks": checks,
    }


# -- phase 2: the cost of the store ----------------------------------------------------


async def cost(
    server: ServerProcess, workdir: Path, hosts: int, pages: int, rounds: int,
    concurrency: int, tasks: int, per_task: int, allowed_rounds: int,
) -> dict[str, Any]:
    bases = server.base_urls[:hosts]
    # Page p of every host, then page p+1: consecutive requests go to different hosts.
    urls = [f"{b}/page/{p}" for p in range(1, pages + 1) for b in bases]
    asks = [b + path for path in ("/page/7", "/private/4", "/page/8", "/page/9") for b in bases]
    gates = {
        "memory": RobotGate(AGENT, delay=0, store=MemoryStore()),
        "sqlite": RobotGate(AGENT, delay=0, store=SQLiteStore(workdir / "cost.sqlite3")),
    }
    fetch_rate: dict[str, list[float]] = {k: [] for k in gates}
    fetch_cpu: dict[str, list[float]] = {k: [] for k in gates}
    ask_rate: dict[str, list[float]] = {k: [] for k in gates}
    ask_cpu: dict[str, list[float]] = {k: [] for k in gates}
    failed = {k: 0 for k in gates}
    try:
        for name, gate in gates.items():
            await gate.open()
            say(f"cost: warm-up of the {name} gate (robots.txt cached, connections open)")

            async def warm(url: str, gate: RobotGate = gate) -> None:
                (await gate.fetch(url)).release()

            await drive([f"{b}/page/0" for b in bases], warm, concurrency)
        order = list(gates)
        for r in range(rounds):
            for name in order[r % 2:] + order[: r % 2]:
                gate = gates[name]
                say(f"cost: gate.fetch round {r + 1}/{rounds}, {name}: {len(urls):,} pages")

                async def fetch(url: str, gate: RobotGate = gate, name: str = name) -> None:
                    resp = await gate.fetch(url)
                    resp.release()
                    if resp.status != 200:
                        failed[name] += 1

                gc.collect()
                cpu0 = time.process_time()
                t0 = time.perf_counter()
                await drive(urls, fetch, concurrency)
                # The batched host-state writes are part of the cost: none left over
                # to run during the next measurement.
                await gate.store.flush()
                wall = time.perf_counter() - t0
                fetch_cpu[name].append((time.process_time() - cpu0) / len(urls) * 1e6)
                fetch_rate[name].append(len(urls) / wall)
        # allowed() on cached origins, after the fetches (nothing batched remains).
        for r in range(allowed_rounds):
            for name in order[r % 2:] + order[: r % 2]:
                gate = gates[name]
                say(f"cost: allowed() round {r + 1}/{allowed_rounds}, {name}")

                async def ask(start: int, gate: RobotGate = gate) -> None:
                    n = len(asks)
                    for k in range(per_task):
                        await gate.allowed(asks[(start + k * 7919) % n])

                gc.collect()
                cpu0 = time.process_time()
                t0 = time.perf_counter()
                await asyncio.gather(*(ask(i * 131) for i in range(tasks)))
                wall = time.perf_counter() - t0
                ask_cpu[name].append((time.process_time() - cpu0) / (tasks * per_task) * 1e6)
                ask_rate[name].append(tasks * per_task / wall)
        robots = {k: g.stats["robots_requests"] for k, g in gates.items()}
    finally:
        for gate in gates.values():
            await gate.close()

    def summary(values: dict[str, list[float]], higher_is_better: bool) -> dict[str, Any]:
        # Other work on the machine only ever adds time, so the best round is the
        # closest to the intrinsic cost; the two stores of one round ran back to
        # back, so their ratio is a second estimate, less exposed to drift.
        best = {k: (max(v) if higher_is_better else min(v)) for k, v in values.items()}
        paired = [s / m for m, s in zip(values["memory"], values["sqlite"], strict=True)]
        return {
            "rounds": values, "best": best,
            "median": {k: statistics.median(v) for k, v in values.items()},
            "ratio_best": best["sqlite"] / best["memory"],
            "ratio_paired_median": statistics.median(paired),
        }

    return {
        "hosts": hosts, "pages_per_host": pages, "requests_per_round": len(urls),
        "concurrency": concurrency, "rounds": rounds, "allowed_rounds": allowed_rounds,
        "allowed_tasks": tasks, "decisions_per_task": per_task,
        "fetch_pages_per_s": summary(fetch_rate, True),
        "fetch_cpu_us_per_page": summary(fetch_cpu, False),
        "allowed_per_s": summary(ask_rate, True),
        "allowed_cpu_us_per_decision": summary(ask_cpu, False),
        "failed_pages": failed,
        "robots_requests": robots,
    }


# -- report ------------------------------------------------------------------------------


def render(report: dict[str, Any]) -> str:
    out: list[str] = []
    m = report["machine"]
    out.append(f"robotgate store benchmark: {m['cpus']} CPUs, Python {m['python']}, "
               f"aiohttp {m['aiohttp']}, SQLite {m['sqlite']}, load average {m['load']}")
    parts = [f"server start {report['server_start_seconds']:.0f} s"]
    parts += [f"{k} {report[k]['phase_seconds']:.0f} s" for k in ("restart", "cost")
              if k in report]
    out.append(f"{report['seconds']:.0f} s in all ({', '.join(parts)})")
    if "restart" in report:
        r = report["restart"]
        out.append("")
        each = "2 asks + 1 page" if r["page_per_origin"] else "2 asks, robots.txt only"
        out.append(f"restart of a crawl of {r['origins']:,} origins (each: {each}; "
                   f"{r['concurrency']} at once); counts from the server")
        head = (f"{'run':<16}{'robots.txt':>11}{'200':>8}{'304':>8}{'pages':>8}"
                f"{'wrong':>7}{'visits':>8}{'time':>8}{'close':>7}{'origins/s':>11}")
        out.append(head)
        out.append("-" * len(head))
        for run in r["runs"]:
            bad = run["wrong_verdicts"] + run["failed_pages"]
            if not r["page_per_origin"]:
                visits = "-"
            elif run["wrong_visits"] == 0:
                visits = "ok"
            else:
                visits = f"{run['wrong_visits']} bad"
            out.append(
                f"{run['run']:<16}{run['robots_requests']:>11,}{run['robots_200']:>8,}"
                f"{run['robots_304']:>8,}{run['page_requests']:>8,}{bad:>7,}{visits:>8}"
                f"{run['seconds']:>7.1f}s{run['close_seconds']:>6.2f}s"
                f"{run['origins'] / run['seconds']:>11,.0f}"
            )
        out.append(f"file size after the runs: {r['file_bytes'] / 1e6:.1f} MB")
        for what, ok in r["checks"].items():
            out.append(f"  [{'pass' if ok else 'FAIL'}] {what}")
    if "cost" in report:
        c = report["cost"]
        out.append("")
        out.append(f"cost of the store: {c['hosts']:,} cached origins, delay 0, "
                   f"{c['rounds']} interleaved rounds per store for gate.fetch, "
                   f"{c['allowed_rounds']} for allowed()")
        out.append("values: the best round of each store; ratio: of the best rounds "
                   "[median of the per-round ratios]")
        head = f"{'measure':<36}{'MemoryStore':>16}{'SQLiteStore':>16}{'SQLite/memory':>20}"
        out.append(head)
        out.append("-" * len(head))

        def row(label: str, key: str, fmt: str) -> None:
            s = c[key]
            mem, sql = s["best"]["memory"], s["best"]["sqlite"]
            ratio = f"{s['ratio_best']:.3f} [{s['ratio_paired_median']:.3f}]"
            out.append(f"{label:<36}{fmt.format(mem):>16}{fmt.format(sql):>16}{ratio:>20}")

        row(f"gate.fetch pages/s ({c['requests_per_round']:,}/round)", "fetch_pages_per_s",
            "{:,.0f}")
        row("  client CPU per page", "fetch_cpu_us_per_page", "{:,.0f} us")
        row(f"allowed() decisions/s ({c['allowed_tasks']:,} tasks)", "allowed_per_s",
            "{:,.0f}")
        row("  client CPU per decision", "allowed_cpu_us_per_decision", "{:,.2f} us")
        def verdict(key: str, slower_above: bool) -> str:
            ratio = c[key]["ratio_best"]
            ok = ratio <= 1 / 0.9 if slower_above else ratio >= 0.9
            return "met" if ok else "NOT met"

        out.append("goal, SQLite under 10% slower (best rounds): gate.fetch "
                   f"{verdict('fetch_pages_per_s', False)} by wall clock, "
                   f"{verdict('fetch_cpu_us_per_page', True)} by CPU; allowed() "
                   f"{verdict('allowed_per_s', False)} by wall clock, "
                   f"{verdict('allowed_cpu_us_per_decision', True)} by CPU")
        if any(c["failed_pages"].values()):
            out.append(f"  pages not answered 200: {c['failed_pages']}")
    return "\n".join(out)


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "aiohttp": aiohttp.__version__,
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        # Other work on the machine makes wall-clock rates noisy: say how busy it was.
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.monotonic()
    report: dict[str, Any] = {"args": vars(args) | {"json": str(args.json)}, "machine": machine()}
    hosts = max(args.hosts, args.cost_hosts)
    server = ServerProcess()
    try:
        say(f"starting the loopback server with {hosts:,} hosts")
        await server.start(["--hosts", str(hosts), "--mix", "partial=1"], duration=900)
        with tempfile.TemporaryDirectory(prefix="robotgate-store-bench-") as tmp:
            workdir = Path(tmp)
            report["server_start_seconds"] = time.monotonic() - t0
            if not args.skip_restart:
                t1 = time.monotonic()
                report["restart"] = await restarts(server, workdir, args.hosts, args.concurrency,
                                                   args.page, args.reference)
                report["restart"]["phase_seconds"] = time.monotonic() - t1
            if not args.skip_cost:
                t1 = time.monotonic()
                report["cost"] = await cost(
                    server, workdir, args.cost_hosts, args.pages, args.rounds,
                    args.concurrency, args.tasks, args.per_task, args.allowed_rounds,
                )
                report["cost"]["phase_seconds"] = time.monotonic() - t1
    finally:
        await server.close()
    report["seconds"] = time.monotonic() - t0
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--hosts", type=int, default=10_000, help="origins in the restart phase")
    parser.add_argument("--cost-hosts", type=int, default=1_000,
                        help="origins in the cost phase (the first of the server's)")
    parser.add_argument("--pages", type=int, default=2, help="pages per origin and cost round")
    parser.add_argument("--rounds", type=int, default=10, help="gate.fetch rounds per store")
    parser.add_argument("--allowed-rounds", type=int, default=15,
                        help="allowed() rounds per store")
    parser.add_argument("--concurrency", type=int, default=500, help="tasks fetching at once")
    parser.add_argument("--tasks", type=int, default=1_000, help="tasks asking allowed()")
    parser.add_argument("--per-task", type=int, default=50, help="allowed() calls per task")
    parser.add_argument("--page", action="store_true",
                        help="restart runs also fetch one page per origin and check that the "
                        "host visit counts carry over (doubles the restart phase)")
    parser.add_argument("--reference", action="store_true",
                        help="restart phase: also time a cold start on a MemoryStore")
    parser.add_argument("--skip-restart", action="store_true")
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="write the full report as JSON here")
    args = parser.parse_args(argv)
    if min(args.hosts, args.cost_hosts, args.pages, args.rounds, args.allowed_rounds,
           args.concurrency, args.tasks, args.per_task) < 1:
        parser.error("sizes must be at least 1")
    report = asyncio.run(run(args))
    print(render(report))
    print(command_line(argv))
    if args.json is not None:
        write_json(args.json, report)
        say(f"wrote {args.json}")
    checks = report.get("restart", {}).get("checks", {})
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
