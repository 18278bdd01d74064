"""What a page costs in CPU through the gate in a browser, beside the same browser without it.

    python benchmarks/browser_cost.py [--pages 50] [--rounds 3] [--chromium /usr/bin/chromium]
                                      [--only playwright,attach,crawl4ai,crawl4ai-gate,
                                              crawl4ai-persistent]
                                      [--before-src OLD/src] [--counts]
                                      [--json benchmarks/results/browser_cost.json]

Each contender crawls the same loopback site (``--pages`` pages, each with two images, a
style sheet and a script; robots.txt allows all) in a child process of its own, one page
after another on one tab, in the system Chromium; the rounds interleave the contenders so
that the machine's drift falls on all of them alike:

- ``playwright``: plain Playwright (``page.goto``), no gate;
- ``attach``: the same through ``robotgate.integrations.playwright.attach`` (a gate with
  ``delay=0``), the browser launched with ``launch_options()``;
- ``crawl4ai``: crawl4ai's ``AsyncWebCrawler.arun``, no gate;
- ``crawl4ai-gate``: robotgate's ``RobotGateCrawler.arun``;
- ``crawl4ai-persistent`` (only when ``--only`` names it): crawl4ai's ``AsyncWebCrawler``
  in its own persistent-context mode (``use_persistent_context=True``, the mode
  ``RobotGateCrawler`` runs crawl4ai in), no gate: the like-for-like base, beside
  ``crawl4ai``'s default mode (a new tab a page), which the aim is measured against;
- with ``--before-src``, ``attach`` and ``crawl4ai-gate`` again on an older tree's ``src/``
  (as ``attach@before``, ``crawl4ai-gate@before``), launched as that tree asks
  (``preloading_off``, ``LAUNCH_ARGS``) when it has no ``launch_options``.

CPU per page: the CPU time (user + system) the crawl took, of the child's Python process
and of every process under it (Playwright's driver, Chromium's processes), read from
``/proc`` before the first page and after the last (so the browser's start is not
counted), each process's own time and its reaped children's (a closed tab's renderer
counts in its zygote's), divided by the pages; also by process, and the wall-clock time a
page beside it (the browser's and its compositor's CPU grow with it: a page that loads
longer draws more frames).  The site runs in this process and is not counted.  The load
average is told at the start, at each round's end and at the end.  Linux only.

With ``--counts``, each contender crawls once more, untimed, counting what the load does
not change, a page: the messages between Python and Playwright's driver (sent, heard:
events, objects created, replies) by method, and their bytes; and the Python functions
called in the child's Python process, by package (``sys.setprofile``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import web

from benchmarks.harness import RESULTS, ROOT
from benchmarks.harness.report import command_line, write_json

CONTENDERS = ("playwright", "attach", "crawl4ai", "crawl4ai-gate")
# Run only when --only names them.
OPTIONAL = ("crawl4ai-persistent",)
# What each gated contender is measured against; and, where it differs, the same client
# in the same mode without the gate.
BASE = {"attach": "playwright", "crawl4ai-gate": "crawl4ai"}
SAME_MODE = {"crawl4ai-gate": "crawl4ai-persistent"}
AGENT = "BrowserCostBench/1.0 (+https://example.com/bot)"
SWITCHES = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PAGE = ("<html><head><title>page {n}</title><link rel=stylesheet href=/style.css>"
        "<script src=/app.js></script></head><body><h1>page {n}</h1>"
        + "<p>Plain words about nothing in particular, for the benchmark.</p>" * 8
        + '<img src="/img/a.png"><img src="/img/b.png"><a href="/page/{m}">next</a>'
        "</body></html>")
# Where a child's crawl notes its wall-clock time among its processes' CPU times.
WALL = "wall clock"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


# -- the child: one contender's crawl ----------------------------------------------------


def _label(pid: int) -> str:
    """What the process is: Python, Playwright's driver (node), or Chromium's browser
    process or one of its children by its ``--type``."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            argv = cmdline.read().decode(errors="replace").split("\0")
    except OSError:
        return "gone"
    if len([arg for arg in argv if arg]) == 1:  # Chromium rewrites its title, spaced
        argv = argv[0].split(" ")
    program = Path(argv[0]).name
    if "python" in program:
        return "python"
    if program == "node":
        return "driver"
    kind = next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--type=")), "browser")
    if kind == "utility":
        kind = next((arg.split("=", 1)[1].rsplit(".", 1)[-1] for arg in argv
                     if arg.startswith("--utility-sub-type=")), kind)
    return f"chromium {kind}"


def _cpu_ticks(root: int) -> dict[int, int]:
    """The CPU ticks (user + system) of ``root`` and every process under it."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        parents[int(entry)] = int(fields[1])
        # Its own user and system time, and that of its children it has reaped (a
        # closed tab's renderer: its zygote's), so that no process that ends is lost.
        ticks[int(entry)] = sum(int(value) for value in fields[11:15])
    mine = {root}
    for _ in range(64):  # the tree is a few levels deep
        grown = mine | {pid for pid, parent in parents.items() if parent in mine}
        if grown == mine:
            break
        mine = grown
    return {pid: ticks[pid] for pid in mine if pid in ticks}


def _spent(before: dict[int, int], after: dict[int, int],
           labels: dict[int, str]) -> dict[str, float]:
    """CPU seconds spent between the two reads, by what each process is (a reaped
    child's, its parent's)."""
    per_second = os.sysconf("SC_CLK_TCK")
    spent: dict[str, float] = {}
    for read, sign in ((after, 1), (before, -1)):
        for pid, ticks in read.items():
            label = labels.get(pid) or _label(pid)
            labels[pid] = label
            spent[label] = spent.get(label, 0.0) + sign * ticks / per_second
    return spent


class _Counts:
    """What the measured pages cost that the load does not change: the messages between
    Python and Playwright's driver by method and their bytes (Playwright's transport
    counted as it serialises and parses them), and the Python functions called, by
    package.  Counting only while :attr:`on`."""

    def __init__(self) -> None:
        self.on = False
        self.sent: collections.Counter[str] = collections.Counter()
        self.heard: collections.Counter[str] = collections.Counter()
        self.bytes: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self._packages: dict[str, str] = {}

    def install(self) -> None:
        from playwright._impl.transport import Transport

        serialize, deserialize = Transport.serialize_message, Transport.deserialize_message
        counts = self

        def counted_serialize(transport: Any, message: dict[str, Any]) -> bytes:
            data: bytes = serialize(transport, message)
            if counts.on:
                counts.sent[f"{_kind_of(message.get('guid'))}.{message.get('method')}"] += 1
                counts.bytes["sent"] += len(data)
            return data

        def counted_deserialize(transport: Any, data: str | bytes) -> Any:
            message = deserialize(transport, data)
            if counts.on:
                if message.get("id"):
                    what = "reply"
                elif message.get("method") == "__create__":
                    what = f"__create__ {message.get('params', {}).get('type')}"
                else:
                    what = f"{_kind_of(message.get('guid'))}.{message.get('method')}"
                counts.heard[what] += 1
                counts.bytes["heard"] += len(data)
            return message

        Transport.serialize_message = counted_serialize  # type: ignore[method-assign,assignment]
        Transport.deserialize_message = counted_deserialize  # type: ignore[method-assign,assignment]

    def start(self) -> None:
        self.on = True
        sys.setprofile(self._profile)

    def stop(self) -> None:
        sys.setprofile(None)
        self.on = False

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            file = frame.f_code.co_filename
            package = self._packages.get(file)
            if package is None:
                package = self._packages[file] = _package_of(file)
            self.calls[package] += 1

    def per_page(self, pages: int) -> dict[str, Any]:
        def each(counter: collections.Counter[str]) -> dict[str, float]:
            return {name: round(n / pages, 2) for name, n in sorted(counter.items())
                    if n / pages >= 0.05}

        return {"sent": round(sum(self.sent.values()) / pages, 2),
                "heard": round(sum(self.heard.values()) / pages, 2),
                "bytes_sent": round(self.bytes["sent"] / pages),
                "bytes_heard": round(self.bytes["heard"] / pages),
                "python_calls": round(sum(self.calls.values()) / pages),
                "sent_by_method": each(self.sent), "heard_by_method": each(self.heard),
                "python_calls_by_package": {name: round(n / pages) for name, n
                                            in self.calls.most_common(12)}}


def _kind_of(guid: object) -> str:
    """The kind of object a Playwright guid names ("route@3f...": Route)."""
    return str(guid).split("@", 1)[0] if guid else "?"


def _package_of(file: str) -> str:
    """Who a function is of: its package (a site-packages' or ``src``'s), else the
    standard library's module (``asyncio``, ``json``...)."""
    parts = Path(file).parts
    for anchor in ("site-packages", "src"):
        if anchor in parts[:-1]:
            index = len(parts) - 1 - parts[::-1].index(anchor)
            return parts[index + 1].removesuffix(".py")
    library = [n for n, part in enumerate(parts[:-1]) if part.startswith("python3")]
    if library:
        return "stdlib " + parts[library[-1] + 1].removesuffix(".py")
    return file.strip("<>").removeprefix("frozen ")


async def _crawl_playwright(kind: str, site: str, pages: int,
                           chromium: str, counts: _Counts | None = None) -> dict[str, float]:
    from playwright.async_api import async_playwright

    from robotgate import RobotGate

    gated = kind == "attach"
    async with async_playwright() as playwright, RobotGate(AGENT, delay=0) as gate:
        with tempfile.TemporaryDirectory() as profile:
            launch: dict[str, Any] = {"args": SWITCHES}
            if gated:
                launch = _gated_launch(profile)
            context = await playwright.chromium.launch_persistent_context(
                launch.pop("profile", profile), executable_path=chromium,
                service_workers="block", **launch)
            if gated:
                from robotgate.integrations.playwright import attach

                await attach(gate, context)
            page = await context.new_page()
            await page.goto(f"{site}/page/0")  # robots.txt, the first connection
            labels: dict[int, str] = {}
            before = _cpu_ticks(os.getpid())
            started = time.perf_counter()
            if counts is not None:
                counts.start()
            for n in range(1, pages + 1):
                response = await page.goto(f"{site}/page/{n}")
                if response is None or not response.ok:
                    raise RuntimeError(f"{kind}: page {n} failed")
            if counts is not None:
                counts.stop()
            spent = _spent(before, _cpu_ticks(os.getpid()), labels)
            spent[WALL] = time.perf_counter() - started
            await context.close()
    return spent


def _gated_launch(profile: str) -> dict[str, Any]:
    """How the tree under test asks the browser to be launched for ``attach``."""
    from robotgate.integrations import playwright as integration

    launch_options = getattr(integration, "launch_options", None)
    if launch_options is not None:
        return dict(launch_options(*SWITCHES))
    # An older tree: a profile that preloads nothing, its switches.
    return {"args": [*SWITCHES, *integration.LAUNCH_ARGS],
            "profile": integration.preloading_off(profile)}


async def _crawl_crawl4ai(kind: str, site: str, pages: int,
                          chromium: str, counts: _Counts | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as profile:
        return await _crawl4ai_pages(kind, site, pages, chromium, profile, counts)


async def _crawl4ai_pages(kind: str, site: str, pages: int, chromium: str,
                          profile: str, counts: _Counts | None) -> dict[str, float]:
    from crawl4ai import AsyncWebCrawler, BrowserConfig, CacheMode, CrawlerRunConfig

    from robotgate import RobotGate

    run = CrawlerRunConfig(cache_mode=CacheMode.BYPASS, verbose=False)
    config = BrowserConfig(headless=True, extra_args=SWITCHES, verbose=False)
    async with RobotGate(AGENT, delay=0) as gate:
        if kind == "crawl4ai-gate":
            from robotgate.integrations.crawl4ai import RobotGateCrawler

            crawler = RobotGateCrawler(gate, config, executable_path=chromium)
        elif kind == "crawl4ai-persistent":
            from playwright.async_api import BrowserType

            launch_persistent = BrowserType.launch_persistent_context

            async def on_chromium(self: BrowserType, user_data_dir: Any, **options: Any) -> Any:
                return await launch_persistent(self, user_data_dir, executable_path=chromium,
                                               **options)

            # crawl4ai has no setting for the executable in this mode either
            BrowserType.launch_persistent_context = on_chromium  # type: ignore[method-assign]
            crawler = AsyncWebCrawler(config=BrowserConfig(
                headless=True, extra_args=SWITCHES, verbose=False, user_agent=AGENT,
                use_persistent_context=True, user_data_dir=profile))
        else:
            from crawl4ai.browser_manager import BrowserManager

            build = BrowserManager._build_browser_args

            def on_the_same_chromium(manager: Any) -> dict[str, Any]:
                launch = dict(build(manager))
                launch["executable_path"] = chromium  # crawl4ai has no setting for it
                return launch

            BrowserManager._build_browser_args = on_the_same_chromium
            crawler = AsyncWebCrawler(config=BrowserConfig(
                headless=True, extra_args=SWITCHES, verbose=False, user_agent=AGENT))
        async with crawler:
            await crawler.arun(f"{site}/page/0", config=run)
            labels: dict[int, str] = {}
            before = _cpu_ticks(os.getpid())
            started = time.perf_counter()
            if counts is not None:
                counts.start()
            for n in range(1, pages + 1):
                result = await crawler.arun(f"{site}/page/{n}", config=run)
                if not result.success:
                    raise RuntimeError(f"{kind}: page {n} failed: {result.error_message}")
            if counts is not None:
                counts.stop()
            spent = _spent(before, _cpu_ticks(os.getpid()), labels)
            spent[WALL] = time.perf_counter() - started
    return spent


def child(kind: str, site: str, pages: int, chromium: str, count: bool) -> None:
    crawl = _crawl_crawl4ai if kind.startswith("crawl4ai") else _crawl_playwright
    counts = _Counts() if count else None
    if counts is not None:
        counts.install()
    spent = asyncio.run(crawl(kind, site, pages, chromium, counts))
    wall = spent.pop(WALL)
    told: dict[str, Any] = {"kind": kind, "cpu_s": sum(spent.values()), "by_process": spent,
                            "wall_s": wall, "pages": pages}
    if counts is not None:
        told["counts"] = counts.per_page(pages)
    print(json.dumps(told))


# -- the parent: the site, the rounds, the report ------------------------------------------


async def _serve(served: list[str]) -> tuple[web.AppRunner, str]:
    """The site, on loopback; ``served``: the path of each page it answers."""
    async def handle(request: web.Request) -> web.Response:
        path = request.path
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if path.startswith("/page/"):
            served.append(path)
            n = int(path.rsplit("/", 1)[1])
            return web.Response(text=PAGE.format(n=n, m=n + 1), content_type="text/html")
        if path.startswith("/img/"):
            return web.Response(body=PNG, content_type="image/png")
        if path == "/style.css":
            return web.Response(text="h1 { color: #333 }", content_type="text/css")
        if path == "/app.js":
            return web.Response(text="window.loaded = 1;", content_type="text/javascript")
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def _told(kind: str, src: str, site: str, args: argparse.Namespace,
                *extra: str) -> dict[str, Any]:
    """What one child's crawl told (its JSON line)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(ROOT)])}
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--child", kind.split("@")[0], "--site", site,
        "--pages", str(args.pages), "--chromium", args.chromium, *extra,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = await asyncio.wait_for(process.communicate(), 600)
    if process.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{err.decode(errors='replace')[-3000:]}")
    told: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return told


async def _one(kind: str, src: str, site: str,
               args: argparse.Namespace) -> tuple[float, dict[str, float], float]:
    """One child's crawl: its CPU a page, by process, and its wall-clock time a page
    (the browser's and its compositor's CPU grow with it)."""
    told = await _told(kind, src, site, args)
    return (float(told["cpu_s"]) / args.pages,
            {label: seconds / args.pages for label, seconds in told["by_process"].items()},
            float(told["wall_s"]) / args.pages)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    kinds = [kind for kind in (*CONTENDERS, *OPTIONAL) if kind in args.only]
    runs: list[tuple[str, str]] = [(kind, str(ROOT / "src")) for kind in kinds]
    if args.before_src:
        runs += [(f"{kind}@before", args.before_src) for kind in kinds if kind in BASE]
    served: list[str] = []
    runner, site = await _serve(served)
    per_page: dict[str, list[float]] = {kind: [] for kind, _ in runs}
    by_process: dict[str, dict[str, list[float]]] = {kind: {} for kind, _ in runs}
    walls: dict[str, list[float]] = {kind: [] for kind, _ in runs}
    loads: list[float] = []  # the load average (1 min) as each round ended
    try:
        for round_ in range(args.rounds):
            for kind, src in runs:
                cost, parts, wall = await _one(kind, src, site, args)
                per_page[kind].append(cost)
                walls[kind].append(wall)
                for label, seconds in parts.items():
                    by_process[kind].setdefault(label, []).append(seconds)
                if not args.no_progress:
                    print(f"round {round_ + 1}: {kind:22} {cost * 1000:7.1f} ms CPU a page"
                          f"  (load {os.getloadavg()[0]:.1f})", file=sys.stderr)
            loads.append(round(os.getloadavg()[0], 1))
        counts = {kind: (await _told(kind, src, site, args, "--count"))["counts"]
                  for kind, src in runs} if args.counts else {}
    finally:
        await runner.cleanup()
    medians = {kind: statistics.median(costs) for kind, costs in per_page.items() if costs}
    ratios, same_mode = {}, {}
    for kind in medians:
        base = BASE.get(kind.split("@")[0])
        if base in medians:
            ratios[kind] = medians[kind] / medians[base]
        base = SAME_MODE.get(kind.split("@")[0])
        if base in medians:
            same_mode[kind] = medians[kind] / medians[base]
    return {"pages": args.pages, "rounds": args.rounds, "per_page_cpu_s": per_page,
            # Each run's pages and its first (robots.txt, the first connection) answered.
            "pages_served": len(served),
            "pages_asked": len(runs) * (args.rounds + bool(counts)) * (args.pages + 1),
            "median_cpu_ms": {k: round(v * 1000, 2) for k, v in medians.items()},
            "median_cpu_ms_by_process": {
                kind: {label: round(statistics.median(costs) * 1000, 2)
                       for label, costs in sorted(parts.items())}
                for kind, parts in by_process.items()},
            "median_wall_ms": {kind: round(statistics.median(costs) * 1000, 1)
                               for kind, costs in walls.items() if costs},
            "ratio_to_plain": {k: round(v, 3) for k, v in ratios.items()},
            "ratio_to_same_mode": {k: round(v, 3) for k, v in same_mode.items()},
            "counts_a_page": counts,
            "load_average": {"start": args.load_at_start, "end": os.getloadavg()[0],
                             "by_round": loads},
            "command": command_line(), "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--only", default=",".join(CONTENDERS))
    parser.add_argument("--before-src", default="")
    parser.add_argument("--json", type=Path, default=RESULTS / "browser_cost.json")
    parser.add_argument("--no-progress", action="store_true",
                        help="no line on stderr as each run ends")
    parser.add_argument("--counts", action="store_true",
                        help="one more crawl a contender, untimed, counting the driver's "
                             "messages and Python's calls a page")
    parser.add_argument("--count", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--site", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.site, args.pages, args.chromium, args.count)
        return
    args.only = args.only.split(",")
    args.load_at_start = os.getloadavg()[0]
    report = asyncio.run(measure(args))
    print(f"CPU a page (median of {args.rounds} rounds, {args.pages} loopback pages each):")
    for kind, ms in report["median_cpu_ms"].items():
        ratio = report["ratio_to_plain"].get(kind)
        same = report["ratio_to_same_mode"].get(kind)
        print(f"  {kind:22} {ms:7.1f} ms" + (f"   {ratio:.2f}x its plain run" if ratio else "")
              + (f", {same:.2f}x {SAME_MODE[kind.split('@')[0]]}" if same else ""))
    print("by process (ms a page):")
    for kind, parts in report["median_cpu_ms_by_process"].items():
        if parts:
            print(f"  {kind:22} " + ", ".join(f"{label} {ms:.1f}" for label, ms in parts.items()
                                              if ms >= 0.5)
                  + f"; wall clock {report['median_wall_ms'][kind]:.1f}")
    if report["counts_a_page"]:
        print("a page, counted (messages with Playwright's driver; Python calls):")
        for kind, told in report["counts_a_page"].items():
            print(f"  {kind:22} sent {told['sent']:5.1f}, heard {told['heard']:5.1f} "
                  f"({told['bytes_sent']:,} and {told['bytes_heard']:,} bytes); "
                  f"{told['python_calls']:,} Python calls")
    load = report["load_average"]
    print(f"load average: {load['start']:.1f} at the start, {load['end']:.1f} at the end")
    print(f"command: {report['command']}")
    write_json(args.json, report)
    print(f"JSON: {args.json}")


if __name__ == "__main__":
    main()
