"""robotgate.integrations.crawl4ai: crawl4ai's crawler, in the system Chromium or with its
plain HTTP crawler, crawling loopback sites through the gate keeps robotgate's promises,
and a refused page is crawl4ai's own failed result."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import itertools
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from aiohttp import web

from robotgate import Disallowed, RobotGate
from tests.contract.test_request_paths import PRIVATE, PUBLIC, public_loopback_1
from tests.support.arrivals import Noted
from tests.support.browser import CHROMIUM_ARGS, chromium, chromium_path

if importlib.util.find_spec("crawl4ai") is None:
    pytest.skip("crawl4ai is not installed (pip install 'robotgate[crawl4ai]')",
                allow_module_level=True)
pytest.importorskip("playwright.async_api", reason="Playwright is not installed")

pytestmark = pytest.mark.slow  # each test starts a Chromium, or waits for Crawl-delay

AGENT = "TestBot/1.0 (+https://example.com/bot)"
ROBOTS = "User-agent: *\nDisallow: /private\nCrawl-delay: 0.5\n"
# Text enough that crawl4ai's anti-bot check does not take the page for an empty shell.
PAGE = ("<html><head><title>page {n}</title></head><body><h1>page {n} of the site</h1>"
        + "<p>A paragraph of plain words about nothing in particular, for the test.</p>" * 8
        + '<a href="/page/{m}">next</a>{extra}</body></html>')


@dataclass
class Site(Noted):
    """A loopback site noting each request: its path, when it came, its User-Agent.
    ``extra`` is markup every page carries (``{private}``: the private site's origin)."""

    host: str
    robots: str = ROBOTS
    extra: str = ""
    private: str = ""
    arrivals: list[tuple[str, float, str]] = field(default_factory=list)
    port: int = 0
    runner: web.AppRunner | None = None

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = self.note(request)
        if path == "/robots.txt":
            return web.Response(text=self.robots)
        if path == "/into-private":
            return web.Response(status=302, headers={"Location": "/private/page"})
        if path == "/leaves":  # a page that sends itself on, into /private, as it loads
            body = PAGE.format(n=0, m=1, extra=self.extra)
            return web.Response(text=body.replace(
                "<body>", '<body><script>location.href = "/private/z"</script>'),
                content_type="text/html")
        if path == "/forbidden":  # what crawl4ai's anti-bot check takes for a block
            return web.Response(status=403, text="<html><body>No.</body></html>",
                                content_type="text/html")
        if path == "/away":
            return web.Response(status=302, headers={"Location": request.query["to"]})
        if path == "/busy":
            return web.Response(text=PAGE.format(n=0, m=1, extra=BUSY),
                                content_type="text/html")
        if path == "/busy-worker.js":
            return web.Response(text=BUSY_WORKER, content_type="text/javascript")
        if path == "/big":  # 4 MiB
            return web.Response(text=PAGE.format(n=0, m=1, extra="x" * (4 << 20)),
                                content_type="text/html")
        if path == "/stateful":
            return web.Response(text=PAGE.format(n=0, m=1, extra=STATEFUL),
                                content_type="text/html")
        n = int(path.rsplit("/", 1)[1]) if path[-1:].isdigit() else 0
        extra = self.extra.format(private=self.private)
        return web.Response(text=PAGE.format(n=n, m=n + 1, extra=extra),
                            content_type="text/html")

    async def __aenter__(self) -> Site:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, self.host, 0).start()
        self.port = self.runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


@pytest.fixture
def integration(crawl4ai_home: Path) -> ModuleType:
    """robotgate.integrations.crawl4ai, imported once crawl4ai's files (a cache and logs,
    written from its import on) are kept out of $HOME (tests/conftest.py)."""
    return importlib.import_module("robotgate.integrations.crawl4ai")


def _browser(integration: ModuleType, gate: RobotGate, profile: Path | None = None,
             **options: Any) -> Any:
    """The crawler in the system Chromium; ``profile`` given as crawl4ai's
    ``user_data_dir`` (None: robotgate's temporary one)."""
    from crawl4ai import BrowserConfig

    config = BrowserConfig(headless=True, extra_args=CHROMIUM_ARGS, verbose=False,
                           user_data_dir=None if profile is None else str(profile))
    return integration.RobotGateCrawler(gate, config, executable_path=chromium_path(), **options)


def _made_profiles() -> set[Path]:
    """The temporary profiles robotgate made for crawlers (removed on close)."""
    return set(Path(tempfile.gettempdir()).glob("robotgate-crawl4ai-*"))


def _run(*, cached: bool = False, **options: Any) -> Any:
    """A run's config: crawl4ai's cache bypassed, unless ``cached``."""
    from crawl4ai import CacheMode, CrawlerRunConfig

    mode = CacheMode.ENABLED if cached else CacheMode.BYPASS
    return CrawlerRunConfig(cache_mode=mode, verbose=False, **options)


# A page that tells what an earlier page of the tab left (sessionStorage, window.name),
# leaves some itself, and sends a request every 50 ms and a beacon as it goes.
STATEFUL = ('<p id="seen"></p><script>document.getElementById("seen").textContent = '
            '"left:" + sessionStorage.getItem("left") + "," + window.name + ";";'
            'sessionStorage.setItem("left", "stored"); window.name = "named";'
            'let n = 0; setInterval(() => fetch("/tick/" + n++), 50);'
            'addEventListener("pagehide", () => navigator.sendBeacon("/tick/bye"));</script>')
NOTHING_LEFT = "left:null,;"
# A page whose requests come from no timer of its own: a requestAnimationFrame loop, a
# promise chain (each fetch's end starts the next), a dedicated worker's timer; and a
# beacon as it goes, naming its document.
BUSY = ('<p id="doc"></p><script>const doc = String(Math.random()).slice(2);'
        'document.getElementById("doc").textContent = "doc:" + doc + ";";'
        'let frames = 0, waiting = false; (function frame() {'
        ' if (!waiting && frames < 5000) { waiting = true;'
        '  fetch("/tick/raf/" + frames++).finally(() => { waiting = false; }); }'
        ' requestAnimationFrame(frame); })();'
        '(async () => { for (let n = 0; n < 5000; n++) {'
        ' try { await fetch("/tick/chain/" + n); } catch (e) {'
        '  await new Promise((done) => requestAnimationFrame(done)); } } })();'
        'new Worker("/busy-worker.js");'
        'addEventListener("pagehide", () => navigator.sendBeacon("/tick/bye/" + doc));'
        '</script>')
BUSY_WORKER = 'let n = 0; setInterval(() => { if (n < 5000) fetch("/tick/worker/" + n++); }, 50);'
LEFT = "left:stored,named;"


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(sorted(times))]


# What the page's script sees of the browser: navigator.webdriver (off: crawl4ai's own
# switch, kept beside robotgate's).  (Shared workers are no longer switched off: the
# browser's only network is the gate, whatever makes a request.)
PROBE = ('<p id="probe"></p><script>document.getElementById("probe").textContent = '
         '"webdriver:" + navigator.webdriver</script>')


async def test_a_browser_crawl_keeps_every_promise(integration: ModuleType, tmp_path: Path) -> None:
    refused: list[tuple[str, Disallowed]] = []
    async with Site(PUBLIC, extra=PROBE) as site, RobotGate(AGENT, delay=0.1) as gate:
        urls = [site.url("/page/1"), site.url("/private/x"), site.url("/page/2"),
                site.url("/into-private"), site.url("/page/3")]
        async with _browser(integration, gate, tmp_path / "profile",
                            on_refused=lambda url, no: refused.append((url, no))) as crawler:
            results = await crawler.arun_many(urls, config=_run())
            alone = await crawler.arun(site.url("/private/y"), config=_run())
            leaving = await crawler.arun(site.url("/leaves"), config=_run(cached=True))
            again = await crawler.arun(site.url("/leaves"), config=_run(cached=True))

    by_url = {result.url: result for result in results}
    for n in (1, 2, 3):
        page = by_url[site.url(f"/page/{n}")]
        assert page.success, page.error_message
        assert f"page {n} of the site" in page.html
        assert "webdriver:false" in page.html
    for path in ("/private/x", "/into-private"):
        failed = by_url[site.url(path)]
        assert not failed.success
        assert failed.status_code is None  # nothing was sent
        assert failed.error_message.startswith("refused by robotgate: ")
        assert "Disallow: /private" in failed.error_message
    assert not alone.success and "Disallow: /private" in alone.error_message
    # A page sending itself into /private leaves Chromium's error page: refused too.
    assert not leaving.success and "/private/z: disallowed by" in leaving.error_message
    # ... and Chromium's error page is not kept in crawl4ai's cache as the page.
    assert not again.success and "/private/z: disallowed by" in again.error_message
    assert sorted(url for url, _ in refused) == sorted(
        [site.url("/private/x"), site.url("/into-private"), site.url("/private/y"),
         site.url("/leaves"), site.url("/leaves")])
    assert {no.url for _, no in refused} == {site.url("/private/x"), site.url("/private/page"),
                                            site.url("/private/y"), site.url("/private/z")}
    # robots.txt once; nothing disallowed reached the server; every request is the gate's.
    assert site.paths().count("/robots.txt") == 1
    assert not [path for path in site.paths() if path.startswith("/private")]
    assert {agent for _, _, agent in site.arrivals} == {AGENT}
    # Crawl-delay: 0.5 between any two requests after robots.txt, at the server (three
    # pages, the redirect's first hop, the page that sends itself on, twice).
    sent = [t for path, t, _ in site.arrivals if path != "/robots.txt"]
    assert len(sent) == 6
    assert min(_gaps(sent)) >= 0.5


async def test_a_public_page_cannot_point_the_browser_into_a_private_network(
        integration: ModuleType, tmp_path: Path) -> None:
    allow = "User-agent: *\nAllow: /\n"
    pointers = ('<img src="{private}/img.png"><iframe src="{private}/frame"></iframe>'
                '<script>fetch("{private}/api").catch(() => null)</script>')
    async with Site(PRIVATE, robots=allow) as private, \
            Site(PUBLIC, robots=allow, extra=pointers) as public:
        public.private = private.url("")
        async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate, \
                _browser(integration, gate, tmp_path / "profile") as crawler:
            page = await crawler.arun(public.url("/page/1"), config=_run())
            hop = await crawler.arun(
                public.url(f"/away?to={private.url('/page/2')}"), config=_run())
            mine = await crawler.arun(private.url("/page/3"), config=_run())

    assert page.success, page.error_message
    assert not hop.success and hop.error_message.startswith("refused by robotgate: ")
    assert "private" in hop.error_message
    # The caller's own URL to the private site is followed; the public page's pointers
    # (its image, frame, fetch and redirect) reach nothing, not even robots.txt.
    assert mine.success, mine.error_message
    assert private.paths() == ["/robots.txt", "/page/3"]
    # The profile, crawl4ai's user_data_dir, is the browser's, its preloading off.
    preferences = json.loads((tmp_path / "profile/Default/Preferences").read_text())
    assert preferences["net"]["network_prediction_options"] == 2


async def test_a_page_of_a_context_robotgate_did_not_attach_is_not_used(
        integration: ModuleType, tmp_path: Path) -> None:
    made = _made_profiles()
    async with Site(PUBLIC) as site, RobotGate(AGENT, delay=0) as gate, \
            _browser(integration, gate) as crawler, chromium() as other:
        assert len(_made_profiles() - made) == 1
        unattached = await other.new_context(service_workers="block")
        manager = crawler.crawler_strategy.browser_manager

        async def foreign_page(crawlerRunConfig: Any) -> tuple[Any, Any]:
            return await unattached.new_page(), unattached  # as a changed crawl4ai might

        manager.get_page = foreign_page
        result = await crawler.arun(site.url("/page/1"), config=_run())
    assert not result.success and "did not attach" in result.error_message
    assert site.paths() == []
    assert _made_profiles() <= made  # robotgate's temporary profile is gone


async def test_the_http_crawler_keeps_every_promise(integration: ModuleType) -> None:
    from crawl4ai import HTTPCrawlerConfig

    refused: list[str] = []
    async with Site(PUBLIC) as site, RobotGate(AGENT, delay=0.1) as gate:
        urls = [site.url("/page/1"), site.url("/private/x"), site.url("/page/2"),
                site.url("/into-private"), site.url("/page/3")]
        async with integration.RobotGateCrawler(
                gate, HTTPCrawlerConfig(),
                on_refused=lambda url, no: refused.append(url)) as crawler:
            results = await crawler.arun_many(urls, config=_run())

    by_url = {result.url: result for result in results}
    for n in (1, 2, 3):
        page = by_url[site.url(f"/page/{n}")]
        assert page.success, page.error_message
        assert f"page {n} of the site" in page.html
    for path in ("/private/x", "/into-private"):
        failed = by_url[site.url(path)]
        assert not failed.success and failed.status_code is None
        assert failed.error_message.startswith("refused by robotgate: ")
    assert sorted(refused) == sorted([site.url("/private/x"), site.url("/into-private")])
    assert site.paths().count("/robots.txt") == 1
    assert not [path for path in site.paths() if path.startswith("/private")]
    assert {agent for _, _, agent in site.arrivals} == {AGENT}
    pages = site.times("/page/") + site.times("/into-private")
    assert len(pages) == 4
    assert min(_gaps(pages)) >= 0.5


async def test_a_refused_page_is_final(integration: ModuleType,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from crawl4ai import HTTPCrawlerConfig

    fetched: list[str] = []

    async def fallback(url: str) -> str:
        fetched.append(url)
        return "<html><body>fetched some other way</body></html>"

    async with Site(PUBLIC) as site, RobotGate(AGENT, delay=0) as gate, \
            integration.RobotGateCrawler(gate, HTTPCrawlerConfig()) as crawler:
        result = await crawler.arun(site.url("/private/x"), config=_run(
            max_retries=2, fallback_fetch_function=fallback))
        disallowed = gate.stats["disallowed"]
    assert not result.success and "Disallow: /private" in result.error_message
    # Not retried, not handed to the fallback fetch, no traceback printed.
    assert disallowed == 1
    assert fetched == []
    assert "/private/x" not in site.paths()
    printed = capsys.readouterr()
    assert "Error" not in printed.out + printed.err


# Each page of a deep crawl's site: a disallowed page and a page of the private site.
LINKS = '<a href="/private/x">private</a><a href="{private}/page/7">elsewhere</a>'
ALLOW_BUT_PRIVATE = "User-agent: *\nDisallow: /private\n"


async def test_a_deep_crawl_follows_each_link_as_a_pointer_of_its_page(
        integration: ModuleType, tmp_path: Path) -> None:
    from crawl4ai import BFSDeepCrawlStrategy

    allow = "User-agent: *\nAllow: /\n"
    async with Site(PRIVATE, robots=allow) as private, \
            Site(PUBLIC, robots=ALLOW_BUT_PRIVATE, extra=LINKS) as public:
        public.private = private.url("")
        async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate, \
                _browser(integration, gate, tmp_path / "profile") as crawler:
            deep = BFSDeepCrawlStrategy(max_depth=3, include_external=True)
            results = await crawler.arun(public.url("/page/1"),
                                         config=_run(deep_crawl_strategy=deep))
            reached_private = private.paths()
            # The private site's own pages point where they like (the start: input).
            streamed = [result async for result in await crawler.arun(
                private.url("/page/1"), config=_run(
                    deep_crawl_strategy=BFSDeepCrawlStrategy(max_depth=2), stream=True))]

    by_url = {result.url: result for result in results}
    assert sorted(by_url) == sorted([*(public.url(f"/page/{n}") for n in (1, 2, 3, 4)),
                                     public.url("/private/x"), private.url("/page/7")])
    for n in (1, 2, 3, 4):
        page = by_url[public.url(f"/page/{n}")]
        assert page.success, page.error_message
        assert f"page {n} of the site" in page.html
        assert page.metadata["depth"] == n - 1
    disallowed, pointed = by_url[public.url("/private/x")], by_url[private.url("/page/7")]
    assert not disallowed.success and "Disallow: /private" in disallowed.error_message
    assert not pointed.success and pointed.error_message.startswith("refused by robotgate: ")
    assert "private" in pointed.error_message
    # The refusal, and crawl4ai's own account of where the page stood in the crawl.
    assert pointed.metadata[integration.REFUSED]["url"] == private.url("/page/7")
    assert pointed.metadata["depth"] == 1
    assert pointed.metadata["parent_url"] == public.url("/page/1")
    # Nothing disallowed reached the public site, and its links into the private one
    # reached nothing there, not even robots.txt.
    assert not [path for path in public.paths() if path.startswith("/private")]
    assert public.paths().count("/robots.txt") == 1
    assert reached_private == []
    assert sorted(result.url for result in streamed) == [
        private.url(f"/page/{n}") for n in (1, 2, 3)]
    assert all(result.success for result in streamed), [r.error_message for r in streamed]
    assert private.paths() == ["/robots.txt", "/page/1", "/page/2", "/page/3"]


async def test_the_http_crawlers_deep_crawl_follows_each_link_as_a_pointer_of_its_page(
        integration: ModuleType) -> None:
    from crawl4ai import BFSDeepCrawlStrategy, HTTPCrawlerConfig

    allow = "User-agent: *\nAllow: /\n"
    async with Site(PRIVATE, robots=allow) as private, \
            Site(PUBLIC, robots=ALLOW_BUT_PRIVATE, extra=LINKS) as public:
        public.private = private.url("")
        async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate, \
                integration.RobotGateCrawler(gate, HTTPCrawlerConfig()) as crawler:
            deep = BFSDeepCrawlStrategy(max_depth=2, include_external=True)
            results = await crawler.arun(public.url("/page/1"),
                                         config=_run(deep_crawl_strategy=deep))

    outcome = {result.url: result.success for result in results}
    assert outcome == {public.url("/page/1"): True, public.url("/page/2"): True,
                       public.url("/page/3"): True, public.url("/private/x"): False,
                       private.url("/page/7"): False}
    assert not [path for path in public.paths() if path.startswith("/private")]
    assert private.paths() == []


async def test_a_refusal_is_told_from_crawl4ais_own_failure(integration: ModuleType,
                                                           tmp_path: Path) -> None:
    async with Site(PUBLIC, robots=ALLOW_BUT_PRIVATE) as site, \
            RobotGate(AGENT, delay=0) as gate, \
            _browser(integration, gate, tmp_path / "profile") as crawler:
        results = await crawler.arun_many(
            [site.url("/private/x"), site.url("/forbidden")], config=_run())
    # crawl4ai's dispatcher gives the results in the order the runs ended.
    by_url = {result.url: result for result in results}
    refused, blocked = by_url[site.url("/private/x")], by_url[site.url("/forbidden")]

    assert not refused.success and not blocked.success
    told = refused.metadata[integration.REFUSED]
    assert told["url"] == site.url("/private/x")
    assert "Disallow: /private" in told["reason"]
    assert json.loads(json.dumps(told)) == told  # as crawl4ai's results are stored
    # crawl4ai fetched this one and failed it itself: not the gate's refusal.
    assert integration.REFUSED not in (blocked.metadata or {})
    assert site.paths() == ["/robots.txt", "/forbidden"]


async def test_redirected_url_is_where_the_page_came_from(integration: ModuleType,
                                                        tmp_path: Path) -> None:
    from crawl4ai import HTTPCrawlerConfig

    async with Site(PUBLIC, robots=ALLOW_BUT_PRIVATE) as site, \
            RobotGate(AGENT, delay=0) as gate:
        away = site.url("/away?to=/page/5")
        async with _browser(integration, gate, tmp_path / "profile") as crawler:
            browsed = await crawler.arun(away, config=_run())
            direct = await crawler.arun(site.url("/page/6"), config=_run())
        async with integration.RobotGateCrawler(gate, HTTPCrawlerConfig()) as crawler:
            fetched = await crawler.arun(away, config=_run())

    for result in (browsed, fetched):
        assert result.success, result.error_message
        assert "page 5 of the site" in result.html
        assert result.url == away
        assert result.redirected_url == site.url("/page/5")
    assert direct.success and direct.redirected_url == site.url("/page/6")


def test_concurrent_runs_after_an_earlier_event_loop(integration: ModuleType,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from crawl4ai.browser_manager import BrowserManager

    # crawl4ai's class-wide page lock, as crawl4ai's own crawler leaves it after an
    # earlier asyncio.run: bound to that loop.  (The test's own, put back after it.)
    monkeypatch.setattr(BrowserManager, "_global_pages_lock", None)

    async def five_at_once() -> tuple[list[Any], list[str]]:
        async with Site(PUBLIC, robots=ALLOW_BUT_PRIVATE) as site, \
                RobotGate(AGENT, delay=0) as gate, _browser(integration, gate) as crawler:
            urls = [site.url(f"/page/{n}") for n in range(5)]
            results = await asyncio.gather(*(crawler.arun(url, config=_run()) for url in urls))
        return list(results), site.paths()

    async def earlier() -> tuple[list[Any], list[str]]:
        lock = BrowserManager._get_global_lock()

        async def hold() -> None:
            async with lock:
                await asyncio.sleep(0)

        await asyncio.gather(hold(), hold())  # the second waits: the lock takes this loop
        return await five_at_once()

    for results, paths in [asyncio.run(earlier()), asyncio.run(five_at_once())]:
        assert [result.success for result in results] == [True] * 5, [
            result.error_message for result in results]
        assert sorted(paths) == sorted(["/robots.txt", *(f"/page/{n}" for n in range(5))])


async def test_runs_keep_the_browser_window_open(integration: ModuleType) -> None:
    # Closing Chromium's last tab closes its window: a run that closed its page left
    # the next run to open a window, with a renderer for its omnibox popup, each time
    # (3x a page's CPU).  Runs one after another keep the launch's tab; the pages of
    # runs at once are closed down to one.
    async with Site(PUBLIC, robots=ALLOW_BUT_PRIVATE) as site, \
            RobotGate(AGENT, delay=0) as gate, _browser(integration, gate) as crawler:
        context = crawler.crawler_strategy.browser_manager.default_context
        opened: list[Any] = []
        context.on("page", lambda page: opened.append(page))
        one_by_one = [await crawler.arun(site.url(f"/page/{n}"), config=_run())
                      for n in range(4)]
        opened_one_by_one = len(opened)
        at_once = await asyncio.gather(*(crawler.arun(site.url(f"/page/{n}"), config=_run())
                                         for n in range(4, 8)))
        pages_left = len(context.pages)
    assert [result.success for result in [*one_by_one, *at_once]] == [True] * 8
    assert opened_one_by_one == 0
    assert len(opened) == 3  # runs at once took the kept tab and three new ones
    assert pages_left == 1


async def test_a_run_after_a_refused_one_is_not_cut_short(integration: ModuleType) -> None:
    # A refused navigation leaves Chromium committing its error page into the tab a
    # moment later: kept for the next run, the tab cut that run's navigation short
    # ("interrupted by another navigation to chrome-error://chromewebdata/", in 2 of
    # 5 runs of this test).  A refused run's tab is closed; the next run opens one.
    async with Site(PUBLIC, robots=ALLOW_BUT_PRIVATE) as site, \
            RobotGate(AGENT, delay=0) as gate, _browser(integration, gate) as crawler:
        context = crawler.crawler_strategy.browser_manager.default_context
        opened: list[Any] = []
        context.on("page", lambda page: opened.append(page))
        results = []
        for n in range(10):
            for path in (f"/away?to=/private/{n}", f"/page/{n}"):
                results.append(await crawler.arun(site.url(path), config=_run()))
    assert [result.success for result in results] == [False, True] * 10, [
        result.error_message for result in results]
    assert all(result.metadata[integration.REFUSED] for result in results[::2])
    assert len(opened) == 10


async def test_an_answer_over_max_bytes_is_refused_and_the_next_run_goes_on(
        integration: ModuleType) -> None:
    from robotgate import BodyTooLarge

    limit = 1 << 20
    refused: list[tuple[str, Disallowed]] = []
    async with Site(PUBLIC, robots=ALLOW_BUT_PRIVATE) as site, \
            RobotGate(AGENT, delay=0) as gate, \
            _browser(integration, gate, max_bytes=limit,
                     on_refused=lambda url, no: refused.append((url, no))) as crawler:
        big = await crawler.arun(site.url("/big"), config=_run())
        after = await crawler.arun(site.url("/page/1"), config=_run())
    assert not big.success and f"{limit:,} bytes" in big.error_message
    assert "max_bytes" in big.error_message
    assert [(url, no.decision.outcome) for url, no in refused] == [
        (site.url("/big"), BodyTooLarge.OUTCOME)]
    assert after.success and "page 1 of the site" in after.html
    assert [path for path in site.paths() if path != "/robots.txt"] == ["/big", "/page/1"]


async def test_settings_that_would_pass_the_gate_are_refused(integration: ModuleType) -> None:
    from crawl4ai import BrowserConfig, HTTPCrawlerConfig, LinkPreviewConfig

    async with RobotGate(AGENT) as gate:
        for config, named in [(BrowserConfig(cdp_url="http://127.0.0.1:9/"), "cdp_url"),
                              (BrowserConfig(browser_type="firefox"), "browser_type"),
                              (BrowserConfig(browser_mode="builtin"), "browser_mode")]:
            with pytest.raises(integration.UnsafeBrowser, match=named):
                integration.RobotGateCrawler(gate, config)
        with pytest.raises(TypeError, match="crawler strategy"):
            integration.RobotGateCrawler(gate, crawler_strategy=object())
        async with integration.RobotGateCrawler(gate, HTTPCrawlerConfig()) as crawler:
            for setting, value in [("fetch_ssl_certificate", True),
                                   ("check_cache_freshness", True),
                                   ("link_preview_config", LinkPreviewConfig())]:
                with pytest.raises(integration.UnguardedConfig, match=setting):
                    await crawler.arun("http://127.0.0.1:9/", config=_run(**{setting: value}))
                with pytest.raises(integration.UnguardedConfig, match=setting):
                    await crawler.arun_many(["http://127.0.0.1:9/"],
                                            config=_run(**{setting: value}))
            with pytest.raises(integration.UnguardedConfig, match=r"gate\.sitemaps"):
                await crawler.aseed_urls("127.0.0.1")
            with pytest.raises(integration.UnguardedConfig, match=r"gate\.sitemaps"):
                await crawler.amap_domain("127.0.0.1")


async def test_what_a_crawled_page_sends_past_its_route_reaches_nothing(
        integration: ModuleType) -> None:
    # robotgate launches crawl4ai's Chromium with no network but the gate: a popup its
    # page writes into, a clicked download, a WebSocket to a private address and a
    # keepalive fetch as the page closes reach nothing.
    connections: list[int] = []
    listener = await asyncio.start_server(lambda r, w: connections.append(1), PRIVATE, 0)
    port = listener.sockets[0].getsockname()[1]
    extra = ("<a id='go' href='/private/download.bin' download>x</a><script>"
             f"new WebSocket('ws://{PRIVATE}:{port}/');"
             "window.open('about:blank').document.write('<img src=\"/private/popup\">');"
             "addEventListener('pagehide', () => fetch('/private/bye', {{keepalive: true}}))"
             "</script>")
    try:
        async with Site(PUBLIC, extra=extra) as site, RobotGate(AGENT, delay=0) as gate, \
                _browser(integration, gate) as crawler:
            result = await crawler.arun(site.url("/page/1"), config=_run(
                js_code="document.getElementById('go').click()"))
            await asyncio.sleep(1.5)  # what escaped arrived within a second before
    finally:
        listener.close()
        await listener.wait_closed()
    assert result.success, result.error_message
    assert [path for path in site.paths() if path.startswith("/private")] == []
    assert connections == []


async def test_a_runs_page_leaves_nothing_behind(integration: ModuleType) -> None:
    # The tab a run used sent requests on after arun returned (its timers), and the
    # next run read its sessionStorage and window.name.
    async with Site(PUBLIC, robots=ALLOW_BUT_PRIVATE) as site, \
            RobotGate(AGENT, delay=0.05) as gate, _browser(integration, gate) as crawler:
        first = await crawler.arun(site.url("/stateful"), config=_run())
        during = site.paths()
        await asyncio.sleep(2)
        after = site.paths()[len(during):]
        second = await crawler.arun(site.url("/stateful"), config=_run())
    assert first.success and second.success, (first.error_message, second.error_message)
    assert [path for path in during if path.startswith("/tick/")]  # the timer ran
    assert after == []
    assert NOTHING_LEFT in first.html
    assert NOTHING_LEFT in second.html


async def test_a_kept_page_makes_no_request_between_runs(integration: ModuleType) -> None:
    # Clearing the kept tab's timers left what no timer drives running on after arun
    # returned: a requestAnimationFrame loop, a promise chain, a worker's timer.  The
    # tab is parked until the next run sends it on, and the next run is a plain one.
    async with Site(PUBLIC, robots=ALLOW_BUT_PRIVATE) as site, \
            RobotGate(AGENT, delay=0.05) as gate, _browser(integration, gate) as crawler:
        first = await crawler.arun(site.url("/busy"), config=_run(
            delay_before_return_html=1.5))  # each kind of request runs meanwhile
        during = site.paths()
        await asyncio.sleep(2)
        after = site.paths()[len(during):]
        second = await crawler.arun(site.url("/busy"), config=_run(
            delay_before_return_html=1.5))  # parked again once it returns
        next_run = site.paths()[len(during) + len(after):]
    assert first.success and second.success, (first.error_message, second.error_message)
    for kind in ("raf", "chain", "worker"):  # each ran during the first run
        assert [path for path in during if path.startswith(f"/tick/{kind}/")], (kind, during)
    assert after == []
    assert next_run[0] == "/busy"
    for kind in ("raf", "chain", "worker"):  # and runs in the next
        assert _ticked(next_run, kind), (kind, next_run)
    first_doc = first.html.split("doc:", 1)[1].split(";", 1)[0]
    assert f"/tick/bye/{first_doc}" not in next_run


def _ticked(paths: list[str], kind: str) -> bool:
    return any(path.startswith(f"/tick/{kind}/") for path in paths)


async def test_a_sessions_page_keeps_its_state_as_crawl4ai_keeps_it(
        integration: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    # A session_id asks crawl4ai for the same tab again: its state is kept, through the
    # gate as without it (crawl4ai alone, on the same Chromium).
    from crawl4ai import AsyncWebCrawler, BrowserConfig
    from crawl4ai.browser_manager import BrowserManager

    build = BrowserManager._build_browser_args
    monkeypatch.setattr(BrowserManager, "_build_browser_args", lambda manager: {
        **build(manager), "executable_path": chromium_path()})
    seen: dict[str, list[str]] = {}
    async with Site(PUBLIC, robots=ALLOW_BUT_PRIVATE) as site, \
            RobotGate(AGENT, delay=0) as gate:
        alone = AsyncWebCrawler(config=BrowserConfig(headless=True, extra_args=CHROMIUM_ARGS,
                                                     verbose=False))
        for name, crawler in [("gate", _browser(integration, gate)), ("alone", alone)]:
            async with crawler:
                results = [await crawler.arun(site.url("/stateful"),
                                              config=_run(session_id="kept"))
                           for _ in range(2)]
            assert all(result.success for result in results), name
            seen[name] = [LEFT if LEFT in result.html else result.html for result in results]
    assert seen["gate"] == seen["alone"]
    assert seen["gate"][1] == LEFT


async def test_crawl4ais_own_robots_check_is_left_to_the_gate(integration: ModuleType) -> None:
    # check_robots_txt=True would have crawl4ai fetch robots.txt itself, past the gate:
    # each run's own copy of the config has it off, the caller's keeps it as given.
    config = _run(check_robots_txt=True)
    async with Site(PUBLIC) as site, RobotGate(AGENT, delay=0) as gate, \
            _browser(integration, gate) as crawler:
        results = [await crawler.arun(site.url(f"/page/{n}"), config=config) for n in (1, 2)]
    assert [result.success for result in results] == [True, True], [
        result.error_message for result in results]
    assert config.check_robots_txt is True
    assert site.paths().count("/robots.txt") == 1
    assert {agent for _, _, agent in site.arrivals} == {AGENT}
