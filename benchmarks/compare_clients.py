"""The README's comparison table, each cell measured on loopback.

    python benchmarks/compare_clients.py [--only robotgate,scrapy,crawlee,robotparser,protego]
        [--json benchmarks/results/compare_clients.json] [--no-progress]

A loopback server plays six sites on 127.0.10.N, each asking one thing of a crawler:

rules     robots.txt answers after 0.5 s and disallows /private; 10 pages asked at once (half
          of them under /private): how many robots.txt requests, how many disallowed pages
          fetched (a request that does not wait for robots.txt fetches them)
5xx       robots.txt answers 503: are its pages fetched (allow) or not (disallow all)
reset     robots.txt's connection is reset: are its pages fetched
delay     Crawl-delay: 1, four pages: the smallest gap between two of them at the server
rate      Request-rate: 1/1s, four pages: the smallest gap
retry     the first page answers 429 with Retry-After: 2, the others after 0.3 s: the gap
          from the 429 to the next request sent after it came

robotgate runs in this process (``gate.fetch``, delay 0: only what the sites ask paces it);
Scrapy (``ROBOTSTXT_OBEY``) and crawlee (``respect_robots_txt_file``, with the
``ThrottlingRequestManager`` its docs name for Crawl-delay) run in child processes through
``benchmarks/baselines.py``, with no delay of their own; ``urllib.robotparser`` fetches
robots.txt itself (``read()``); Protego only parses.  The parser rows ask each parser the same
URLs of one robots.txt (wildcards, ``$``, the longest match) and look at what a verdict is.
Every request goes to 127.0.0.0/8; each crawl is bounded (a deadline of 60 s).  A cell this
script does not measure is printed as "not measured".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import sys
import tempfile
import time
import urllib.robotparser
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` and `testbed.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import web

from benchmarks.baselines import alternative_available
from benchmarks.harness import RESULTS, ROOT
from benchmarks.harness.report import command_line, machine, md, write_json
from robotgate import Disallowed, RobotGate, RobotsTxt
from testbed.crawl import USER_AGENT

TOOLS = ("robotgate", "scrapy", "crawlee", "robotparser", "protego")
HEADS = {"robotgate": "robotgate", "scrapy": "Scrapy (`RobotsTxtMiddleware`)",
         "crawlee": "crawlee (`ThrottlingRequestManager`)",
         "robotparser": "`urllib.robotparser`", "protego": "Protego"}
NOT_MEASURED = "not measured"
ROBOTS_DELAY = 0.5
RETRY_AFTER = 2
#: How long the retry site takes to answer a page (not its 429).
IN_FLIGHT = 0.3

#: The parser rows' robots.txt and what RFC 9309 (longest match, * and $) says of each path.
RULES = ("User-agent: *\nDisallow: /shop\nAllow: /shop/*.html$\nDisallow: /*.pdf$\n"
         "Allow: /shop/open\n")
EXPECTED = {"/shop/a.html": True, "/shop/a.htmlx": False, "/shop/x": False,
            "/doc/a.pdf": False, "/doc/a.pdf?v=2": True, "/shop/open/1": True, "/other": True}


@dataclass
class Site:
    """One site of the server: its robots.txt behaviour and what arrived."""

    kind: str
    address: str
    port: int = 0
    robots_requests: int = 0
    pages: list[tuple[float, str]] = field(default_factory=list)
    answered_429: float | None = None

    def url(self, path: str) -> str:
        return f"http://{self.address}:{self.port}{path}"


_KINDS = ("rules", "5xx", "reset", "delay", "rate", "retry")


def _sites() -> list[Site]:
    return [Site(kind, f"127.0.10.{n}") for n, kind in enumerate(_KINDS, start=1)]


def _site_urls(site: Site) -> list[str]:
    if site.kind == "rules":
        return [site.url(f"/{part}/{n}") for n in range(5) for part in ("page", "private")]
    if site.kind == "retry":
        return [site.url(f"/page/{n}") for n in range(12)]
    return [site.url(f"/page/{n}") for n in range(4)]


ROBOTS = {"rules": "User-agent: *\nDisallow: /private\n",
          "delay": "User-agent: *\nCrawl-delay: 1\n",
          "rate": "User-agent: *\nRequest-rate: 1/1s\n",
          "retry": "User-agent: *\nAllow: /\n"}


async def _serve(sites: list[Site]) -> list[web.AppRunner]:
    runners = []
    for site in sites:
        async def robots(request: web.Request, site: Site = site) -> web.StreamResponse:
            site.robots_requests += 1
            if site.kind == "5xx":
                return web.Response(status=503)
            if site.kind == "reset":
                assert request.transport is not None
                request.transport.abort()
                return web.Response()
            if site.kind == "rules":
                await asyncio.sleep(ROBOTS_DELAY)
            return web.Response(text=ROBOTS[site.kind])

        async def page(request: web.Request, site: Site = site) -> web.Response:
            now = time.monotonic()
            site.pages.append((now, request.path))
            if site.kind == "retry":
                if site.answered_429 is None:
                    site.answered_429 = now
                    return web.Response(status=429, headers={"Retry-After": str(RETRY_AFTER)})
                # Slow pages: a crawler that does not rest still asks after the 429 has come.
                await asyncio.sleep(IN_FLIGHT)
            return web.Response(text="<html>a page</html>", content_type="text/html")

        app = web.Application()
        app.router.add_get("/robots.txt", robots)
        app.router.add_get("/{path:.*}", page)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        tcp = web.TCPSite(runner, site.address, 0)
        await tcp.start()
        site.port = runner.addresses[0][1]
        runners.append(runner)
    return runners


def _crawl_figures(sites: list[Site]) -> dict[str, Any]:
    """What the server saw of one crawler."""
    by_kind = {site.kind: site for site in sites}

    def min_gap(site: Site) -> float | None:
        times = sorted(t for t, _ in site.pages)
        return min((b - a for a, b in itertools.pairwise(times)), default=None)

    retry = by_kind["retry"]
    # Requests that arrive within IN_FLIGHT of the 429 may have been sent before it came.
    after_429 = [t for t, _ in retry.pages if retry.answered_429 is not None
                 and t > retry.answered_429 + IN_FLIGHT / 2]
    return {
        "robots_requests": by_kind["rules"].robots_requests,
        "disallowed_fetched": sum(p.startswith("/private") for _, p in by_kind["rules"].pages),
        "pages_5xx": len(by_kind["5xx"].pages),
        "pages_reset": len(by_kind["reset"].pages),
        "gap_crawl_delay": min_gap(by_kind["delay"]),
        "gap_request_rate": min_gap(by_kind["rate"]),
        "after_429": (min(after_429) - retry.answered_429
                      if after_429 and retry.answered_429 is not None else None),
    }


async def _with_server(crawl: Any) -> dict[str, Any]:
    sites = _sites()
    runners = await _serve(sites)
    try:
        urls = [url for site in sites for url in _site_urls(site)]
        note = await crawl(urls)
    finally:
        for runner in runners:
            await runner.cleanup()
    return {**_crawl_figures(sites), "note": note}


async def _robotgate(urls: list[str]) -> str:
    async with RobotGate(USER_AGENT, delay=0, max_per_host=4) as gate:
        async def one(url: str) -> None:
            try:
                async with gate.fetch(url) as resp:
                    await resp.read()
            except Disallowed:
                pass

        await asyncio.wait_for(asyncio.gather(*(one(url) for url in urls)), 60)
    return ""


async def _child(name: str, urls: list[str]) -> str:
    ok, version = alternative_available(name)
    if not ok:
        raise LookupError(version)
    with tempfile.TemporaryDirectory() as work:
        spec, out = Path(work) / "spec.json", Path(work) / "out.json"
        spec.write_text(json.dumps({"urls": urls, "user_agent": USER_AGENT, "delay": 0,
                                    "per_origin": 4, "concurrency": 32, "timeout": 5,
                                    "deadline": 60}))
        # In the temporary directory: crawlee's throttling queues land in ./storage.
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "benchmarks" / "baselines.py"), name, str(spec), str(out),
            cwd=work, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(proc.communicate(), 90)
        if proc.returncode not in (0, 4):
            raise RuntimeError(f"{name} exited {proc.returncode}: {err.decode()[-500:]}")
    return f"{name} {version}"


async def _robotparser(urls: list[str]) -> str:
    """urllib.robotparser fetching each site's robots.txt itself, as its docs show."""
    def read(robots_url: str) -> urllib.robotparser.RobotFileParser:
        parser = urllib.robotparser.RobotFileParser(robots_url)
        # read() lets a connection error through; unread, its can_fetch() says False.
        with contextlib.suppress(OSError):
            parser.read()
        return parser

    # It fetches no page: the figures of its rows are its verdicts, counted as fetches.
    seen: dict[str, urllib.robotparser.RobotFileParser] = {}
    verdicts: dict[str, bool] = {}
    for url in urls:
        origin = url.split("/", 3)[:3]
        key = "/".join(origin)
        if key not in seen:
            seen[key] = await asyncio.to_thread(read, key + "/robots.txt")
        verdicts[url] = seen[key].can_fetch(USER_AGENT, url)
    return json.dumps(verdicts)


async def _parser_rows(tool: str) -> tuple[str, str, str]:
    """The wildcard row's cell, the explanation row's and the AIPREF row's for ``tool``."""
    body = RULES
    if tool == "robotgate":
        rules = RobotsTxt.parse(body.encode())
        verdicts = {p: rules.allowed(f"http://a.test{p}", "MyBot") for p in EXPECTED}
        decision = rules.decide("/shop/a.html", "MyBot")
        has_line = bool(decision.reason) and "line" in decision.reason
        usage = RobotsTxt.parse(b"User-agent: *\nAllow: /\nContent-Usage: train-ai=n\n")
        aipref = "read and explained" if usage.decide("/x", "MyBot").usage else "no"
        return _wildcards(verdicts), "yes" if has_line else "no", aipref
    if tool == "protego" or tool == "crawlee":
        if tool == "protego":
            from protego import Protego

            parsed = Protego.parse(body)
            verdicts = {p: parsed.can_fetch(f"http://a.test{p}", "MyBot") for p in EXPECTED}
            answer: object = parsed.can_fetch("http://a.test/shop/a.html", "MyBot")
        else:
            from crawlee._utils.robots import RobotsTxtFile

            parsed_file = await RobotsTxtFile.from_content("http://a.test/robots.txt", body)
            verdicts = {p: parsed_file.is_allowed(f"http://a.test{p}", "MyBot") for p in EXPECTED}
            answer = parsed_file.is_allowed("http://a.test/shop/a.html", "MyBot")
    elif tool == "scrapy":
        from scrapy.robotstxt import ProtegoRobotParser  # Scrapy's default ROBOTSTXT_PARSER

        scrapy_parser = ProtegoRobotParser(body.encode(), None)
        verdicts = {p: bool(scrapy_parser.allowed(f"http://a.test{p}", "MyBot"))
                    for p in EXPECTED}
        answer = scrapy_parser.allowed("http://a.test/shop/a.html", "MyBot")
    else:
        std = urllib.robotparser.RobotFileParser()
        std.parse(body.splitlines())
        verdicts = {p: std.can_fetch("MyBot", f"http://a.test{p}") for p in EXPECTED}
        answer = std.can_fetch("MyBot", "http://a.test/shop/a.html")
    explained = "no (a verdict is a bare bool)" if isinstance(answer, bool) else NOT_MEASURED
    return _wildcards(verdicts), explained, NOT_MEASURED


def _wildcards(verdicts: dict[str, bool]) -> str:
    wrong = [p for p, allowed in verdicts.items() if allowed != EXPECTED[p]]
    return "yes" if not wrong else f"no: {len(wrong)} of {len(EXPECTED)} wrong ({', '.join(wrong)})"


def _cells(tool: str, figures: dict[str, Any] | None) -> dict[str, str]:
    """The crawl rows' cells from what the server saw of ``tool``."""
    if figures is None:
        return {}
    if tool == "robotparser":
        verdicts: dict[str, bool] = json.loads(figures["note"])

        def allowed(kind: str) -> str:
            said = [v for u, v in verdicts.items() if f"127.0.10.{_KINDS.index(kind) + 1}:" in u]
            return "allow" if all(said) else "disallow all" if not any(said) else "mixed"

        return {"5xx": allowed("5xx"), "reset": f"{allowed('reset')} (read() raises)"}

    def gap(seconds: float | None, asked: float) -> str:
        if seconds is None:
            return "not measured (fewer than two requests)"
        return (f"yes ({seconds:.2f} s)" if seconds >= asked * 0.99
                else f"no ({seconds:.2f} s apart)")

    after = figures["after_429"]
    return {
        "once": (f"{figures['robots_requests']} fetch, "
                 f"{figures['disallowed_fetched']} disallowed page(s) fetched"),
        "5xx": "allow" if figures["pages_5xx"] else "disallow all",
        "reset": "allow" if figures["pages_reset"] else "disallow all",
        "delay": f"Crawl-delay: {gap(figures['gap_crawl_delay'], 1.0)}; "
                 f"Request-rate: {gap(figures['gap_request_rate'], 1.0)}",
        "retry": (NOT_MEASURED if after is None else
                  f"rests ({after:.1f} s)" if after >= RETRY_AFTER * 0.99
                  else f"no ({after:.2f} s later)"),
    }


ROWS = [
    ("wildcards", "`*` and `$` wildcards, longest match"),
    ("explains", "explains a verdict (rule, line)"),
    ("once", "one robots.txt fetch per origin, every waiter answered"),
    ("5xx", "robots.txt 5xx"),
    ("reset", "robots.txt connection reset"),
    ("delay", "`Crawl-delay` / `Request-rate` applied"),
    ("retry", "429 with `Retry-After`"),
    ("aipref", "AI usage preferences (AIPREF)"),
    ("shared", "shared budget across processes"),
]

#: robotgate's cell of a row this script does not measure, and where it is tested instead.
TESTED = {"shared": "SQLite, Redis, Redis Cluster (tested: tests/e2e/test_fleet*.py)"}


async def measure(tools: Sequence[str], say: Any) -> dict[str, Any]:
    report: dict[str, Any] = {"tools": {}, "machine": machine()}
    for tool in tools:
        say(f"{tool}...")
        entry: dict[str, Any] = {}
        try:
            wildcards, explains, aipref = await _parser_rows(tool)
            entry["cells"] = {"wildcards": wildcards, "explains": explains, "aipref": aipref}
            figures = None
            if tool == "robotgate":
                figures = await _with_server(_robotgate)
            elif tool in ("scrapy", "crawlee"):
                figures = await _with_server(lambda urls, tool=tool: _child(tool, urls))
            elif tool == "robotparser":
                figures = await _with_server(_robotparser)
            entry["figures"] = figures
            entry["cells"].update(_cells(tool, figures))
        except (LookupError, ImportError) as exc:
            entry["missing"] = str(exc)
        report["tools"][tool] = entry
    return report


def table(report: dict[str, Any]) -> str:
    tools = list(report["tools"])
    body = []
    for key, title in ROWS:
        row = [title]
        for tool in tools:
            entry = report["tools"][tool]
            if "missing" in entry:
                row.append(f"not measured ({entry['missing']})")
            elif tool == "protego" and key in ("once", "5xx", "reset", "delay", "retry"):
                row.append("n/a (a parser)")
            elif tool == "robotparser" and key in ("once", "delay", "retry"):
                row.append("n/a (fetches robots.txt only)")
            elif tool == "robotgate" and key in TESTED:
                row.append(TESTED[key])
            else:
                row.append(entry["cells"].get(key, NOT_MEASURED))
        body.append(row)
    return "\n".join(md(["", *(HEADS[t] for t in tools)], body))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(TOOLS),
                        help="the tools, comma-separated (default: all)")
    parser.add_argument("--json", type=Path, default=RESULTS / "compare_clients.json")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    tools = [t for t in args.only.split(",") if t]
    unknown = set(tools) - set(TOOLS)
    if unknown:
        parser.error(f"unknown tools: {', '.join(sorted(unknown))}")

    def say(text: str) -> None:
        if not args.no_progress:
            print(text, file=sys.stderr)

    started = time.monotonic()
    report = asyncio.run(measure(tools, say))
    report["seconds"] = time.monotonic() - started
    report["command"] = command_line(argv)
    report["table"] = table(report)
    write_json(args.json, report)
    print(report["table"])
    print(f"\n{report['command']}\n({report['seconds']:.0f} s; JSON: {args.json})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
