"""Every request carries who pointed at it, and takes its route and its turn, on every
client path: ``gate.fetch``, ``gate.middleware``, the httpx transport, Scrapy,
``gate.crawl``, crawlee's HTTP client (as its ``BeautifulSoupCrawler`` sends) and its
``PlaywrightCrawler`` (``RobotGateHttpClient.attach``), and a browser attached to the
gate (``integrations.playwright.attach``: ``page.goto`` is input, a page's own
navigation and its subresource are pointers of the page).

- A request's provenance is a value given where it is made (``pointed_by=``, the
  middleware's ``middleware_for``, httpx's ``robotgate_pointed_by`` extension, Scrapy's
  ``robotgate_pointed_by`` meta, crawlee's request ``user_data``), or made by the page
  that asks (a crawl's link, a browser's document): a page stored as public or private
  is taken at its word, not looked up again.  The caller's input goes where it leads;
  a public page's pointer into a private network (an address, a name resolving to one)
  is refused, a private page's is followed, and every pointer obeys robots.txt.
- robots.txt travels the pages' route: through the proxy a page goes through.
- A resend is a request: when a server drops a kept-alive connection after reading a
  request, the client's resend waits its turn, or does not happen.

On loopback: 127.0.0.1 plays a public site, 127.0.0.2 a private network (as in
``test_request_paths``); ``intranet.test`` resolves to 127.0.0.2.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar
from urllib.parse import quote

import aiohttp
import pytest
from aiohttp import web

from robotgate import Disallowed, RobotGate
from robotgate.crawl import CrawlResult
from robotgate.policy.hops import REFUSED
from robotgate.policy.provenance import Provenance
from tests.contract.test_private_addresses import Names, names, system_names
from tests.contract.test_request_paths import (
    AGENT,
    PRIVATE,
    PUBLIC,
    ROOT,
    Result,
    Site,
    private,
    public,
    public_loopback_1,
)
from tests.support.browser import CHROMIUM_ARGS, chromium, chromium_path, shared_chromium

httpx = pytest.importorskip("httpx")
pytest.importorskip("scrapy", reason="Scrapy is not installed: pip install 'robotgate[scrapy]'")

from robotgate.integrations.httpx import POINTED_BY, RobotGateTransport  # noqa: E402

pytestmark = pytest.mark.slow  # loopback servers, a Scrapy child process, browsers

__all__ = ["names", "private", "public", "system_names"]


@dataclass
class Ask:
    """One request: its URL, who pointed at it (None: the caller's input), and the
    proxy it goes through (None: direct)."""

    url: str
    pointed_by: Provenance | str | None = None
    proxy: str | None = None


def _refusal(no: Disallowed) -> Result:
    return Result(refused=no.decision.outcome or "rule", reason=no.decision.reason)


def _stored(pointed_by: Provenance | str) -> dict[str, Any]:
    """A pointer as crawlee's ``user_data`` and Scrapy's meta carry it."""
    if isinstance(pointed_by, Provenance):
        return {"page": pointed_by.page, "public": pointed_by.public}
    return {"page": pointed_by, "public": True if pointed_by == "" else None}


class ClientPath:
    """One client path: ``run`` sends the asks one after the other and tells what each
    came to.  A path whose pointers are made by a page it loads (``pages_point``: a
    crawl's links, a browser's requests) takes a pointer as that page's URL only."""

    pages_point = False
    proxied = True  # whether a page's proxy can be given

    def __init__(self, name: str) -> None:
        self.name = name

    def can(self, asks: list[Ask]) -> None:
        """Skip the case when this path cannot make one of ``asks``."""
        if self.pages_point and any(isinstance(ask.pointed_by, Provenance) for ask in asks):
            pytest.skip(f"{self.name}: a pointer is its page's own, looked up, not stored")
        if not self.proxied and any(ask.proxy is not None for ask in asks):
            pytest.skip(f"{self.name}: no proxy of a page's own to give")

    async def run(self, asks: list[Ask], **options: Any) -> list[Result]:
        raise NotImplementedError


class GatePath(ClientPath):
    """``gate.fetch``, ``gate.middleware`` or the httpx transport."""

    async def run(self, asks: list[Ask], **options: Any) -> list[Result]:
        async with RobotGate(AGENT, is_private=public_loopback_1, **options) as gate:
            if self.name == "fetch":
                return [await _fetch(gate, ask) for ask in asks]
            if self.name == "middleware":
                async with aiohttp.ClientSession(middlewares=(gate.middleware,)) as session:
                    return [await _middleware(gate, session, ask) for ask in asks]
            proxies = {ask.proxy for ask in asks}
            [proxy] = proxies  # httpx: the proxy is the inner transport's, one for the client
            inner = httpx.AsyncHTTPTransport(proxy=proxy)
            async with httpx.AsyncClient(transport=RobotGateTransport(gate, inner),
                                         follow_redirects=True) as client:
                return [await _httpx(client, ask) for ask in asks]


async def _fetch(gate: RobotGate, ask: Ask) -> Result:
    try:
        resp = await gate.fetch(ask.url, pointed_by=ask.pointed_by, proxy=ask.proxy)
    except Disallowed as no:
        return _refusal(no)
    except aiohttp.ClientError as exc:
        return Result(error=type(exc).__name__)
    return Result(status=resp.status)


async def _middleware(gate: RobotGate, session: aiohttp.ClientSession, ask: Ask) -> Result:
    extra: dict[str, Any] = {"proxy": ask.proxy}
    if ask.pointed_by is not None:
        extra["middlewares"] = (gate.middleware_for(ask.pointed_by),)
    try:
        async with session.get(ask.url, **extra) as resp:
            await resp.read()
    except Disallowed as no:
        return _refusal(no)
    except aiohttp.ClientError as exc:
        return Result(error=type(exc).__name__)
    return Result(status=resp.status)


async def _httpx(client: Any, ask: Ask) -> Result:
    extensions = {POINTED_BY: ask.pointed_by} if ask.pointed_by is not None else {}
    try:
        resp = await client.get(ask.url, extensions=extensions)
    except Disallowed as no:
        return _refusal(no)
    except httpx.TransportError as exc:
        return Result(error=type(exc).__name__)
    return Result(status=resp.status_code)


class ScrapyPath(ClientPath):
    """Scrapy with the robotgate middleware, in a child process; ``hosts``: the names
    its look-ups answer (see scrapy_paths_runner.answer_names)."""

    hosts: dict[str, Any]

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.hosts = {}

    async def run(self, asks: list[Ask], **options: Any) -> list[Result]:
        return await _scrapy(asks, options, hosts=self.hosts)


async def _scrapy(asks: list[Ask], options: dict[str, Any], **extra: Any) -> list[Result]:
    metas: list[dict[str, Any]] = []
    for ask in asks:
        meta: dict[str, Any] = {}
        if isinstance(ask.pointed_by, Provenance):
            meta["robotgate_pointed_by"] = _stored(ask.pointed_by)
        elif ask.pointed_by is not None:
            meta["robotgate_pointed_by"] = ask.pointed_by
        if ask.proxy is not None:
            meta["proxy"] = ask.proxy
        metas.append(meta)
    settings: dict[str, Any] = {
        "ROBOTGATE_IS_PRIVATE": "tests.contract.test_request_paths.public_loopback_1",
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16, "DOWNLOAD_DELAY": 0,
        "ROBOTGATE_DELAY": options.get("delay", 0), **extra.pop("settings", {})}
    config = json.dumps({"urls": [ask.url for ask in asks], "meta": metas, "sequential": True,
                         "settings": settings, **extra})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.contract.scrapy_paths_runner", config, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()[-3000:]
    lines = out.decode().strip().splitlines()
    assert lines, err.decode()[-3000:]
    return [Result(**entry) if entry is not None else Result(error="no answer")
            for entry in json.loads(lines[-1])]


class CrawlPath(ClientPath):
    """``gate.crawl``: the caller's URL a seed; a pointer a link its page's handler
    gives (the page crawled first); a proxy the ``fetch=`` the crawl is given sends
    through (``partial(gate.fetch, proxy=...)``)."""

    pages_point = True

    async def run(self, asks: list[Ask], **options: Any) -> list[Result]:
        async with RobotGate(AGENT, is_private=public_loopback_1, **options) as gate:
            return [await self._one(gate, ask) for ask in asks]

    @staticmethod
    async def _one(gate: RobotGate, ask: Ask) -> Result:
        found: dict[str, CrawlResult] = {}

        async def handler(url: str, resp: aiohttp.ClientResponse) -> tuple[str, ...]:
            return (ask.url,) if url == ask.pointed_by else ()

        seed = ask.url if ask.pointed_by is None else str(ask.pointed_by)
        summary = await gate.crawl([seed], handler, retries=0, scope="any",
                                   fetch=partial(gate.fetch, proxy=ask.proxy),
                                   on_result=lambda r: found.__setitem__(r.url, r))
        record = found.get(ask.url)
        if record is None and summary.private_links:
            # A link spelling a private address is dropped as the page's links are read.
            return Result(refused=REFUSED, reason=f"{ask.url}: {summary.explain()}")
        if record is None:
            return Result(error="not crawled")
        if record.decision is not None:
            return Result(refused=record.decision.outcome or "rule",
                          reason=record.decision.reason)
        if record.error is not None and record.status is None:
            return Result(error=record.error)
        return Result(status=record.status)


class CrawleePath(ClientPath):
    """crawlee's ``RobotGateHttpClient.crawl``, as a ``BeautifulSoupCrawler`` calls it:
    each ask a crawlee ``Request``, a pointer's carried in its ``user_data`` as
    ``enqueue_links`` carries it; a proxy as crawlee's ``proxy_info``."""

    async def run(self, asks: list[Ask], **options: Any) -> list[Result]:
        pytest.importorskip("crawlee", reason="crawlee is not installed")
        from crawlee.proxy_configuration import ProxyInfo

        from robotgate.integrations.crawlee import RobotGateHttpClient

        async with RobotGate(AGENT, is_private=public_loopback_1, **options) as gate, \
                RobotGateHttpClient(gate) as client:
            results = []
            for ask in asks:
                proxy = None
                if ask.proxy is not None:
                    host, port = ask.proxy.split("://", 1)[1].rsplit(":", 1)
                    proxy = ProxyInfo(url=ask.proxy, scheme="http", hostname=host,
                                      port=int(port))
                try:
                    done = await client.crawl(_crawlee_request(ask), proxy_info=proxy)
                except Disallowed as no:
                    results.append(_refusal(no))
                    continue
                except Exception as exc:  # crawlee's client's errors
                    results.append(Result(error=type(exc).__name__))
                    continue
                results.append(Result(status=done.http_response.status_code))
            return results


def _crawlee_request(ask: Ask) -> Any:
    """A crawlee ``Request`` for ``ask``: a pointer's as ``enqueue_links`` makes it."""
    from crawlee import Request

    from robotgate.integrations.crawlee import PROVENANCE

    if ask.pointed_by is None:
        return Request.from_url(ask.url)
    request = Request.from_url(ask.url, user_data={PROVENANCE: _stored(ask.pointed_by)})
    request.crawl_depth = 1
    return request


class CrawleeBrowserPath(ClientPath):
    """crawlee's ``PlaywrightCrawler`` through ``RobotGateHttpClient.attach``, one page
    at a time (a second browser on one profile is refused), each ask a ``Request``
    as :class:`CrawleePath` makes it; a page's proxy is the crawler's
    ``proxy_configuration``."""

    async def run(self, asks: list[Ask], **options: Any) -> list[Result]:
        pytest.importorskip("crawlee", reason="crawlee is not installed")
        pytest.importorskip("browserforge", reason="crawlee's playwright extra is not installed")
        from crawlee import ConcurrencySettings
        from crawlee.crawlers import (
            BasicCrawlingContext,
            PlaywrightCrawler,
            PlaywrightCrawlingContext,
        )
        from crawlee.proxy_configuration import ProxyConfiguration
        from crawlee.storage_clients import MemoryStorageClient

        from robotgate.integrations.crawlee import RobotGateHttpClient
        from robotgate.integrations.playwright import LAUNCH_ARGS, preloading_off

        [proxy] = {ask.proxy for ask in asks}
        answered: dict[str, Result] = {}
        with tempfile.TemporaryDirectory() as profile:
            async with RobotGate(AGENT, is_private=public_loopback_1, **options) as gate:
                client = RobotGateHttpClient(gate, on_refused=lambda url, no: answered.setdefault(
                    url, _refusal(no)))
                crawler = PlaywrightCrawler(
                    http_client=client, storage_client=MemoryStorageClient(), headless=True,
                    user_data_dir=preloading_off(profile), use_incognito_pages=False,
                    browser_launch_options={"executable_path": chromium_path(),
                                            "args": [*CHROMIUM_ARGS, *LAUNCH_ARGS]},
                    browser_new_context_options={"service_workers": "block"},
                    concurrency_settings=ConcurrencySettings(desired_concurrency=1,
                                                             max_concurrency=1),
                    proxy_configuration=ProxyConfiguration(proxy_urls=[proxy])
                    if proxy is not None else None,
                    max_request_retries=0, configure_logging=False)
                client.attach(crawler)

                @crawler.router.default_handler
                async def handler(context: PlaywrightCrawlingContext) -> None:
                    response = context.response
                    answered[context.request.url] = Result(
                        status=response.status if response is not None else None)

                @crawler.failed_request_handler
                async def failed(context: BasicCrawlingContext, error: Exception) -> None:
                    answered[context.request.url] = Result(error=type(error).__name__)

                await crawler.run([_crawlee_request(ask) for ask in asks])
        return [answered.get(ask.url, Result(error="no answer")) for ask in asks]


#: How a browser's page points at a URL: its own navigation, or its subresource.
_POINT = {"browser": "u => { location = u }",
          "browser-subresource": "u => fetch(u, {mode: 'no-cors'}).catch(() => 0)"}


class BrowserPath(ClientPath):
    """The system Chromium attached to the gate: the caller's URL a ``page.goto``; a
    pointer the pointing page's (loaded by its own ``page.goto``) own navigation
    (``browser``) or ``fetch`` (``browser-subresource``).  The browser's own proxy is
    the black hole (its launch's); a page's proxy is given to ``attach``.  A context is
    a new Chromium's or, given ``shared``, a new context of the module's one Chromium."""

    pages_point = True

    def __init__(self, name: str, shared: str | None = None) -> None:
        super().__init__(name)
        self.shared = shared

    async def run(self, asks: list[Ask], **options: Any) -> list[Result]:
        pytest.importorskip("playwright.async_api", reason="Playwright is not installed")
        from robotgate.integrations.playwright import attach

        [proxy] = {ask.proxy for ask in asks}
        refusals: dict[str, Disallowed] = {}
        async with chromium(self.shared) as browser, RobotGate(AGENT,
                                                               is_private=public_loopback_1,
                                                    **options) as gate:
            context = await browser.new_context(service_workers="block")
            await attach(gate, context, proxy={"server": proxy} if proxy is not None else None,
                         on_refused=lambda request, no: refusals.setdefault(request.url, no))
            # One page for the asks, leaving each page for the next (a new one after a
            # refusal or a failure: Chromium shows its error page there).
            statuses: dict[str, int] = {}
            page = await self._page(context, statuses)
            results = []
            for ask in asks:
                result = await self._one(page, refusals, statuses, ask)
                if result.status is None:
                    # Bounded: the close must not hang (attach closes again a page
                    # Chromium left open).
                    await asyncio.wait_for(page.close(), 10)
                    page = await self._page(context, statuses)
                results.append(result)
            return results

    @staticmethod
    async def _page(context: Any, statuses: dict[str, int]) -> Any:
        # Chromium fails a navigation answered 4xx/5xx with an empty body: the answer's
        # status is in the response event.
        page = await context.new_page()
        page.on("response", lambda response: statuses.setdefault(response.url, response.status))
        return page

    async def _one(self, page: Any, refusals: dict[str, Disallowed], statuses: dict[str, int],
                   ask: Ask) -> Result:
        from playwright.async_api import Error as PlaywrightError

        failure = ""
        try:
            if ask.pointed_by is None:
                await page.goto(ask.url)
            else:
                await page.goto(str(ask.pointed_by))
                await page.evaluate(_POINT[self.name], ask.url)
                await until(lambda: ask.url in refusals or ask.url in statuses)
        except PlaywrightError as exc:
            failure = str(exc)
        if ask.url in refusals:
            return _refusal(refusals[ask.url])
        if ask.url in statuses:
            return Result(status=statuses[ask.url])
        return Result(error=failure or "no answer")


async def until(done: Callable[[], object], seconds: float = 10.0) -> None:
    """Until ``done()`` is true, at most ``seconds``."""
    for _ in range(int(seconds / 0.02)):
        if done():
            return
        await asyncio.sleep(0.02)


PATHS: dict[str, Callable[[str], ClientPath]] = {
    "fetch": GatePath, "middleware": GatePath, "httpx": GatePath, "scrapy": ScrapyPath,
    "crawl": CrawlPath, "crawlee": CrawleePath, "crawlee-browser": CrawleeBrowserPath,
    "browser": BrowserPath, "browser-subresource": BrowserPath,
}


async def run(path: ClientPath, asks: list[Ask], **options: Any) -> list[Result]:
    """The asks one after the other through ``path`` (the case skips where it cannot)."""
    path.can(asks)
    return await path.run(asks, **options)


@pytest.fixture(scope="module")
def shared_browser() -> Iterator[str]:
    """One Chromium for the module's browser paths (its DevTools endpoint)."""
    with shared_chromium() as endpoint:
        yield endpoint


@pytest.fixture(params=list(PATHS))
def path(request: pytest.FixtureRequest) -> ClientPath:
    name = str(request.param)
    if PATHS[name] is BrowserPath:
        return BrowserPath(name, request.getfixturevalue("shared_browser"))
    return PATHS[name](name)


# -- provenance, as stored -----------------------------------------------------------------


async def test_the_callers_input_goes_to_a_private_address(
        path: ClientPath, public: Site, private: Site) -> None:
    # The default rule: the caller's own URL is never refused for its address, whatever
    # page the client was on (a browser's page leaves a public one for it).
    results = await run(path, [Ask(public.url("/page")), Ask(private.url("/mine"))], delay=0)
    assert [r.status for r in results] == [200, 200], results
    assert private.paths() == ["/mine"]


async def test_a_public_sites_redirect_into_a_private_address_is_refused(
        path: ClientPath, public: Site, private: Site) -> None:
    # The caller's own URL and a public page's pointer alike: the hop is the public
    # site's pointer.
    hop = public.url("/redirect?to=" + quote(private.url("/secret"), safe=""))
    results = await run(path, [Ask(hop), Ask(hop + "&again", public.url("/page"))], delay=0)
    for result in results:
        assert result.refused == REFUSED and PRIVATE in result.reason, results
    assert private.paths() == [] and private.robots_hits == 0


async def test_a_public_pages_pointer_into_a_private_network_is_refused(
        path: ClientPath, public: Site, private: Site, names: Names,
        system_names: Names) -> None:
    # By its address, and by a name resolving to it: refused before anything (its
    # origin's robots.txt included) is sent.
    for table in (names, system_names):
        table.answers["intranet.test"] = [[PRIVATE]]
    if isinstance(path, ScrapyPath):
        path.hosts = {"intranet.test": [PRIVATE]}
    named = f"http://intranet.test:{private.port}/secret/named"
    results = await run(path, [Ask(private.url("/secret/literal"), public.url("/page")),
                               Ask(named, public.url("/page"))], delay=0)
    for result in results:
        assert result.refused == REFUSED, results
        assert PRIVATE in result.reason, result
    assert private.paths() == [] and private.robots_hits == 0


async def test_a_private_pages_pointer_into_its_network_is_followed(
        path: ClientPath, private: Site) -> None:
    [followed] = await run(path, [Ask(private.url("/other"), private.url("/page"))], delay=0)
    assert followed.status == 200, followed
    assert "/other" in private.paths()


async def test_a_public_pages_pointer_to_a_public_site_obeys_its_robots_txt(
        path: ClientPath, public: Site) -> None:
    results = await run(path, [Ask(public.url("/no/x"), public.url("/page")),
                               Ask(public.url("/page/2"), public.url("/page"))], delay=0)
    refused, followed = results
    assert refused.refused == "rule" and "Disallow: /no/" in refused.reason, refused
    assert followed.status == 200, followed
    assert "/no/x" not in public.paths() and "/page/2" in public.paths()
    assert public.robots_hits == 1


async def test_a_pages_stored_public_bit_is_taken_at_its_word(
        path: ClientPath, public: Site, private: Site) -> None:
    # A page stored as public (whatever its host answers now) may not point into the
    # private network; one stored as private may, even where its name no longer
    # resolves; a public page's link given by its URL is judged by a look-up.
    asks = [Ask(private.url("/secret/1"), Provenance(private.url("/page"), public=True)),
            Ask(private.url("/secret/2"), Provenance("http://intranet.invalid/", public=False)),
            Ask(private.url("/secret/3"), public.url("/page"))]
    stored_public, stored_private, looked_up = await run(path, asks, delay=0)
    assert stored_public.refused == REFUSED, stored_public
    assert stored_private.status == 200, stored_private
    assert looked_up.refused == REFUSED, looked_up
    assert private.paths() == ["/secret/2"]


POINTERS_MIDDLEWARE = {"robotgate.integrations.scrapy.RobotGatePointersMiddleware": 50}


@asynccontextmanager
async def served(handler: Any) -> AsyncIterator[int]:
    """A public loopback site answering every path with ``handler``: its port."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, PUBLIC, 0).start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def test_a_scrapy_spiders_link_is_its_pages_pointer(private: Site) -> None:
    # A public page links into the private network: the spider follows the link, and
    # the pointers middleware makes it the page's pointer, refused as gate.crawl refuses.
    async def page(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(text=f'<a href="{private.url("/secret")}">x</a>',
                            content_type="text/html")

    async with served(page) as port:
        results = await _scrapy([Ask(f"http://{PUBLIC}:{port}/page")], {}, follow=True,
                                settings={"SPIDER_MIDDLEWARES": POINTERS_MIDDLEWARE})
    start, link = results
    assert start.status == 200, results
    assert link.refused == REFUSED, link
    assert private.paths() == [] and private.robots_hits == 0


@pytest.mark.parametrize("obey", [True, False])
async def test_a_scrapy_spider_follows_no_link_of_a_nofollow_page(obey: bool) -> None:
    # The page says nofollow (meta tag, and a second page by X-Robots-Tag): the pointers
    # middleware drops the requests its callback yields, as gate.crawl drops its links.
    asked: list[str] = []

    async def page(request: web.Request) -> web.Response:
        asked.append(request.path)
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/meta":
            return web.Response(text='<meta name="robots" content="nofollow">'
                                     '<a href="/from-meta">x</a>', content_type="text/html")
        if request.path == "/header":
            return web.Response(text='<a href="/from-header">x</a>', content_type="text/html",
                                headers={"X-Robots-Tag": "nofollow"})
        return web.Response(text="<p>a page</p>", content_type="text/html")

    async with served(page) as port:
        results = await _scrapy(
            [Ask(f"http://{PUBLIC}:{port}/meta"), Ask(f"http://{PUBLIC}:{port}/header")], {},
            follow=True, sequential=False, settings={"SPIDER_MIDDLEWARES": POINTERS_MIDDLEWARE,
                                                     "ROBOTGATE_OBEY_NOFOLLOW": obey})
    assert [r.status for r in results[:2]] == [200, 200], results
    followed = {"/from-meta", "/from-header"} & set(asked)
    assert followed == (set() if obey else {"/from-meta", "/from-header"}), asked


# -- robots.txt travels the pages' route ---------------------------------------------------


_S = TypeVar("_S", bound="StreamServer")


class StreamServer:
    """A loopback server of raw connections, each handed to ``_serve``."""

    port: int = 0
    _server: asyncio.Server | None = None

    async def start(self: _S) -> _S:
        self._server = await asyncio.start_server(self._serve, PUBLIC, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


@dataclass
class ForwardProxy(StreamServer):
    """A loopback HTTP forward proxy: it alone knows ``web.invalid`` (the public site).
    Every request it forwards is recorded, and the host of each tunnel it opens
    (``CONNECT``, as Playwright's request client asks for every URL), and the host of
    each request it cannot forward; each connection carries one request, or one tunnel."""

    site_port: int = 0
    forwarded: list[str] = field(default_factory=list)
    tunnels: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{PUBLIC}:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            line, *headers = head.decode("latin-1").split("\r\n")
            method, target, version = line.split(" ")
            host = (target if method == "CONNECT" else target.split("://", 1)[1]).split("/")[0]
            if not host.startswith("web.invalid:"):
                # A name it does not know (a browser's own background request).
                self.unknown.append(host)
                writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
                return
            if method == "CONNECT":
                await self._tunnel(target, reader, writer)
                return
            path = "/" + target.split("://", 1)[1].split("/", 1)[1]
            self.forwarded.append(path)
            kept = [h for h in headers if h and not h.lower().startswith(
                ("connection", "proxy-", "keep-alive"))]
            up_reader, up_writer = await asyncio.open_connection(PUBLIC, self.site_port)
            up_writer.write(f"{method} {path} {version}\r\n".encode("latin-1")
                            + "".join(f"{h}\r\n" for h in kept).encode("latin-1")
                            + b"Connection: close\r\n\r\n")
            await up_writer.drain()
            answer = await asyncio.wait_for(up_reader.read(), 5)
            up_writer.close()
            writer.write(answer)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError, IndexError):
            pass
        finally:
            writer.close()

    async def _tunnel(self, target: str, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        """Relay a tunnel to the site (whatever host it names: only this proxy knows
        web.invalid) until either side closes, each read bounded."""
        self.tunnels.append(target.rsplit(":", 1)[0])
        up_reader, up_writer = await asyncio.open_connection(PUBLIC, self.site_port)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()

        async def relay(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                for _ in range(10_000):
                    data = await asyncio.wait_for(source.read(65536), 10)
                    if not data:
                        break
                    sink.write(data)
                    await sink.drain()
            except (OSError, TimeoutError):
                pass
            finally:
                sink.close()

        await asyncio.gather(relay(reader, up_writer), relay(up_reader, writer))


@asynccontextmanager
async def forward_proxy(site: Site) -> AsyncIterator[ForwardProxy]:
    proxy = await ForwardProxy(site.port).start()
    try:
        yield proxy
    finally:
        await proxy.close()


async def test_robots_txt_is_asked_through_the_proxy_its_page_goes_through(
        path: ClientPath, public: Site) -> None:
    # The crawler reaches web.invalid only through the proxy: robots.txt asked direct
    # could not be fetched, and the page would be refused for it.
    async with forward_proxy(public) as proxy:
        url = f"http://web.invalid:{public.port}"
        results = await run(path, [Ask(f"{url}/page/1", proxy=proxy.url),
                                   Ask(f"{url}/no/x", proxy=proxy.url)], delay=0)
    page, refused = results
    assert page.status == 200, page
    assert refused.refused == "rule" and "Disallow: /no/" in refused.reason, refused
    assert proxy.forwarded[0] == "/robots.txt", proxy.forwarded
    # The page came through the proxy too (forwarded, or tunnelled as a browser's is).
    assert proxy.forwarded[1:] == ["/page/1"] or proxy.tunnels == ["web.invalid"], proxy
    assert public.robots_hits == 1 and public.paths() == ["/page/1"]


# -- a resend is a request -----------------------------------------------------------------


@dataclass
class DroppingServer(StreamServer):
    """A loopback server on kept-alive connections that, the first time it is asked for
    ``/drop``, reads the request and closes the connection without an answer; it
    records when each request arrived (the kernel's order, read as they come)."""

    arrivals: list[tuple[str, float]] = field(default_factory=list)
    dropped: int = 0

    def url(self, path: str) -> str:
        return f"http://{PUBLIC}:{self.port}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for _ in range(100):  # requests on one connection, bounded
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                path = head.split(b" ", 2)[1].decode("latin-1")
                self.arrivals.append((path, time.monotonic()))
                if path == "/drop" and self.dropped == 0:
                    self.dropped += 1
                    return  # read, then the connection closes unanswered
                body = (b"User-agent: *\nAllow: /\n" if path == "/robots.txt" else b"page")
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            writer.close()


async def test_a_resend_after_a_dropped_connection_waits_its_turn(path: ClientPath) -> None:
    server = await DroppingServer().start()
    try:
        results = await run(path, [Ask(server.url("/page/1")), Ask(server.url("/drop"))],
                            delay=0.5)
    finally:
        await server.close()
    assert results[0].status == 200, results
    assert server.dropped == 1
    pages = [t for p, t in server.arrivals if p != "/robots.txt"]
    gaps = [b - a for a, b in itertools.pairwise(pages)]
    # The dropped request was a request: anything sent after it, its resend too, waited
    # the interval; or the resend did not happen and the caller got the client's error.
    assert gaps and min(gaps) >= 0.49, (server.arrivals, results)
    assert results[1].status == 200 or results[1].error is not None, results
