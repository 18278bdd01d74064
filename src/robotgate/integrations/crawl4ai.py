"""robotgate for crawl4ai: a crawl4ai crawler whose every request goes through the gate.

>>> crawler = RobotGateCrawler(gate, BrowserConfig(), executable_path=CHROMIUM)  # doctest: +SKIP
>>> async with crawler:                                                           # doctest: +SKIP
...     result = await crawler.arun("https://example.com/")

:class:`RobotGateCrawler` is crawl4ai's ``AsyncWebCrawler`` with a crawler strategy
of robotgate's:

- given a ``BrowserConfig`` (or nothing), its Chromium is launched by robotgate as
  :func:`robotgate.integrations.playwright.attach` requires (a persistent context on
  a :func:`~robotgate.integrations.playwright.preloading_off` profile,
  :data:`~robotgate.integrations.playwright.LAUNCH_ARGS`,
  ``service_workers="block"``) and attached before crawl4ai or a hook of its uses it:
  every request the browser makes goes through the gate, the URL given to ``arun``
  as input, everything else as a pointer of the page that made it.  A setting that
  would give crawl4ai another browser (``cdp_url``, a ``browser_mode`` other than
  ``"dedicated"``, another ``browser_type``) raises
  :class:`~robotgate.integrations.playwright.UnsafeBrowser` naming it; a page of any
  context but the attached one is refused before it navigates;
- given an ``HTTPCrawlerConfig``, crawl4ai's plain HTTP crawler sends each request
  with ``gate.fetch`` (the gate's session, redirects followed hop by hop, each judged
  and paced).

A page the gate refuses (robots.txt, a public page's pointer into a private address,
a site whose robots.txt cannot be fetched) comes back from ``arun`` and
``arun_many`` as crawl4ai's failed result: ``success=False``, ``error_message`` the
gate's reason, no status code (nothing was sent); crawl4ai neither retries it nor
calls its ``fallback_fetch_function`` for it.  Settings under which crawl4ai itself
sends requests past the crawler strategy raise :class:`UnguardedConfig` naming them;
crawl4ai's own robots.txt check (``check_robots_txt``) is left to the gate.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from contextlib import suppress
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
from playwright.async_api import BrowserContext, Page, Request, async_playwright
from playwright.async_api import Error as PlaywrightError

from ..errors import Disallowed, Error
from ..gate.gate import RobotGate
from .playwright import (
    LAUNCH_ARGS,
    MAX_SUBRESOURCES,
    Attachment,
    UnsafeBrowser,
    attach,
    preloading_off,
)

__all__ = ["RobotGateCrawler", "UnguardedConfig", "UnsafeBrowser"]

#: ``CrawlerRunConfig`` settings under which crawl4ai sends requests of its own, past
#: the crawler strategy (and so past the gate), with what to do instead.
_UNGUARDED = {
    "fetch_ssl_certificate": "it opens a TLS connection to the site itself",
    "check_cache_freshness": "it sends HEAD requests to validate its cache",
    "link_preview_config": "it fetches the heads of a page's links itself",
    "deep_crawl_strategy": ("it sends a page's links as the caller's own URLs, so a public "
                            "page could point the crawler into a private network"),
}
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
    ``pace_subresources`` and ``max_subresources`` are
    :func:`~robotgate.integrations.playwright.attach`'s.  An ``HTTPCrawlerConfig``
    crawls with crawl4ai's HTTP crawler, each request sent by ``gate.fetch``.

    ``on_refused(url, refusal)`` hears of each page refused (the URL given to
    ``arun``, and the :class:`~robotgate.Disallowed`: its ``url`` the hop refused,
    its ``decision`` why).  Other keyword arguments are ``AsyncWebCrawler``'s.
    """

    def __init__(self, gate: RobotGate, config: BrowserConfig | HTTPCrawlerConfig | None = None,
                 *, profile: str | Path | None = None, executable_path: str | Path | None = None,
                 channel: str | None = None, pace_subresources: bool = False,
                 max_subresources: int = MAX_SUBRESOURCES,
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
                             max_subresources)
            strategy = _BrowserStrategy(launch, browser_config, options.get("logger"))
            super().__init__(crawler_strategy=strategy, config=browser_config, **options)
        # crawl4ai wraps arun for its deep crawls, which send a page's links as the
        # caller's own URLs past this class's arun: unwrapped, such a config is refused.
        del self.arun
        self.on_refused = on_refused

    async def arun(self, url: str, config: CrawlerRunConfig | None = None,
                   **kwargs: Any) -> Any:
        """crawl4ai's ``arun`` through the gate: a page the gate refused is crawl4ai's
        failed result, with the gate's reason as its ``error_message``."""
        config = config or CrawlerRunConfig()
        _check(config)
        # A run's own copy: the browser knows the run by it; the gate checks robots.txt.
        run = config.clone(check_robots_txt=False)
        try:
            return await super().arun(url, run, **kwargs)
        except _Refused as refused:
            refusal = refused.refusal
        if self.on_refused is not None:
            self.on_refused(url, refusal)
        return CrawlResultContainer(CrawlResult(
            url=url, html="", success=False, status_code=None,
            error_message=f"refused by robotgate: {refusal}"))

    async def arun_many(self, urls: Any,
                        config: CrawlerRunConfig | list[CrawlerRunConfig] | None = None,
                        *args: Any, **kwargs: Any) -> Any:
        """crawl4ai's ``arun_many``, each page through :meth:`arun`; UnguardedConfig
        before any is crawled for a setting that sends requests past the gate."""
        for each in config if isinstance(config, list) else [config]:
            if each is not None:
                _check(each)
        return await super().arun_many(urls, config, *args, **kwargs)

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


def _flags(config: BrowserConfig) -> list[str]:
    """crawl4ai's Chromium flags, the caller's ``extra_args`` and LAUNCH_ARGS."""
    flags = [flag for flag in ManagedBrowser.build_browser_flags(config)
             if not flag.startswith(_LAUNCH_OWN)]
    return list(dict.fromkeys([*flags, *config.extra_args, *LAUNCH_ARGS]))


class _GatedBrowserManager(BrowserManager):  # type: ignore[misc]
    """crawl4ai's browser manager with the browser launched by robotgate: a persistent
    context as ``attach`` requires, attached before anything uses it."""

    playwright: Any  # crawl4ai's field: the Playwright driver, once started

    def __init__(self, launch: _Launch, config: BrowserConfig, logger: Any,
                 on_refused: Callable[[Request, Disallowed], object]) -> None:
        super().__init__(browser_config=config, logger=logger)
        self.launch = launch
        self.on_refused = on_refused
        self.attachment: Attachment | None = None
        self._made_profile: str | None = None

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
        if config.proxy_config:
            proxy = config.proxy_config
            options["proxy"] = {"server": proxy.server, "username": proxy.username,
                                "password": proxy.password}
        self._using_cached_cdp = False
        self.playwright = await async_playwright().start()
        context = await self.playwright.chromium.launch_persistent_context(
            preloading_off(profile), **options)
        self.default_context, self.browser, self._launched_persistent = context, None, True
        self.attachment = await attach(
            launch.gate, context, pace_subresources=launch.pace_subresources,
            on_refused=self.on_refused, max_subresources=launch.max_subresources)
        await self.setup_context(context)
        self._browser_endpoint_key = self._compute_browser_endpoint_key()
        BrowserManager._global_pages_in_use.setdefault(self._browser_endpoint_key, set())

    async def release_page_with_context(self, page: Page) -> None:
        # crawl4ai closes a run's page after giving it back, and a run starting in
        # between would take that page and lose it mid-navigation: it is closed first.
        with suppress(PlaywrightError):
            await page.close()
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
    is refused before it navigates, and a refused navigation is noted for its run."""

    def __init__(self, launch: _Launch, config: BrowserConfig, logger: Any) -> None:
        super().__init__(browser_config=config, logger=logger)
        self.browser_manager = _GatedBrowserManager(launch, config, self.logger, self._refused)
        # The refusal of each run's page, by the run's config, until the run ends.
        self._refusals: dict[Any, Disallowed] = {}
        # Each page a run navigates, from its navigation on, and that run's config.
        self._navigating: dict[Page, Any] = {}

    async def execute_hook(self, hook_type: str, *args: Any, **kwargs: Any) -> Any:
        if hook_type == "on_page_context_created":
            page, context = args[0], kwargs.get("context")
            self._check_attached(page, context)
        elif hook_type == "before_goto":
            self._navigating[args[0]] = kwargs.get("config")
        return await super().execute_hook(hook_type, *args, **kwargs)

    def _check_attached(self, page: Page, context: BrowserContext | None) -> None:
        attachment = self.browser_manager.attachment
        if attachment is None or context is not attachment.context \
                or page.context is not attachment.context:
            raise UnsafeBrowser("crawl4ai gave a page of a browser context robotgate did not "
                                "attach; it is not used")

    def _refused(self, request: Request, refusal: Disallowed) -> None:
        """The gate refused one of the browser's requests: a navigation of a run's page
        (its URL, a redirect's hop, or the page sending itself on: Chromium shows its
        error page instead) is that run's refusal; a subresource or a frame's is not."""
        if not request.is_navigation_request():
            return
        try:
            frame = request.frame
        except PlaywrightError:
            return  # a worker's request: no page's navigation
        if frame.parent_frame is not None:
            return
        run = self._navigating.get(frame.page)
        if run is not None:
            self._refusals.setdefault(run, refusal)

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
    ``gate.fetch`` (the gate's own session; it is not closed here)."""

    def __init__(self, gate: RobotGate) -> None:
        self.gate = gate
        self.closed = False

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        return self.gate.fetch(url, method=method, **kwargs)

    async def close(self) -> None:
        self.closed = True


class _HTTPStrategy(AsyncHTTPCrawlerStrategy):  # type: ignore[misc]
    """crawl4ai's HTTP crawler strategy sending through ``gate.fetch``; a refused
    request ends its run."""

    _session: Any  # crawl4ai's field: its aiohttp session, here the gate's fetch

    def __init__(self, gate: RobotGate, config: HTTPCrawlerConfig) -> None:
        super().__init__(browser_config=config)
        self.gate = gate

    async def start(self) -> None:
        if not self._session:
            self._session = _GateSession(self.gate)

    async def crawl(self, url: str, config: CrawlerRunConfig | None = None,
                    **kwargs: Any) -> Any:
        try:
            return await super().crawl(url, config, **kwargs)
        except Exception as failed:
            refusal = _refusal_in(failed)
            if refusal is None:
                raise
            raise _Refused(refusal) from None
