"""robotgate for crawl4ai: a crawl4ai crawler whose every request goes through the gate.

>>> crawler = RobotGateCrawler(gate, BrowserConfig(), executable_path=CHROMIUM)  # doctest: +SKIP
>>> async with crawler:                                                           # doctest: +SKIP
...     result = await crawler.arun("https://example.com/")

:class:`RobotGateCrawler` is crawl4ai's ``AsyncWebCrawler`` with a crawler strategy
of robotgate's:

- given a ``BrowserConfig`` (or nothing), its Chromium is launched by robotgate with
  no network but the gate: its own proxy the black hole
  (:data:`~robotgate.integrations.playwright.BLACK_HOLE`, loopback included) and
  WebRTC held to it (:data:`~robotgate.integrations.playwright.LAUNCH_ARGS`), so that
  a request no route fulfils reaches nothing; a persistent context (on a
  :func:`~robotgate.integrations.playwright.preloading_off` profile) with
  ``service_workers="block"``.  The ``BrowserConfig``'s ``proxy_config`` carries the
  gate's requests for the pages (``attach(..., proxy=...)``, robots.txt's too), not the
  browser's.  The context is attached before crawl4ai or a hook of its uses it (and
  ``attach`` checks the floor): every request the browser makes goes through the gate,
  the URL given to ``arun`` as input, everything else as a pointer of the page that
  made it.  A setting that
  would give crawl4ai another browser (``cdp_url``, a ``browser_mode`` other than
  ``"dedicated"``, another ``browser_type``) raises
  :class:`~robotgate.integrations.playwright.UnsafeBrowser` naming it; a page of any
  context but the attached one is refused before it navigates;
- given an ``HTTPCrawlerConfig``, crawl4ai's plain HTTP crawler sends each request
  with ``gate.fetch`` (the gate's session, redirects followed hop by hop, each judged
  and paced).

A deep crawl (``CrawlerRunConfig(deep_crawl_strategy=...)``: crawl4ai's BFS, DFS and
best-first strategies, their filters, scorers, limits and streaming) runs crawl4ai's
strategy on this crawler: the start URL is the caller's input, and each link the
strategy follows a pointer of the page it was found on (a URL found on no page crawled
so far, as a resumed crawl's: a public page's pointer).  A run's ``redirected_url`` is
the URL its page came from, after the redirects the gate followed.

A run's page leaves nothing behind: ``arun`` returns once none of its requests can reach
a server (those still waiting for their turn are not sent, those being sent are
answered), the page kept for the next run makes none until that run sends it on
(:meth:`~robotgate.integrations.playwright.Attachment.park`: a requestAnimationFrame
loop's, a worker's, a promise chain's are aborted), and it has forgotten the run (its
documents' timers and sessionStorage, the tab's ``window.name``); another run's page
is closed.  A ``session_id``'s page is kept as crawl4ai keeps it, state and all, until
``kill_session``.

A page the gate refuses (robots.txt, a public page's pointer into a private address,
a site whose robots.txt cannot be fetched) comes back from ``arun`` and
``arun_many`` as crawl4ai's failed result: ``success=False``, ``error_message`` the
gate's reason, no status code (nothing was sent), and ``metadata[REFUSED]`` the
refusal (a page crawl4ai itself failed has none); crawl4ai neither retries it nor
calls its ``fallback_fetch_function`` for it.  Settings under which crawl4ai itself
sends requests past the crawler strategy raise :class:`UnguardedConfig` naming them;
crawl4ai's own robots.txt check (``check_robots_txt``) is left to the gate.
"""

from __future__ import annotations

import asyncio
import copy
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:  # the client comes with an extra: say which, not a bare ModuleNotFoundError
    import crawl4ai  # type: ignore[import-untyped]  # noqa: F401
except ImportError as _exc:
    raise ImportError(f"{__name__} needs crawl4ai: pip install 'robotgate[crawl4ai]'") from _exc

from crawl4ai import (
    AsyncWebCrawler,
    BrowserConfig,
    CrawlerRunConfig,
    HTTPCrawlerConfig,
)
from crawl4ai.async_crawler_strategy import (  # type: ignore[import-untyped]
    AsyncHTTPCrawlerStrategy,
    AsyncPlaywrightCrawlerStrategy,
)
from crawl4ai.browser_manager import (  # type: ignore[import-untyped]
    BrowserManager,
    ManagedBrowser,
    apply_sandbox_policy,
)
from crawl4ai.models import CrawlResult, CrawlResultContainer  # type: ignore[import-untyped]
from crawl4ai.utils import (  # type: ignore[import-untyped]
    efficient_normalize_url_for_deep_crawl,
    normalize_url_for_deep_crawl,
)
from playwright.async_api import BrowserContext, Page, ProxySettings, Request, async_playwright
from playwright.async_api import Error as PlaywrightError

from ..errors import Disallowed, Error
from ..gate.aiohttp_bodies import MAX_BODY
from ..gate.gate import RobotGate
from ..policy.provenance import INPUT, Provenance, pointer_of
from ..private_parts import CRAWL4AI_FIELDS, CRAWL4AI_START, missing
from .browser_network.floor import LAUNCH_ARGS, floor_launch
from .playwright import (
    MAX_SUBRESOURCES,
    Attachment,
    Document,
    UnsafeBrowser,
    attach,
    preloading_off,
)

__all__ = ["REFUSED", "RobotGateCrawler", "UnguardedConfig", "UnsafeBrowser"]

#: ``CrawlerRunConfig`` settings under which crawl4ai sends requests of its own, past
#: the crawler strategy (and so past the gate), with what to do instead.
_UNGUARDED = {
    "fetch_ssl_certificate": "it opens a TLS connection to the site itself",
    "check_cache_freshness": "it sends HEAD requests to validate its cache",
    "link_preview_config": "it fetches the heads of a page's links itself",
}
#: The key of a refused run's ``CrawlResult.metadata`` that tells of the refusal: the
#: URL refused (``url``: the run's, or a redirect's hop), the gate's ``reason`` and
#: ``outcome`` (:class:`~robotgate.Decision`'s).  crawl4ai's own failures have none.
REFUSED = "refused_by_robotgate"
#: Who pointed at a URL no page of a deep crawl is known to link to (a resumed crawl's,
#: one a strategy made up): a public page, which may not lead into a private network.
_UNTOLD = pointer_of("")
# The flags crawl4ai launches Chromium with that Playwright's own arguments set instead.
_LAUNCH_OWN = ("--proxy-server", "--remote-debugging-port", "--user-data-dir", "--headless",
               "--window-size")


class UnguardedConfig(Error, ValueError):
    """A crawl4ai setting under which crawl4ai sends requests past the gate; the
    message names it."""


class _Refused(BaseException):
    """A run's page the gate refused, carried from the crawler strategy up to
    :meth:`RobotGateCrawler.arun` past crawl4ai's handlers: as an ``Exception`` crawl4ai
    would retry the page, hand it to its fallback fetch and print its traceback."""

    def __init__(self, refusal: Disallowed) -> None:
        super().__init__(str(refusal))
        self.refusal = refusal


class RobotGateCrawler(AsyncWebCrawler):  # type: ignore[misc]
    """crawl4ai's ``AsyncWebCrawler`` whose requests all go through ``gate``.

    ``config``: a ``BrowserConfig`` (the default) crawls with Chromium, launched by
    robotgate on the persistent profile ``profile`` (a directory; default: the
    config's ``user_data_dir``, else a temporary one, removed on close) and attached
    to the gate; ``executable_path`` (a system Chromium) or ``channel`` (``"chrome"``:
    an installed Google Chrome) chooses the browser, else Playwright's own
    (``playwright install chromium``).
    ``pace_subresources``, ``max_subresources`` and ``max_bytes`` are
    :func:`~robotgate.integrations.playwright.attach`'s.  An ``HTTPCrawlerConfig``
    crawls with crawl4ai's HTTP crawler, each request sent by ``gate.fetch``.

    ``on_refused(url, refusal)`` hears of each page refused (the URL given to
    ``arun``, and the :class:`~robotgate.Disallowed`: its ``url`` the hop refused,
    its ``decision`` why).  Other keyword arguments are ``AsyncWebCrawler``'s.
    """

    def __init__(self, gate: RobotGate, config: BrowserConfig | HTTPCrawlerConfig | None = None,
                 *, profile: str | Path | None = None, executable_path: str | Path | None = None,
                 channel: str | None = None, pace_subresources: bool = False,
                 max_subresources: int = MAX_SUBRESOURCES, max_bytes: int | None = MAX_BODY,
                 on_refused: Callable[[str, Disallowed], object] | None = None,
                 **options: Any) -> None:
        if "crawler_strategy" in options:
            raise TypeError("RobotGateCrawler makes its own crawler strategy: give it a "
                            "BrowserConfig or an HTTPCrawlerConfig instead")
        if isinstance(config, HTTPCrawlerConfig):
            super().__init__(crawler_strategy=_HTTPStrategy(gate, config), **options)
        else:
            browser_config = _persistent(config or BrowserConfig())
            launch = _Launch(gate, profile, executable_path, channel, pace_subresources,
                             max_subresources, max_bytes)
            strategy = _BrowserStrategy(launch, browser_config, options.get("logger"))
            super().__init__(crawler_strategy=strategy, config=browser_config, **options)
        # crawl4ai wraps arun for its deep crawls, which would send a page's links as the
        # caller's own URLs: this class's arun runs them itself (see _DeepCrawl).
        del self.arun
        self.on_refused = on_refused
        # The deep crawls whose links are being crawled, by the config each handed
        # arun_many for them (crawl4ai's dispatcher gives it to arun with each URL).
        self._deep_crawls: dict[CrawlerRunConfig, _DeepCrawl] = {}

    async def arun(self, url: str, config: CrawlerRunConfig | None = None,
                   **kwargs: Any) -> Any:
        """crawl4ai's ``arun`` through the gate: a page the gate refused is crawl4ai's
        failed result, with the gate's reason as its ``error_message``.  A config with
        a ``deep_crawl_strategy`` runs crawl4ai's deep crawl, ``url`` the caller's own
        and each link followed a pointer of the page it was found on."""
        config = config or CrawlerRunConfig()
        _check(config)
        if config.deep_crawl_strategy is not None:
            return await config.deep_crawl_strategy.arun(
                crawler=_DeepCrawl(self, url), start_url=url, config=config)
        deep_crawl = self._deep_crawls.get(config)
        provenance = INPUT if deep_crawl is None else deep_crawl.provenance(url)
        # A run's own copy: the browser knows the run by it; the gate checks robots.txt.
        # A shallow copy, as clone's would be, without clone's new __init__ (each field
        # it sets reads __init__'s signature: 10-30 ms a run).
        run = copy.copy(config)
        if run.check_robots_txt:  # only when on: a field's set reads the signature too
            run.check_robots_txt = False
        runs = self.crawler_strategy.runs
        runs[run] = provenance
        try:
            return await super().arun(url, run, **kwargs)
        except _Refused as refused:
            refusal = refused.refusal
        finally:
            del runs[run]
        if self.on_refused is not None:
            self.on_refused(url, refusal)
        decision = refusal.decision
        told = {"url": refusal.url, "reason": decision.reason, "outcome": decision.outcome}
        return CrawlResultContainer(CrawlResult(
            url=url, html="", success=False, status_code=None,
            error_message=f"refused by robotgate: {refusal}", metadata={REFUSED: told}))

    async def arun_many(self, urls: Any,
                        config: CrawlerRunConfig | list[CrawlerRunConfig] | None = None,
                        *args: Any, **kwargs: Any) -> Any:
        """crawl4ai's ``arun_many``, each page through :meth:`arun`; UnguardedConfig
        before any is crawled for a setting that sends requests past the gate."""
        for each in config if isinstance(config, list) else [config]:
            if each is not None:
                _check(each)
        return await super().arun_many(urls, config, *args, **kwargs)

    @contextmanager
    def _deep_crawl_level(self, config: CrawlerRunConfig, deep_crawl: _DeepCrawl
                          ) -> Iterator[None]:
        """While it lasts, the runs of ``config`` are URLs of ``deep_crawl``."""
        self._deep_crawls[config] = deep_crawl
        try:
            yield
        finally:
            del self._deep_crawls[config]

    async def aseed_urls(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: crawl4ai's URL seeder sends its requests itself, past the gate."""
        raise UnguardedConfig("crawler.aseed_urls fetches sitemaps and archives past the "
                              "gate: read a site's sitemaps with gate.sitemaps(url)")

    async def amap_domain(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: crawl4ai's domain mapper sends its requests itself, past the gate."""
        raise UnguardedConfig("crawler.amap_domain probes a site past the gate: read its "
                              "sitemaps with gate.sitemaps(url), and crawl with arun")


def _check(config: CrawlerRunConfig) -> None:
    """UnguardedConfig for a setting of ``config`` that sends requests past the gate."""
    for setting, why in _UNGUARDED.items():
        if getattr(config, setting, None):
            raise UnguardedConfig(f"CrawlerRunConfig({setting}=...) is not guarded by "
                                  f"robotgate: {why}; leave it unset")


def _refusal_in(failure: BaseException) -> Disallowed | None:
    """The gate's refusal that ``failure`` carries (crawl4ai wraps its client's errors)."""
    seen: BaseException | None = failure
    for _ in range(8):  # crawl4ai's wrappers are one or two deep
        if seen is None or isinstance(seen, Disallowed):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


# -- deep crawls --------------------------------------------------------------------


class _DeepCrawl:
    """The crawler one of crawl4ai's deep-crawl strategies is handed: its ``arun`` and
    ``arun_many`` are the crawler's, the start URL the caller's input and every other
    URL a pointer of the page it was found on (its links, as crawl4ai's strategies write
    them, are noted as each page comes back).  A URL found on no page crawled so far (a
    resumed crawl's, one the strategy made up) counts as a public page's pointer."""

    def __init__(self, crawler: RobotGateCrawler, start: str) -> None:
        self.crawler = crawler
        self.start = start
        # Each link of the pages crawled so far, and the URL of the first page it was
        # found on (where that page came from, after its redirects).
        self.found_on: dict[str, str] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.crawler, name)  # what else a strategy reads (its logger)

    def provenance(self, url: str) -> Provenance:
        if url == self.start:
            return INPUT
        page = self.found_on.get(url)
        return _UNTOLD if page is None else pointer_of(page)

    async def arun(self, url: str, config: CrawlerRunConfig | None = None,
                   **kwargs: Any) -> Any:
        level = _level(config)
        with self.crawler._deep_crawl_level(level, self):
            result = await self.crawler.arun(url, level, **kwargs)
        for page in result:
            self._note_links(page)
        return result

    async def arun_many(self, urls: list[str], config: CrawlerRunConfig | None = None,
                        *args: Any, **kwargs: Any) -> Any:
        level = _level(config)
        if level.stream:
            return self._streamed(urls, level, *args, **kwargs)
        with self.crawler._deep_crawl_level(level, self):
            results = await self.crawler.arun_many(urls, level, *args, **kwargs)
        for page in results:
            self._note_links(page)
        return results

    async def _streamed(self, urls: list[str], level: CrawlerRunConfig, *args: Any,
                        **kwargs: Any) -> AsyncIterator[Any]:
        with self.crawler._deep_crawl_level(level, self):
            async for page in await self.crawler.arun_many(urls, level, *args, **kwargs):
                self._note_links(page)
                yield page

    def _note_links(self, result: Any) -> None:
        if not result.success:
            return
        page = result.redirected_url or result.url
        for kind in ("internal", "external"):
            for link in (result.links or {}).get(kind, ()):
                href = link.get("href")
                if not href:
                    continue
                for written in (href, normalize_url_for_deep_crawl(href, result.url),
                                efficient_normalize_url_for_deep_crawl(href, result.url)):
                    self.found_on.setdefault(written, page)


def _level(config: CrawlerRunConfig | None) -> CrawlerRunConfig:
    """A deep crawl's call's own config: its runs are known by it, and it starts no deep
    crawl of its own."""
    return (config or CrawlerRunConfig()).clone(deep_crawl_strategy=None)


# -- the browser ---------------------------------------------------------------------


def _persistent(config: BrowserConfig) -> BrowserConfig:
    """``config`` as robotgate launches it: a persistent context; UnsafeBrowser for a
    setting that would give crawl4ai a browser robotgate did not launch."""
    if config.browser_type != "chromium":
        raise UnsafeBrowser(f"BrowserConfig(browser_type={config.browser_type!r}): attach "
                            "checks only Chromium; use browser_type='chromium'")
    if config.cdp_url:
        raise UnsafeBrowser("BrowserConfig(cdp_url=...): a browser reached over CDP cannot "
                            "block service workers; leave cdp_url unset, robotgate launches "
                            "the browser")
    if config.browser_mode != "dedicated":
        raise UnsafeBrowser(f"BrowserConfig(browser_mode={config.browser_mode!r}): robotgate "
                            "launches the browser itself; use browser_mode='dedicated'")
    return config.clone(use_persistent_context=True)


@dataclass(frozen=True)
class _Launch:
    """How robotgate launches and attaches the browser of one crawler."""

    gate: RobotGate
    profile: str | Path | None
    executable_path: str | Path | None
    channel: str | None
    pace_subresources: bool
    max_subresources: int
    max_bytes: int | None


def _flags(config: BrowserConfig) -> list[str]:
    """crawl4ai's Chromium flags, the caller's ``extra_args`` and LAUNCH_ARGS (the
    floor's, last: the last of a switch wins)."""
    flags = [flag for flag in ManagedBrowser.build_browser_flags(config)
             if not flag.startswith(_LAUNCH_OWN)]
    return list(dict.fromkeys([*flags, *config.extra_args, *LAUNCH_ARGS]))


#: The fields of crawl4ai's BrowserManager robotgate's start sets, as crawl4ai's would.
_MANAGER_FIELDS = ("_using_cached_cdp", "_launched_persistent", "_browser_endpoint_key")


def _check_browser_manager(manager: BrowserManager) -> None:
    """PrivatePartMissing unless crawl4ai's BrowserManager still has the start robotgate
    overrides (renamed, crawl4ai's own would launch a browser the gate never sees) and
    the fields that start sets (renamed, crawl4ai would not find its browser)."""
    if not callable(getattr(BrowserManager, "_start_impl", None)):
        raise missing(CRAWL4AI_START)
    if not (all(hasattr(manager, field) for field in _MANAGER_FIELDS)
            and callable(getattr(BrowserManager, "_compute_browser_endpoint_key", None))
            and isinstance(getattr(BrowserManager, "_global_pages_in_use", None), dict)):
        raise missing(CRAWL4AI_FIELDS)


# What a kept page's documents forget of a run, in each frame: its timers (their ids
# count up from 1: each one is cleared), its sessionStorage, the tab's window.name.
_FORGET = """() => {
    const last = setTimeout(() => {}, 0);
    for (let id = 1; id <= last; id++) { clearTimeout(id); clearInterval(id); }
    try { sessionStorage.clear(); } catch (e) {}
    if (window === window.top) { window.name = ""; }
}"""


async def _forget_run(page: Page) -> bool:
    """Make ``page`` forget its run: each document's timers and sessionStorage, and the
    tab's window.name, cleared; the park holds the rest of its requests until the next
    run's navigation ends it.  (Sending the page to about:blank, or freezing it, would
    end the rest at once: 1.3-2x a crawl4ai page's CPU, 1.25x, measured.)  False when it
    could not be done (the page is then closed)."""
    try:
        for frame in page.frames:
            if frame.url.startswith(("http://", "https://")):
                await frame.evaluate(_FORGET)
    except PlaywrightError:
        return False
    return True


class _GatedBrowserManager(BrowserManager):  # type: ignore[misc]
    """crawl4ai's browser manager with the browser launched by robotgate: a persistent
    context as ``attach`` requires, attached before anything uses it."""

    playwright: Any  # crawl4ai's field: the Playwright driver, once started

    def __init__(self, launch: _Launch, config: BrowserConfig, logger: Any,
                 on_refused: Callable[[Request, Disallowed], object],
                 navigation_provenance: Callable[[Page, str], Provenance | None],
                 reusable: Callable[[Page], bool]) -> None:
        super().__init__(browser_config=config, logger=logger)
        _check_browser_manager(self)
        self.launch = launch
        self.on_refused = on_refused
        self.navigation_provenance = navigation_provenance
        # Whether a run's page, as the run ends, may serve the next run.
        self.reusable = reusable
        self.attachment: Attachment | None = None
        self._made_profile: str | None = None
        # The lock runs take and give back pages under (_pages), and its event loop.
        self._pages_lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    async def start(self) -> None:
        await super().start()
        if self.attachment is None:  # crawl4ai's start no longer goes through ours
            await self.close()
            raise missing(CRAWL4AI_START)

    async def _start_impl(self) -> None:
        # crawl4ai's own start for a persistent context, with robotgate's launch.
        if self.playwright is not None:
            await self.close()
        config, launch = self.config, self.launch
        profile = launch.profile or config.user_data_dir
        if not profile:
            profile = self._made_profile = tempfile.mkdtemp(prefix="robotgate-crawl4ai-")
        options: dict[str, Any] = {
            "headless": config.headless, "args": apply_sandbox_policy(_flags(config)),
            "viewport": {"width": config.viewport_width, "height": config.viewport_height},
            "user_agent": launch.gate.user_agent,
            "ignore_https_errors": config.ignore_https_errors,
            "accept_downloads": config.accept_downloads,
            "service_workers": "block",
        }
        if launch.executable_path is not None:
            options["executable_path"] = str(launch.executable_path)
        if launch.channel is not None:
            options["channel"] = launch.channel
        # The browser's own proxy is the black hole (no network but the gate); the
        # pages' proxy carries the gate's requests for them.
        floor_launch(options)  # the floor's proxy and switches, last
        pages_proxy: ProxySettings | None = None
        if config.proxy_config:
            proxy = config.proxy_config
            pages_proxy = {"server": proxy.server, "username": proxy.username,
                           "password": proxy.password}
        self._using_cached_cdp = False
        self.playwright = await async_playwright().start()
        context = await self.playwright.chromium.launch_persistent_context(
            preloading_off(profile), **options)
        self.default_context, self.browser, self._launched_persistent = context, None, True
        self.attachment = await attach(
            launch.gate, context, pace_subresources=launch.pace_subresources,
            on_refused=self.on_refused, max_subresources=launch.max_subresources,
            max_bytes=launch.max_bytes,
            proxy=pages_proxy, navigation_provenance=self.navigation_provenance)
        await self.setup_context(context)
        self._browser_endpoint_key = self._compute_browser_endpoint_key()
        BrowserManager._global_pages_in_use.setdefault(self._browser_endpoint_key, set())

    async def get_page(self, crawlerRunConfig: CrawlerRunConfig) -> tuple[Page, BrowserContext]:
        # crawl4ai hands out the pages of every browser under one lock of its class's,
        # bound to the event loop that first waited on it: a later asyncio.run's
        # concurrent runs failed on it ("bound to a different event loop").  This
        # browser is this manager's alone, so its runs take their pages one at a time
        # under a lock of its own for the running loop: crawl4ai's is then free when
        # they take it (only a wait binds an asyncio lock to a loop).
        async with self._pages():
            page, context = await super().get_page(crawlerRunConfig)
        return page, context

    def _pages(self) -> asyncio.Lock:
        """The lock under which runs take and give back the context's pages, for the
        running event loop."""
        loop = asyncio.get_running_loop()
        if self._pages_lock is None or self._pages_lock[0] is not loop:
            self._pages_lock = (loop, asyncio.Lock())
        return self._pages_lock[1]

    async def release_page_with_context(self, page: Page) -> None:
        # A run's page (crawl4ai releases none of a session's) ends with its run: its
        # timers, sessionStorage and window.name went on into the next run's, its
        # requests past arun's return.  The context's last page is kept for the next
        # run, as crawl4ai keeps it, once it has forgotten its run (see _forget_run):
        # closing Chromium's last tab closes its window, and each run's new page then
        # opened a window of its own, with a renderer for its omnibox popup (3x a
        # page's CPU).  Another page, or one whose run failed (see
        # _BrowserStrategy._reusable), or one that cannot forget, is closed before it
        # is given back: crawl4ai closes it after, and a run starting in between would
        # take it and lose it mid-navigation.  The run ends once no request of its page
        # can leave until the next run sends it on (Attachment.park).  Under the pages'
        # lock, so that runs ending at once count no page another is closing (they
        # closed every page), and crawl4ai,
        # counting right after, finds the kept page alone.
        async with self._pages():
            if len(page.context.pages) > 1 or not self.reusable(page) \
                    or not await _forget_run(page):
                with suppress(PlaywrightError):
                    await page.close()
            if self.attachment is not None:
                await self.attachment.park(page)
            await super().release_page_with_context(page)

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            self.attachment = None
            if self._made_profile is not None:
                shutil.rmtree(self._made_profile, ignore_errors=True)
                self._made_profile = None


class _BrowserStrategy(AsyncPlaywrightCrawlerStrategy):  # type: ignore[misc]
    """crawl4ai's Playwright strategy on robotgate's browser: a page of another context
    is refused before it navigates, a run's navigation is judged as a request of the
    run's provenance, a refused one is noted for its run, and a run's
    ``redirected_url`` is where the gate's redirects led."""

    def __init__(self, launch: _Launch, config: BrowserConfig, logger: Any) -> None:
        super().__init__(browser_config=config, logger=logger)
        self.browser_manager = _GatedBrowserManager(launch, config, self.logger, self._refused,
                                                    self._provenance_of, self._reusable)
        # The refusal of each run's page, by the run's config, until the run ends.
        self._refusals: dict[Any, Disallowed] = {}
        # Each page a run navigates, from its navigation on, and that run's config.
        self._navigating: dict[Page, Any] = {}
        #: Who pointed at each run's URL, by the run's config, while the run lasts
        #: (RobotGateCrawler.arun says); a run not known here is a public page's pointer.
        self.runs: dict[Any, Provenance] = {}
        # Where each run's page came from once its navigation was answered, by the run's
        # config: the URL the browser asked for, and the one the gate's redirects ended at.
        self._landed: dict[Any, Document | None] = {}

    async def execute_hook(self, hook_type: str, *args: Any, **kwargs: Any) -> Any:
        if hook_type == "on_page_context_created":
            page, context = args[0], kwargs.get("context")
            self._check_attached(page, context)
        elif hook_type == "before_goto":
            self._navigating[args[0]] = kwargs.get("config")
        elif hook_type == "after_goto":
            attachment = self.browser_manager.attachment
            if attachment is not None:
                self._landed[kwargs.get("config")] = attachment.document(args[0])
        return await super().execute_hook(hook_type, *args, **kwargs)

    def _check_attached(self, page: Page, context: BrowserContext | None) -> Attachment:
        attachment = self.browser_manager.attachment
        if attachment is None or context is not attachment.context \
                or page.context is not attachment.context:
            raise UnsafeBrowser("crawl4ai gave a page of a browser context robotgate did not "
                                "attach; it is not used")
        return attachment

    def _reusable(self, page: Page) -> bool:
        """Whether ``page`` may serve the next run as its run ends: not when the run's
        navigation failed or a navigation of it was refused (Chromium then commits its
        error page into it, soon, and would cut the next run's navigation short)."""
        run = self._navigating.get(page)
        return run is None or (run in self._landed and run not in self._refusals)

    def _provenance_of(self, page: Page, url: str) -> Provenance | None:
        """Who pointed at the URL a run sends its page to (crawl4ai's ``page.goto``, the
        attachment's input otherwise): the run's provenance; None for a page no run
        is navigating."""
        run = self._navigating.get(page)
        return None if run is None else self.runs.get(run, _UNTOLD)

    def _run_page(self, request: Request) -> Page | None:
        """The run's page ``request`` navigates (None: a subresource's, a frame's, a
        worker's, or a page no run is navigating)."""
        if not request.is_navigation_request():
            return None
        try:
            frame = request.frame
        except PlaywrightError:
            return None  # a worker's request: no page's navigation
        if frame.parent_frame is not None or frame.page not in self._navigating:
            return None
        return frame.page

    def _refused(self, request: Request, refusal: Disallowed) -> None:
        """The gate refused one of the browser's requests: a navigation of a run's page
        (its URL, a redirect's hop, or the page sending itself on: Chromium shows its
        error page instead) is that run's refusal; a subresource or a frame's is not."""
        page = self._run_page(request)
        if page is not None:
            self._refusals.setdefault(self._navigating[page], refusal)

    async def crawl(self, url: str, config: CrawlerRunConfig | None = None,
                    **kwargs: Any) -> Any:
        response: Any = None
        failed: Exception | None = None
        try:
            response = await super().crawl(url, config, **kwargs)
        except Exception as error:
            failed = error
        finally:
            for page, run in list(self._navigating.items()):
                if run is config:
                    del self._navigating[page]
            landed = self._landed.pop(config, None)
        # crawl4ai gives the page's URL: the one the browser asked for, unless the page
        # went on by itself since (a script, a fragment: kept as it is).
        if response is not None and landed is not None \
                and response.redirected_url == landed.url:
            response.redirected_url = landed.came_from
        refusal = self._refusals.pop(config, None)
        if refusal is not None:
            # Refused, or the page sent itself on and was refused: what crawl4ai read
            # then is Chromium's error page, not to be kept (nor cached) as the site's.
            raise _Refused(refusal) from None
        if failed is not None:
            raise failed
        return response


# -- plain HTTP ----------------------------------------------------------------------


class _GateSession:
    """What crawl4ai's HTTP crawler takes for its aiohttp session: each request sent by
    ``gate.fetch`` (the gate's own session; it is not closed here), as a request of
    the provenance of the run whose URL it is.  A URL no run is crawling, or one two
    runs crawl pointed at by different pages, counts as a public page's pointer."""

    def __init__(self, gate: RobotGate) -> None:
        self.gate = gate
        self.closed = False
        #: Who pointed at the URL of each run in flight, by that URL.
        self.running: dict[str, list[Provenance]] = {}

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        pointed_by = set(self.running.get(url, ()))
        provenance = pointed_by.pop() if len(pointed_by) == 1 else _UNTOLD
        return self.gate.fetch(url, method=method, pointed_by=provenance, **kwargs)

    @contextmanager
    def run(self, url: str, provenance: Provenance) -> Iterator[None]:
        """While it lasts, a run of ``provenance`` is crawling ``url``."""
        self.running.setdefault(url, []).append(provenance)
        try:
            yield
        finally:
            running = self.running[url]
            running.remove(provenance)
            if not running:
                del self.running[url]

    async def close(self) -> None:
        self.closed = True


class _HTTPStrategy(AsyncHTTPCrawlerStrategy):  # type: ignore[misc]
    """crawl4ai's HTTP crawler strategy sending through ``gate.fetch``; a refused
    request ends its run."""

    _session: Any  # crawl4ai's field: its aiohttp session, here the gate's fetch

    def __init__(self, gate: RobotGate, config: HTTPCrawlerConfig) -> None:
        super().__init__(browser_config=config)
        self.gate = gate
        #: Who pointed at each run's URL, by the run's config, while the run lasts
        #: (RobotGateCrawler.arun says); a run not known here is a public page's pointer.
        self.runs: dict[Any, Provenance] = {}

    async def start(self) -> None:
        if not self._session:
            self._session = _GateSession(self.gate)

    async def crawl(self, url: str, config: CrawlerRunConfig | None = None,
                    **kwargs: Any) -> Any:
        await self.start()
        try:
            with self._session.run(url, self.runs.get(config, _UNTOLD)):
                return await super().crawl(url, config, **kwargs)
        except Exception as failed:
            refusal = _refusal_in(failed)
            if refusal is None:
                raise
            raise _Refused(refusal) from None
