"""A canary secret never leaves robotgate, on any client path, through any output.

The secrets: a unique password and token in page URLs, in the URL of a proxy
(``http://user:PASSWORD@127.0.0.1:port``, one answering 400, one answering 407, one
refusing connections), in a redirect's target, and in request headers
(``Authorization``, ``Cookie``, ``Proxy-Authorization``).  The outputs swept: each
exception's str and repr, each decision's reason and error, every record of every
``robotgate`` logger at DEBUG (message and traceback), every event, the metrics'
data points, and the CLI's stdout, stderr, JSON lines and HTML report.  The paths:
``gate.fetch``, ``gate.middleware``, the httpx transport, ``gate.crawl``, crawlee's
client, Scrapy's middleware (a child process: its robotgate log lines and results),
a Playwright context and crawl4ai's crawler (in the system Chromium; skipped without
one), and the CLI.

Then a proxy's answer is not the site's: robots.txt asked through a proxy answering
407 is unreachable, so ``/no/`` (disallowed by the real robots.txt) is never asked
for, on every path that takes a proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from base64 import b64encode
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from robotgate import Disallowed, RobotGate
from robotgate.crawl import CrawlResult
from robotgate.events import Event
from tests.contract.test_request_paths import AGENT, PUBLIC, ROOT, public_loopback_1
from tests.support.proxies import FailingProxy, closed_port

httpx = pytest.importorskip("httpx")
pytest.importorskip("scrapy", reason="Scrapy is not installed: pip install 'robotgate[scrapy]'")
from robotgate.integrations.httpx import RobotGateTransport  # noqa: E402

pytestmark = pytest.mark.slow  # loopback servers, child processes, browsers

PASSWORD = "CanaryPw-88c4f1"
TOKEN = "CanaryTok-88c4f1"
#: What must never show: the secrets, and the Basic credentials made of them.
SECRETS = (PASSWORD, TOKEN, b64encode(f"user:{PASSWORD}".encode()).decode())
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Cookie": f"sid={PASSWORD}",
           "Proxy-Authorization": f"Basic {SECRETS[2]}"}
ROBOTS = "User-agent: *\nDisallow: /no/\n"


def headers_for(url: str, proxy: str | None) -> dict[str, str]:
    """The secret headers a request can carry: aiohttp refuses an Authorization header
    beside a URL's credentials (a redirect's target's too), and a Proxy-Authorization
    beside a proxy's."""
    return {name: value for name, value in HEADERS.items()
            if not (name == "Authorization" and ("@" in url or "/redirect/" in url))
            and not (name == "Proxy-Authorization" and proxy is not None)}


# -- the servers ---------------------------------------------------------------------------


@dataclass
class Site:
    """robots.txt disallowing /no/; /redirect/N answers 302 to ``targets[N]`` (so that
    only the answer holds the target); else a page."""

    paths: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None

    async def start(self) -> Site:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, PUBLIC, 0).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, path: str, userinfo: str = "") -> str:
        return f"http://{userinfo}{PUBLIC}:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.paths.append(request.path)
        if request.path == "/robots.txt":
            return web.Response(text=ROBOTS)
        if request.path.startswith("/redirect/"):
            target = self.targets[int(request.path.rsplit("/", 1)[1])]
            return web.Response(status=302, headers={"Location": target})
        return web.Response(text="<html><body>a page</body></html>", content_type="text/html")


def canary_proxy(status: int) -> FailingProxy:
    """A loopback proxy answering ``status``, its URL with the canary password."""
    return FailingProxy(status, PUBLIC, PASSWORD)


def refusing_port() -> int:
    return closed_port(PUBLIC)


@dataclass
class World:
    """The site, the proxies and the URLs a path is asked for."""

    site: Site
    proxies: dict[str, FailingProxy]
    dead: str  # a proxy URL with the password, on a port refusing connections

    def pages(self) -> list[str]:
        """URLs holding the secrets, direct: a page, a disallowed page, a redirect whose
        target (holding the password) is disallowed, one allowed, a page of a port
        refusing connections (robots.txt unreachable, the client's error said), and the
        token in a query: a disallowed page's, an allowed page's, a redirect target's."""
        site = self.site
        site.targets = [site.url("/no/hop", f"user:{PASSWORD}@"),
                        site.url("/page/2", f"{TOKEN}@"),
                        site.url(f"/no/signed?X-Amz-Signature={TOKEN}&part=1")]
        dead_site = self.dead + "/page"  # with the password, on the refusing port
        return [site.url("/page/1", f"user:{PASSWORD}@"), site.url("/no/x", f"{TOKEN}@"),
                site.url("/redirect/0"), site.url("/redirect/1"), dead_site,
                site.url(f"/no/q?token={TOKEN}"), site.url(f"/page/3?access_token={TOKEN}"),
                site.url("/redirect/2")]

    def proxied(self) -> list[tuple[str, str]]:
        """(URL, proxy URL): an https origin of its own per proxy, asked through it (the
        proxy fails the CONNECT: robots.txt is unreachable, the error quoting the proxy)."""
        return [(f"https://{PUBLIC}:{1000 + n}/page", url) for n, url in enumerate(
            [*(proxy.url for proxy in self.proxies.values()), self.dead])]


@pytest.fixture
async def world() -> AsyncIterator[World]:
    site = await Site().start()
    proxies = {"400": await canary_proxy(400).start(), "407": await canary_proxy(407).start()}
    yield World(site, proxies, f"http://user:{PASSWORD}@{PUBLIC}:{refusing_port()}")
    for proxy in proxies.values():
        await proxy.close()
    await site.close()


# -- what is swept ---------------------------------------------------------------------------


class Sweep(logging.Handler):
    """Every text that left: log records of every robotgate logger at DEBUG, events,
    exceptions, decisions, results, metrics, output streams."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[tuple[str, str]] = []
        self.events: list[Event] = []
        self.formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(("log", self.formatter.format(record)))

    def note(self, surface: str, text: object) -> None:
        self.texts.append((surface, str(text)))

    def failure(self, exc: BaseException) -> None:
        self.note("exception str", str(exc))
        self.note("exception repr", repr(exc))
        decision = getattr(exc, "decision", None)
        if decision is not None:
            self.decision(decision)

    def decision(self, decision: Any) -> None:
        self.note("decision reason", decision.reason)
        self.note("decision error", decision.error)
        self.note("decision", decision)

    def check(self, *surfaces: str) -> None:
        """No secret anywhere, and each of ``surfaces`` said something (so that the
        sweep could have found one)."""
        for event in self.events:
            self.note("event", repr(event))
        said = {surface for surface, text in self.texts if text and text != "None"}
        assert set(surfaces) <= said, (surfaces, said)
        leaks = [(surface, text) for surface, text in self.texts
                 if any(secret in text for secret in SECRETS)]
        assert leaks == [], leaks


@pytest.fixture
def sweep() -> Iterator[Sweep]:
    handler = Sweep()
    root = logging.getLogger("robotgate")
    level = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


@asynccontextmanager
async def gate_for(sweep: Sweep, **options: Any) -> AsyncIterator[RobotGate]:
    """A gate whose events and metrics the sweep reads."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from robotgate.metrics import MetricsOptions

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    async with RobotGate(AGENT, is_private=public_loopback_1, delay=0,
                         on_event=sweep.events.append,
                         metrics=MetricsOptions(provider, server_address=True),
                         **options) as gate:
        yield gate
    data = reader.get_metrics_data()
    sweep.note("metrics", data.to_json() if data is not None else "")
    provider.shutdown()


# -- the in-process paths -----------------------------------------------------------------


async def _fetch(gate: RobotGate, sweep: Sweep, url: str, proxy: str | None) -> None:
    try:
        async with gate.fetch(url, proxy=proxy, headers=headers_for(url, proxy)) as resp:
            await resp.read()
    except (Disallowed, aiohttp.ClientError) as exc:
        sweep.failure(exc)


async def _middleware(session: aiohttp.ClientSession, sweep: Sweep, url: str,
                      proxy: str | None) -> None:
    try:
        async with session.get(url, proxy=proxy, headers=headers_for(url, proxy)) as resp:
            await resp.read()
    except (Disallowed, aiohttp.ClientError) as exc:
        sweep.failure(exc)


async def _httpx(gate: RobotGate, sweep: Sweep, urls: list[str], proxy: str | None) -> None:
    inner = httpx.AsyncHTTPTransport(proxy=proxy)
    async with httpx.AsyncClient(transport=RobotGateTransport(gate, inner),
                                 follow_redirects=True) as client:
        for url in urls:
            try:
                await client.get(url, headers=headers_for(url, proxy))
            except (Disallowed, httpx.HTTPError) as exc:
                sweep.failure(exc)


async def _crawlee(gate: RobotGate, sweep: Sweep, world: World) -> None:
    pytest.importorskip("crawlee", reason="crawlee is not installed")
    from crawlee import Request
    from crawlee.proxy_configuration import ProxyInfo

    from robotgate.integrations.crawlee import RobotGateHttpClient

    asks: list[tuple[str, str | None]] = [(url, None) for url in world.pages()]
    asks += world.proxied()
    async with RobotGateHttpClient(gate, on_refused=lambda url, no: sweep.failure(no)) as client:
        for url, proxy in asks:
            info = None
            if proxy is not None:
                port = int(proxy.rsplit(":", 1)[1])
                info = ProxyInfo(url=proxy, scheme="http", hostname=PUBLIC, port=port,
                                 username="user", password=PASSWORD)
            try:
                await client.crawl(Request.from_url(url, headers=headers_for(url, proxy)),
                                   proxy_info=info)
            except Exception as exc:  # crawlee's client's errors, robotgate's refusals
                sweep.failure(exc)


async def _crawl(gate: RobotGate, sweep: Sweep, world: World) -> None:
    results: list[CrawlResult] = []

    async def handler(url: str, resp: aiohttp.ClientResponse) -> tuple[str, ...]:
        return ()

    await gate.crawl(world.pages(), handler, retries=0, scope="any", on_result=results.append)
    for result in results:
        sweep.note("result error", result.error)
        if result.decision is not None:
            sweep.decision(result.decision)


@pytest.mark.parametrize("path", ["fetch", "middleware", "httpx", "crawlee", "crawl"])
async def test_no_secret_leaves_an_in_process_path(path: str, world: World,
                                                   sweep: Sweep) -> None:
    async with gate_for(sweep) as gate:
        if path == "fetch":
            for url in world.pages():
                await _fetch(gate, sweep, url, None)
            for url, proxy in world.proxied():
                await _fetch(gate, sweep, url, proxy)
        elif path == "middleware":
            async with aiohttp.ClientSession(middlewares=(gate.middleware,)) as session:
                for url in world.pages():
                    await _middleware(session, sweep, url, None)
                for url, proxy in world.proxied():
                    await _middleware(session, sweep, url, proxy)
        elif path == "httpx":
            await _httpx(gate, sweep, world.pages(), None)
            for url, proxy in world.proxied():
                await _httpx(gate, sweep, [url], proxy)
        elif path == "crawlee":
            await _crawlee(gate, sweep, world)
        else:
            await _crawl(gate, sweep, world)
    assert "/no/x" not in world.site.paths and "/no/hop" not in world.site.paths
    surfaces = ["log", "event", "metrics", "decision reason"]
    if path != "crawl":
        surfaces += ["exception str", "exception repr"]
    if path in ("fetch", "middleware", "crawlee"):
        # robots.txt through each proxy was asked, and is unreachable: the error said.
        assert all(proxy.targets for proxy in world.proxies.values()), world.proxies
        surfaces.append("decision error")
    sweep.check(*surfaces)


# -- Scrapy, in a child process ------------------------------------------------------------


async def _child(module: str, *argv: str) -> tuple[str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, *argv, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 90)  # hang guard
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()[-3000:]
    return out.decode(), err.decode()


async def test_no_secret_leaves_scrapy(world: World, sweep: Sweep) -> None:
    asks: list[tuple[str, str | None]] = [(url, None) for url in world.pages()]
    asks += world.proxied()
    config = {"urls": [url for url, _ in asks], "sequential": True,
              "meta": [{"proxy": proxy} if proxy else {} for _, proxy in asks],
              "settings": {"ROBOTGATE_IS_PRIVATE":
                           "tests.contract.test_request_paths.public_loopback_1",
                           "ROBOTGATE_DELAY": 0, "LOG_LEVEL": "DEBUG",
                           "DEFAULT_REQUEST_HEADERS": HEADERS}}
    out, err = await _child("tests.contract.scrapy_paths_runner", json.dumps(config))
    results = json.loads(out.strip().splitlines()[-1])
    for result in results:
        if result is not None and "refused" in result:  # robotgate's refusal, not Scrapy's
            sweep.note("decision reason", result["reason"])  # error (its own words)
    # robotgate's own log lines (Scrapy's are its own: it logs each request's URL).
    sweep.texts += [("log", line) for line in err.splitlines() if "[robotgate" in line]
    assert "/no/x" not in world.site.paths and "/no/hop" not in world.site.paths
    assert all(proxy.targets for proxy in world.proxies.values()), world.proxies
    sweep.check("log", "decision reason")


# -- the CLI ---------------------------------------------------------------------------------


async def test_no_secret_leaves_the_cli(world: World, sweep: Sweep, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from robotgate.cli import main

    lines, html = tmp_path / "crawl.jsonl", tmp_path / "crawl.html"
    # The CLI runs its own event loop: a thread of its own, the servers on the test's loop.
    code = await asyncio.to_thread(main, ["fetch", "--agent", AGENT, "--store", "memory",
                                          "--delay", "0", "--out", str(lines),
                                          *world.pages()])
    assert code in (0, 1), capsys.readouterr().err
    fetched = capsys.readouterr()
    code = await asyncio.to_thread(main, ["report", str(lines), "--out", str(html)])
    reported = capsys.readouterr()
    sweep.note("cli stdout", fetched.out + reported.out)
    sweep.note("cli stderr", fetched.err + reported.err)
    sweep.note("cli JSON lines", lines.read_text())
    sweep.note("cli report", html.read_text())
    assert "/no/x" not in world.site.paths and "/no/hop" not in world.site.paths
    sweep.check("cli stderr", "cli JSON lines", "cli report")


# -- the browsers ----------------------------------------------------------------------------


async def test_no_secret_leaves_a_playwright_context(world: World, sweep: Sweep) -> None:
    from tests.support.browser import chromium

    pytest.importorskip("playwright.async_api", reason="Playwright is not installed")
    from playwright.async_api import Error as PlaywrightError

    from robotgate.integrations.playwright import attach

    async with chromium() as browser, gate_for(sweep) as gate:
        # One context a proxy (attach asks robots.txt through the one it is given).
        routes: list[tuple[list[str], dict[str, str] | None]] = [(world.pages(), None)]
        for url, proxy in world.proxied():
            port = proxy.rsplit(":", 1)[1]
            routes.append(([url], {"server": f"http://{PUBLIC}:{port}", "username": "user",
                                   "password": PASSWORD}))
        for urls, proxy in routes:
            context = await browser.new_context(service_workers="block")
            await context.set_extra_http_headers({"Authorization": HEADERS["Authorization"]})
            handle = await attach(gate, context, proxy=proxy,  # type: ignore[arg-type]
                                  on_refused=lambda request, no: sweep.failure(no))
            page = await context.new_page()
            for url in urls:
                # Playwright's own error quotes the URL it was given: its words, not ours.
                with contextlib.suppress(PlaywrightError):
                    await page.goto(url)
            await handle.detach()
            await context.close()
    assert "/no/x" not in world.site.paths and "/no/hop" not in world.site.paths
    sweep.check("log", "event", "exception str", "decision reason", "decision error")


async def test_no_secret_leaves_crawl4ai(world: World, sweep: Sweep,
                                         crawl4ai_home: Path) -> None:
    pytest.importorskip("crawl4ai", reason="crawl4ai is not installed")
    pytest.importorskip("playwright.async_api", reason="Playwright is not installed")
    import importlib

    from crawl4ai import BrowserConfig, CacheMode, CrawlerRunConfig, HTTPCrawlerConfig

    from tests.support.browser import CHROMIUM_ARGS, chromium_path

    integration = importlib.import_module("robotgate.integrations.crawl4ai")
    run = CrawlerRunConfig(cache_mode=CacheMode.BYPASS, verbose=False)
    browser = BrowserConfig(headless=True, extra_args=CHROMIUM_ARGS, verbose=False)
    async with gate_for(sweep) as gate:
        # Its plain HTTP crawler, then its crawler in the system Chromium.
        for config, options in ((HTTPCrawlerConfig(), {}),
                                (browser, {"executable_path": chromium_path()})):
            async with integration.RobotGateCrawler(
                    gate, config, on_refused=lambda url, no: sweep.failure(no),
                    **options) as crawler:
                for result in await crawler.arun_many(world.pages(), config=run):
                    if not result.success:
                        sweep.note("result error", result.error_message)
    assert "/no/x" not in world.site.paths and "/no/hop" not in world.site.paths
    sweep.check("log", "event", "result error", "decision reason")


# -- a proxy's answer is not the site's ------------------------------------------------------


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    s = await Site().start()
    yield s
    await s.close()


class AttachedBrowser:
    """A Playwright context attached to the gate with the pages' proxy (``attach``'s
    ``proxy``, which robots.txt is asked through): each ask a ``page.goto``."""

    name = "browser"

    async def run(self, asks: list[Any], **options: Any) -> list[Any]:
        from playwright.async_api import Error as PlaywrightError

        from robotgate.integrations.playwright import attach
        from tests.contract.test_request_paths import Result
        from tests.support.browser import chromium

        [proxy] = {ask.proxy for ask in asks}
        port = proxy.rsplit(":", 1)[1]
        settings = {"server": f"http://{PUBLIC}:{port}", "username": "user",
                    "password": PASSWORD}
        refusals: dict[str, Disallowed] = {}
        results = []
        async with chromium() as browser, RobotGate(AGENT, is_private=public_loopback_1,
                                                    **options) as gate:
            context = await browser.new_context(service_workers="block")
            await attach(gate, context, proxy=settings,  # type: ignore[arg-type]
                         on_refused=lambda request, no: refusals.setdefault(request.url, no))
            page = await context.new_page()
            for ask in asks:
                try:
                    await page.goto(ask.url)
                except PlaywrightError as exc:
                    failure = str(exc)
                else:
                    failure = "answered"
                no = refusals.get(ask.url)
                results.append(Result(refused=no.decision.outcome, reason=no.decision.reason)
                               if no is not None else Result(error=failure))
        return results


@pytest.fixture(params=["fetch", "middleware", "httpx", "scrapy", "crawlee", "browser"])
def proxied_path(request: pytest.FixtureRequest) -> Any:
    from tests.contract.test_provenance_paths import PATHS

    if request.param == "browser":
        pytest.importorskip("playwright.async_api", reason="Playwright is not installed")
        return AttachedBrowser()
    return PATHS[request.param](request.param)


async def test_robots_txt_a_proxy_answers_407_for_is_unreachable_on_every_proxied_path(
        proxied_path: Any, site: Site) -> None:
    from tests.contract.test_provenance_paths import Ask

    proxy = await canary_proxy(407).start()
    try:
        results = await proxied_path.run([Ask(site.url("/page/1"), proxy=proxy.url),
                                          Ask(site.url("/no/private"), proxy=proxy.url)],
                                         delay=0)
    finally:
        await proxy.close()
    # robots.txt was asked through the proxy, which answered 407: the site was never
    # asked, so nothing it disallows may be fetched; each page is refused, unreachable.
    assert any(target.endswith("/robots.txt") for target in proxy.targets), proxy.targets
    assert not [t for t in proxy.targets if "/no/" in t], proxy.targets
    assert site.paths == [], site.paths
    assert [r.refused for r in results] == ["unreachable", "unreachable"], results
    assert "the proxy answered 407" in results[1].reason, results
