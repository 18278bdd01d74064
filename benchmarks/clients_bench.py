"""What robotgate costs inside the clients people crawl with: Scrapy and httpx, on loopback.

    python benchmarks/clients_bench.py [--hosts 200] [--pages 5] [--concurrency 64]
                                       [--rounds 2] [--only scrapy,httpx] [--json PATH]

The loopback server (``testbed/server.py``) runs in a child process with
``--hosts`` hosts whose robots.txt disallows ``/private/``; each contender asks
for the same ``hosts x pages`` URLs (one in five under ``/private/``) with no
delay, and the server counts what arrives.  Pages/s is the server's count of
page requests over the span from the contender's first request (robots.txt
included) to its last page, so process start-up is left out.

scrapy  one Scrapy process per run: ``robots-off`` (ROBOTSTXT_OBEY = False),
        ``RobotsTxtMiddleware`` (Scrapy's own, the baseline) and
        ``RobotGateMiddleware`` (ROBOTGATE_DELAY = 0, one request in flight
        per host, Scrapy's CONCURRENT_REQUESTS = --concurrency);
httpx   in this process: plain ``httpx.AsyncClient`` (no robots.txt at all,
        the baseline), plain httpx asking each host's robots.txt once before its
        first page (*plain-robots*: the requests a cold gate makes, nothing
        parsed; *plain-polite*: the same with one request per host in flight,
        as the gate; *plain-flight*: robots.txt asked in a task of its own that
        every asker of the host awaits, the single flight the gate keeps so
        that a cancelled asker cannot cancel the fetch), and the same client
        over ``RobotGateTransport`` (delay 0, one request per host in flight)
        *cold* (a new gate: robots.txt fetched during the run) and *warm* (the
        same gate again).

Runs interleave the contenders; a ratio is contender/baseline in the same
round, and the table shows the median over rounds, for pages/s and for the
client's CPU time per page fetched (this process for httpx, the Scrapy child
for Scrapy: steadier than wall-clock rates on a shared machine).  Every run is also checked
on the server: robots.txt requests per host, disallowed pages fetched.
Timings on a shared machine are noisy: compare within a run only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.report import command_line, write_json
from testbed.server import HostPlan, ServerProcess, is_disallowed, page_paths

ROOT = Path(__file__).resolve().parents[1]
USER_AGENT = "RobotGateBench/1.0 (+https://example.invalid/bench)"
RUNNER = "testbed.scrapy_crawl_runner"
SCRAPY_CONTENDERS = ("robots-off", "RobotsTxtMiddleware", "RobotGateMiddleware")
HTTPX_CONTENDERS = ("plain", "plain-robots", "plain-polite", "plain-flight", "gate-cold",
                    "gate-warm")


def urls_of(base_urls: Sequence[str], pages: int) -> list[str]:
    """Every host's pages, host after host interleaved (page 0 of each, then page 1...)."""
    paths = page_paths(pages)
    return [base + path for path in paths for base in base_urls]


def _cpu() -> float:
    """CPU seconds of this process and of its reaped children (the Scrapy runs)."""
    own = time.process_time()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + kids.ru_utime + kids.ru_stime


async def measure(server: ServerProcess, run: Callable[[], Awaitable[str]]) -> dict[str, Any]:
    """Reset the server, run a contender, and read what the server saw."""
    await server.reset()
    t0 = time.monotonic()
    cpu0 = _cpu()
    note = await run()
    cpu = _cpu() - cpu0
    wall = time.monotonic() - t0
    data = await server.stats()
    hosts = data["hosts"].values()
    firsts = [t for h in hosts for t in (h["robots_times"][:1] + h["page_times"][:1])]
    lasts = [h["page_times"][-1] for h in hosts if h["page_times"]]
    pages = sum(h["page_requests"] for h in hosts)
    span = (max(lasts) - min(firsts)) if lasts and firsts else float("nan")
    robots = [h["robots_requests"] for h in hosts]
    return {
        "pages": pages,
        "span_s": span,
        "pages_per_s": pages / span if span and span == span else float("nan"),
        "wall_s": wall,
        "client_cpu_ms_per_page": 1000 * cpu / pages if pages else float("nan"),
        "robots_per_host": [min(robots), max(robots)],
        "disallowed_fetched": sum(h["disallowed_page_requests"] for h in hosts),
        "note": note,
    }


# -- Scrapy ---------------------------------------------------------------------------


async def scrapy_run(kind: str, urls: list[str], concurrency: int) -> str:
    settings: dict[str, Any] = {
        "USER_AGENT": USER_AGENT,
        "CONCURRENT_REQUESTS": concurrency,
        "DOWNLOAD_DELAY": 0,
        "LOG_LEVEL": "ERROR",
        "ROBOTSTXT_OBEY": kind != "robots-off",
        "ROBOTGATE_DELAY": 0,
    }
    config = {"urls": urls, "settings": settings, "robotgate": kind == "RobotGateMiddleware"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", RUNNER, json.dumps(config), cwd=str(ROOT),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 300)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"scrapy {kind} failed: {err.decode()[-2000:]}")
    result = json.loads(out.decode().strip().splitlines()[-1])
    stats = result["stats"]
    return (f"{len(result['pages'])} pages, {len(result['dropped'])} dropped, "
            f"{stats.get('downloader/request_count', 0)} downloads")


# -- httpx ----------------------------------------------------------------------------


async def httpx_run(kind: str, urls: list[str], concurrency: int, gate: Any) -> str:
    import httpx

    from robotgate import Disallowed
    from robotgate.integrations.httpx import RobotGateTransport

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    inner = httpx.AsyncHTTPTransport(limits=limits)
    transport: httpx.AsyncBaseTransport = inner
    if gate is not None:
        transport = RobotGateTransport(gate, inner)
    todo = iter(urls)
    counts = {"ok": 0, "disallowed": 0}
    asked_robots: set[bytes] = set()
    one_per_host: dict[bytes, asyncio.Lock] = {}
    flights: dict[bytes, asyncio.Task[httpx.Response]] = {}

    async with httpx.AsyncClient(transport=transport, timeout=30,
                                 headers={"User-Agent": USER_AGENT}) as client:
        async def robots_txt_once(url: str) -> None:
            """Ask the robots.txt of ``url``'s host if nobody has yet."""
            robots_txt = httpx.URL(url).copy_with(path="/robots.txt", query=None)
            if robots_txt.netloc not in asked_robots:
                asked_robots.add(robots_txt.netloc)
                await client.get(robots_txt)

        async def robots_txt_in_flight(url: str) -> None:
            """Await the task that asks the robots.txt of ``url``'s host, started by the
            first asker."""
            robots_txt = httpx.URL(url).copy_with(path="/robots.txt", query=None)
            flight = flights.get(robots_txt.netloc)
            if flight is None:
                flight = flights[robots_txt.netloc] = asyncio.create_task(client.get(robots_txt))
            await flight

        async def worker() -> None:
            for url in todo:
                if gate is None and "/private/" in url:
                    continue  # plain httpx stands for a crawler that already knows
                if kind == "plain-polite":  # one request per host in flight, as the gate
                    host = httpx.URL(url).netloc
                    async with one_per_host.setdefault(host, asyncio.Lock()):
                        await robots_txt_once(url)
                        (await client.get(url)).raise_for_status()
                    counts["ok"] += 1
                    continue
                if kind == "plain-robots":
                    await robots_txt_once(url)
                elif kind == "plain-flight":
                    await robots_txt_in_flight(url)
                try:
                    resp = await client.get(url)
                    resp.raise_for_status()
                    counts["ok"] += 1
                except Disallowed:
                    counts["disallowed"] += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return f"{counts['ok']} pages, {counts['disallowed']} disallowed ({kind})"


@asynccontextmanager
async def served(hosts: int, pages: int,
                 concurrency: int) -> AsyncIterator[tuple[ServerProcess, list[str]]]:
    """The loopback server with ``hosts`` hosts of ``pages`` pages and their URLs, after one
    plain httpx run over them (imports and first connections out of the way)."""
    plans = [HostPlan("partial", pages=pages) for _ in range(hosts)]
    async with ServerProcess() as server:
        await server.start(plans=plans)
        urls = urls_of(server.base_urls, pages)
        await httpx_run("plain", urls, concurrency, None)
        yield server, urls


# -- the run --------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from robotgate import RobotGate

    only = set(args.only.split(","))
    plans = [HostPlan("partial", pages=args.pages) for _ in range(args.hosts)]
    config = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    report: dict[str, Any] = {"config": config, "scrapy": {}, "httpx": {}}
    async with ServerProcess() as server:
        await server.start(plans=plans)
        urls = urls_of(server.base_urls, args.pages)
        report["allowed_pages"] = args.hosts * sum(
            not is_disallowed("partial", p) for p in page_paths(args.pages))
        for round_ in range(args.rounds):
            if "scrapy" in only:
                for kind in SCRAPY_CONTENDERS:
                    got = await measure(server, partial(scrapy_run, kind, urls,
                                                        args.concurrency))
                    report["scrapy"].setdefault(kind, []).append(got)
                    print(f"round {round_} scrapy {kind}: {got['pages_per_s']:.0f} pages/s "
                          f"({got['note']})", file=sys.stderr)
            if "httpx" in only:
                gate = RobotGate(USER_AGENT, delay=0)
                async with gate:
                    for kind in HTTPX_CONTENDERS:
                        g = gate if kind.startswith("gate") else None
                        got = await measure(server, partial(httpx_run, kind, urls,
                                                            args.concurrency, g))
                        if g is not None:
                            got["aiohttp_session_opened"] = gate._session is not None
                        report["httpx"].setdefault(kind, []).append(got)
                        print(f"round {round_} httpx {kind}: {got['pages_per_s']:.0f} pages/s "
                              f"({got['note']})", file=sys.stderr)
    report["ratios"] = ratios(report)
    return report


def ratios(report: dict[str, Any]) -> dict[str, float]:
    """Median over rounds of contender/baseline: pages/s, and client CPU per page."""
    out: dict[str, float] = {}
    for family, base in (("scrapy", "RobotsTxtMiddleware"), ("httpx", "plain")):
        runs = report[family]
        if base not in runs:
            continue
        for kind, results in runs.items():
            if kind == base:
                continue
            pairs = list(zip(results, runs[base], strict=False))
            speed = [r["pages_per_s"] / b["pages_per_s"] for r, b in pairs]
            cpu = [r["client_cpu_ms_per_page"] / b["client_cpu_ms_per_page"] for r, b in pairs]
            out[f"{family}: {kind} / {base}, pages/s"] = statistics.median(speed)
            out[f"{family}: {kind} / {base}, CPU per page"] = statistics.median(cpu)
    return out


def table(report: dict[str, Any]) -> str:
    lines = [f"{'contender':<34} {'pages/s':>9} {'CPU ms/page':>12} {'pages':>6} "
             f"{'robots/host':>12} {'disallowed':>10}"]
    for family in ("scrapy", "httpx"):
        for kind, results in report[family].items():
            pps = statistics.median(r["pages_per_s"] for r in results)
            cpu = statistics.median(r["client_cpu_ms_per_page"] for r in results)
            last = results[-1]
            lo, hi = last["robots_per_host"]
            lines.append(f"{family + ' ' + kind:<34} {pps:>9.0f} {cpu:>12.2f} {last['pages']:>6} "
                         f"{f'{lo}..{hi}':>12} {last['disallowed_fetched']:>10}")
    lines.append("")
    for name, value in report["ratios"].items():
        lines.append(f"{name:<58} {value:5.2f}")
    return "\n".join(lines)


def run_options(doc: str, hosts: int, concurrency: int) -> argparse.ArgumentParser:
    """A parser for a script of runs over the loopback server: its text, and the runs' size."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=hosts)
    parser.add_argument("--pages", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=concurrency)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = run_options(__doc__.split("\n\n")[0], hosts=200, concurrency=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", default="scrapy,httpx")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    report = asyncio.run(run(args))
    print(table(report))
    print(command_line(argv))
    if args.json is not None:
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
