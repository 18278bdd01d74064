"""The memory of Playwright's driver under a big answer, through ``attach``.

    python benchmarks/browser_bodies.py [--mib 1024] [--chromium /usr/bin/chromium]
                                        [--before-src OLD/src] [--json PATH]

A loopback server (this process) serves ``/big``: ``--mib`` MiB generated as it is sent
(one 1 MiB chunk written again and again, never the whole body in memory; a
``Content-Length``), and ``/small``, an ordinary page.  A child process per tree (this
tree's ``src/``, and ``--before-src``'s if given) launches the system Chromium with
``launch_options()``, attaches a gate (its default ``max_bytes``), loads ``/small``, then
``/big``, then ``/small`` again, while a thread samples the resident memory (RSS) of
Playwright's driver (the ``node`` child of the child's Python process) every 50 ms.

Printed per tree: the driver's RSS before ``/big``, its peak while ``/big`` was asked, and
after (and the child's own Python process's, before and at its peak: the route reads the
body there now); what ``/big``'s ``page.goto`` gave; whether the driver was still alive and the next
page loaded (the crawl goes on); how many bytes of ``/big`` the server sent.  Linux only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import web

from benchmarks.harness import RESULTS, ROOT
from benchmarks.harness.report import command_line, machine, write_json

AGENT = "BrowserBodiesBench/1.0 (+https://example.com/bot)"
SWITCHES = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SMALL = "<html><head><title>small</title></head><body>a page</body></html>"
_CHUNK = b"<p>" + b"x" * ((1 << 20) - 7) + b"</p>\n"  # 1 MiB
# How long a child may take in all (the old tree's driver may spend minutes, or die).
_CHILD_TIMEOUT = 900
_GOTO_TIMEOUT_MS = 300_000


# -- the child: one tree's browser ------------------------------------------------------


class Sampler(threading.Thread):
    """Samples the RSS of Playwright's driver (the ``node`` under this process)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        import psutil

        self.psutil = psutil
        self.samples: list[tuple[float, int]] = []
        #: This process's own RSS (the route reads the body here), sampled alike.
        self.python: list[tuple[float, int]] = []
        self.me = psutil.Process(os.getpid())
        self.stop = threading.Event()

    def driver(self) -> Any:
        for child in self.psutil.Process(os.getpid()).children(recursive=True):
            try:
                if Path(child.cmdline()[0]).name == "node":
                    return child
            except self.psutil.Error:
                continue
        return None

    def rss(self) -> int | None:
        driver = self.driver()
        try:
            return None if driver is None else int(driver.memory_info().rss)
        except self.psutil.Error:
            return None

    def run(self) -> None:
        while not self.stop.wait(0.05):
            rss = self.rss()
            now = time.monotonic()
            if rss is not None:
                self.samples.append((now, rss))
            self.python.append((now, int(self.me.memory_info().rss)))

    def peak(self, since: float, until: float, python: bool = False) -> int:
        samples = self.python if python else self.samples
        return max((rss for t, rss in samples if since <= t <= until), default=0)


async def _child(site: str, chromium: str) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    from robotgate import RobotGate
    from robotgate.integrations import playwright as integration

    found: dict[str, Any] = {}
    sampler = Sampler()
    async with async_playwright() as playwright, RobotGate(AGENT, delay=0) as gate:
        with tempfile.TemporaryDirectory() as profile:
            launch_options = getattr(integration, "launch_options", None)
            launch: dict[str, Any] = (dict(launch_options(*SWITCHES)) if launch_options
                                      else {"args": [*SWITCHES, *integration.LAUNCH_ARGS]})
            context = await playwright.chromium.launch_persistent_context(
                profile, executable_path=chromium, service_workers="block", **launch)
            await integration.attach(gate, context)
            page = await context.new_page()
            await page.goto(f"{site}/small")
            sampler.start()
            await asyncio.sleep(0.5)
            found["rss_before"] = sampler.rss()
            found["python_rss_before"] = int(sampler.me.memory_info().rss)
            started = time.monotonic()
            try:
                response = await page.goto(f"{site}/big", timeout=_GOTO_TIMEOUT_MS)
                found["big"] = f"status {response.status if response else None}"
            except Exception as failed:  # the refusal, or the driver's death
                found["big"] = f"{type(failed).__name__}: {str(failed).splitlines()[0][:160]}"
            ended = time.monotonic()
            await asyncio.sleep(0.5)
            found["big_seconds"] = round(ended - started, 2)
            found["rss_peak_during"] = sampler.peak(started, time.monotonic())
            found["python_rss_peak_during"] = sampler.peak(started, time.monotonic(), python=True)
            found["driver_alive_after"] = sampler.driver() is not None
            try:
                page = await asyncio.wait_for(context.new_page(), 30)
                response = await asyncio.wait_for(page.goto(f"{site}/small"), 60)
                found["next_page"] = response.status if response else None
            except Exception as failed:
                found["next_page"] = f"{type(failed).__name__}: {str(failed).splitlines()[0][:160]}"
            await asyncio.sleep(0.5)
            found["rss_after"] = sampler.rss()
            sampler.stop.set()
            if found["driver_alive_after"]:
                await asyncio.wait_for(context.close(), 60)
            else:
                os._exit(_report(found))  # the driver is gone: nothing left to close
    _report(found)
    return found


def _report(found: dict[str, Any]) -> int:
    print(json.dumps(found), flush=True)
    return 0


# -- the parent: the site, the children, the table ---------------------------------------


class BigSite:
    def __init__(self, size: int) -> None:
        self.size = size
        self.sent: list[int] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path != "/big":
            return web.Response(text=SMALL, content_type="text/html")
        response = web.StreamResponse(headers={"Content-Type": "text/html",
                                               "Content-Length": str(self.size)})
        await response.prepare(request)
        sent = 0
        try:
            while sent < self.size:
                chunk = _CHUNK[: self.size - sent]
                await response.write(chunk)
                sent += len(chunk)
            await response.write_eof()
        except (ConnectionError, RuntimeError):
            pass  # the client went away (it refused the rest)
        finally:
            self.sent.append(sent)
        return response


def _run_child(src: Path, site: str, chromium: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    try:
        done = subprocess.run([sys.executable, __file__, "--child", site, "--chromium", chromium],
                              env=env, capture_output=True, text=True, timeout=_CHILD_TIMEOUT,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"the child did not end in {_CHILD_TIMEOUT} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            found: dict[str, Any] = json.loads(line)
            found["child_exit"] = done.returncode
            return found
    return {"error": f"exit {done.returncode}: {done.stderr.strip()[-400:]}"}


async def _measure(args: argparse.Namespace) -> dict[str, Any]:
    big = BigSite(args.mib << 20)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", big.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    site = f"http://127.0.0.1:{runner.addresses[0][1]}"
    trees = {"after": ROOT / "src"}
    if args.before_src:
        trees = {"before": Path(args.before_src).resolve(), **trees}
    results: dict[str, Any] = {}
    try:
        for name, src in trees.items():
            big.sent.clear()
            results[name] = await asyncio.to_thread(_run_child, src, site, args.chromium)
            results[name]["src"] = str(src)
            results[name]["big_bytes_sent"] = list(big.sent)
    finally:
        await runner.cleanup()
    return results


def _mib(value: object) -> str:
    return f"{value / (1 << 20):,.0f} MiB" if isinstance(value, int) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=1024, help="the big answer's size, MiB")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--before-src", help="an older tree's src/, run the same way")
    parser.add_argument("--json", default=str(RESULTS / "browser_bodies.json"))
    parser.add_argument("--no-progress", action="store_true",
                        help="accepted as every benchmark's (this one prints no progress line)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(_child(args.child, args.chromium))
        return
    results = asyncio.run(_measure(args))
    print(f"a {args.mib:,} MiB answer through attach; Playwright's driver (node) RSS:")
    for name, found in results.items():
        print(f"  {name} ({found.get('src')}):")
        for key in ("rss_before", "rss_peak_during", "rss_after", "python_rss_before",
                    "python_rss_peak_during"):
            print(f"    {key:18} {_mib(found.get(key))}")
        for key in ("big", "big_seconds", "driver_alive_after", "next_page",
                    "big_bytes_sent", "error"):
            if key in found:
                print(f"    {key:18} {found[key]}")
    write_json(Path(args.json), {"mib": args.mib, "machine": machine(), "command": command_line(),
                                 "results": results})
    print(command_line(), f"\njson: {args.json}")


if __name__ == "__main__":
    main()
