"""robotgate for crawlee: an HTTP client that puts every request through the gate, and
its browser crawler's pages too.

>>> client = RobotGateHttpClient(gate)                                    # doctest: +SKIP
>>> crawler = BeautifulSoupCrawler(http_client=client)                    # doctest: +SKIP
>>> await context.enqueue_links()    # in a handler: a public page's links  # doctest: +SKIP
>>> await client.enqueue_links(context)     # or as the page's own, private or not  # doctest: +SKIP

:class:`RobotGateHttpClient` implements crawlee's ``HttpClient`` interface
(``crawl``, ``send_request``, ``stream``) over the gate, so that an ``HttpCrawler``,
a ``BeautifulSoupCrawler`` or a ``ParselCrawler`` keeps robotgate's promises:

- each request, and each hop of a redirect, takes a full request turn
  (:class:`~robotgate.politeness.request_turn.RequestTurn`): robots.txt's verdict, a
  public site's pointer (a link, a redirect's hop) into a private address refused, the
  server's turn (the delay, Crawl-delay, Request-rate, caps, fleet slots), the gate's
  ``User-Agent`` and ``From``, and what the answer's status and ``Retry-After`` teach;
- robots.txt is fetched by the gate's own client, once per origin, shared with every
  other path and process, through the request's proxy (``proxy_info``) when it has one;
- a refused request is not sent: the crawler skips it (:class:`RobotsDisallowed` is
  crawlee's ``ContextPipelineInterruptedError``: no retry, no failure; the request's
  state ``SKIPPED``), the gate's events tell of it, and ``on_refused`` hears of it
  with the decision; ``send_request`` and ``stream`` raise it, a
  :class:`~robotgate.Disallowed`.  A site whose robots.txt cannot be reached (a dead
  host) is a failed request instead (:class:`RobotsUnreachable`), which crawlee retries.

**Who pointed at a request** (:mod:`robotgate.policy.provenance`) travels in its
``user_data``.  A request the crawler was given (``crawler.run``,
``crawler.add_requests``) is the caller's own input.  A link added from a page by
crawlee's own ``context.enqueue_links`` or ``context.add_requests`` cannot say which
page (crawlee keeps only its depth), so it is judged as a public page's pointer: it
may go to any public address, never into a private network on a guess.
:meth:`RobotGateHttpClient.enqueue_links` enqueues a page's links as that page's own
pointers (a private page's may then go into its network) and none from a page that
says ``nofollow``.

:meth:`RobotGateHttpClient.attach` puts a ``PlaywrightCrawler``'s pages through the gate:
each page's requests, the crawler's navigation included (as who pointed at its request,
with the same skips and failures), go through
:func:`robotgate.integrations.playwright.attach`, the browser's own network.

Each answer's body is read within ``max_bytes`` (decoded; 64 MiB by default, as
``gate.fetch`` reads it): a longer one is refused as a disallowed request is (outcome
``"body-too-large"``: the page skipped, ``send_request`` raising), read no further.

The requests are sent by ``inner``, a crawlee client that follows no redirects
(default: crawlee's own ``ImpitHttpClient(follow_redirects=False)``), so crawlee's
sessions, cookies, proxies and browser impersonation apply as without the gate; the
redirects are followed by the gate's exchange
(:mod:`robotgate.politeness.exchange`), one turn per hop.  ``inner``'s own credentials (a
client made with ``auth=``, ``cookies=`` or an Authorization or Cookie in ``headers=``) go
with the hops until one leaves the first request's origin, as the caller's do; the later
hops are sent by ``inner`` made without them (see :mod:`._crawlee_credentials`).
``inner`` would look a hop's host up again and might find a private address there (DNS
rebinding): an ``http`` pointer of a public page goes to the address its check found
public, with the Host header and the session's cookies of the name; an ``https`` one
goes by its name, its certificate binding it (see :func:`~._follow.pinned`).  crawlee
1.11's ``HttpxHttpClient`` cannot take another transport (it ignores ``transport=``),
hence a client, not a transport.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin
from weakref import WeakKeyDictionary

try:  # the client comes with an extra: say which, not a bare ModuleNotFoundError
    import crawlee  # noqa: F401
except ImportError as _exc:
    raise ImportError(f"{__name__} needs crawlee: pip install 'robotgate[crawlee]'") from _exc

import impit
from crawlee import Request, RequestState
from crawlee._utils.urls import validate_http_url  # what crawlee's own clients check a URL with
from crawlee.crawlers import HttpCrawlingContext
from crawlee.errors import ContextPipelineInterruptedError
from crawlee.errors import ProxyError as CrawleeProxyError
from crawlee.http_clients import HttpClient, HttpCrawlingResult, HttpResponse, ImpitHttpClient

from ..decision import Decision
from ..errors import BodyTooLarge, Disallowed
from ..errors import ProxyFailed as CoreProxyFailed
from ..errors import TooManyRedirects as CoreTooManyRedirects
from ..gate.aiohttp_bodies import MAX_BODY
from ..gate.aiohttp_client import Route
from ..policy.hops import REFUSED
from ..policy.provenance import INPUT, Provenance, pointer_of
from ..politeness.exchange import Answer, Exchanged, NextHop
from ..politeness.request_turn import RequestTurn
from ..private_parts import CRAWLEE_HTTP_CLIENT, missing
from ..records import Outcome
from ..robots.directives import PageDirectives, page_directives
from ..urls import redact
from ._crawlee_credentials import bare_twin
from ._follow import MAX_REDIRECTS, lower, pinned
from ._hops import resolve

if TYPE_CHECKING:
    from crawlee import RequestOptions, RequestTransformAction
    from crawlee._types import HttpHeaders, HttpMethod, HttpPayload
    from crawlee.crawlers import (
        ParsedHttpCrawlingContext,
        PlaywrightCrawler,
        PlaywrightCrawlingContext,
        PlaywrightPostNavCrawlingContext,
        PlaywrightPreNavCrawlingContext,
    )
    from crawlee.proxy_configuration import ProxyInfo
    from crawlee.sessions import Session
    from crawlee.statistics import Statistics
    from playwright.async_api import Page, ProxySettings
    from playwright.async_api import Request as BrowserRequest
    from playwright.async_api import Response as BrowserResponse

    from ..gate.gate import RobotGate
    from .playwright import Attachment

__all__ = ["PROVENANCE", "ProxyFailed", "ProxyUnreachable", "RobotGateHttpClient",
           "RobotsDisallowed", "RobotsUnreachable", "TooManyRedirects", "provenance_of"]

log = logging.getLogger(__name__)

#: The ``user_data`` key a request's provenance is kept under (``{"page": ..., "public":
#: ...}``), so that it is stored with the request in crawlee's queue.
PROVENANCE = "robotgate_provenance"
# Who pointed at a request added from a page that cannot say which: a public page.
_UNSAID = pointer_of("")
# The outcome of a PlaywrightCrawler request the gate's route would not see.
_UNROUTED = "navigation-unrouted"


class RobotsDisallowed(Disallowed, ContextPipelineInterruptedError):
    """robots.txt forbids the URL, or a public page may not point at it (a redirect's
    hop, a link into a private address): a :class:`~robotgate.Disallowed` that crawlee's
    pipeline takes as "skip this request" (not retried, not failed)."""


class RobotsUnreachable(Disallowed):
    """The site's robots.txt could not be fetched (a dead host: connection refused, a
    name that does not resolve, 5xx, 429), so the site counts as disallowed for now
    (RFC 9309 2.3.1.4): a failed request, which crawlee retries and then fails."""


class TooManyRedirects(CoreTooManyRedirects, impit.TooManyRedirects):
    """A request was redirected more than ``max_redirects`` times: robotgate's
    :class:`~robotgate.TooManyRedirects`, and the error crawlee's own client raises, in
    its words."""

    def __str__(self) -> str:
        return f"Exceeded the limit of {self.limit} redirects while requesting {self.url}."


class ProxyFailed(CoreProxyFailed, CrawleeProxyError):
    """The request's proxy (``proxy_info``) refused its credentials (407) or the tunnel
    while robots.txt was asked: robotgate's :class:`~robotgate.ProxyFailed` (no verdict
    of the site's, nothing cached) and the ``crawlee.errors.ProxyError`` crawlee's own
    client raises for a tunnel refused, so that a crawler rotates the session."""


class ProxyUnreachable(CoreProxyFailed, impit.ConnectError):
    """The request's proxy could not be reached while robots.txt was asked: robotgate's
    :class:`~robotgate.ProxyFailed` and the ``impit.ConnectError`` crawlee's own client
    raises then (a failed request, which crawlee retries)."""


def _proxy_failure(failed: CoreProxyFailed) -> CoreProxyFailed:
    """The gate's proxy failure as crawlee's caller gets it: unreachable when a
    connection error caused it, else refused (its message and attributes kept)."""
    kind = ProxyUnreachable if isinstance(failed.__cause__, OSError) else ProxyFailed
    raised = kind.__new__(kind, *failed.args)
    raised.__dict__.update(failed.__dict__)
    raised.args = failed.args
    return raised


def provenance_of(request: Request) -> Provenance:
    """Who pointed at ``request``: the :data:`PROVENANCE` it carries; without one, a
    request the crawler was given (crawl depth 0) is the caller's own input, and one
    added from a page (``context.enqueue_links``, ``context.add_requests``), or
    carrying a value that cannot be read, is a public page's pointer (its page
    ``""``): crawlee does not say which page."""
    held = request.user_data.get(PROVENANCE)
    if held is None:
        return INPUT if request.crawl_depth == 0 else _UNSAID
    if isinstance(held, Mapping):
        page, public = held.get("page"), held.get("public")
        if isinstance(page, str | None) and isinstance(public, bool | None):
            return Provenance(page, public)
    return _UNSAID


def _stored(provenance: Provenance) -> dict[str, str | bool | None]:
    return {"page": provenance.page, "public": provenance.public}


def _proxy_settings(proxy_info: ProxyInfo | None) -> ProxySettings | None:
    """crawlee's proxy of a request as Playwright's settings (as crawlee's own browser
    controller writes it)."""
    if proxy_info is None:
        return None
    return {"server": f"{proxy_info.scheme}://{proxy_info.hostname}:{proxy_info.port}",
            "username": proxy_info.username, "password": proxy_info.password}


class _Navigation:
    """A PlaywrightCrawler page's navigation, sent by ``attach``'s route (as every
    request of the page is: its redirects followed there, their cookies kept by
    Chromium's rules) as who pointed at the crawlee request; its refusal is the
    request's, which the crawler then skips."""

    def __init__(self, client: RobotGateHttpClient, request: Request, page: Page,
                 provenance: Provenance) -> None:
        self.client = client
        self.request = request
        self.page = page
        self.provenance = provenance
        #: The refusal of the navigation (the page is then skipped), if it was refused.
        self.refusal: RobotsDisallowed | None = None
        #: The page's attachment, which tells where its document came from.
        self.attachment: Attachment | None = None
        self._going = False  # whether crawlee's page.goto is under way
        self._told = False  # whether the route was told who pointed at the navigation

    def provenance_for(self, page: Page, url: str) -> Provenance | None:
        """``attach``'s ``navigation_provenance``: the crawlee request's, for its own
        navigation; a later ``page.goto`` (a handler's) is the caller's input."""
        if self._told:
            return None
        self._told = True
        return self.provenance

    def refused(self, request: BrowserRequest, no: Disallowed) -> None:
        """``attach``'s ``on_refused``: the refusal of crawlee's navigation is the
        page's (told as the client tells one); a subresource's is the page's own
        business, as in Chromium alone."""
        if not self._going or self.refusal is not None or not _top_level(request, self.page):
            return
        if no.decision.outcome == BodyTooLarge.OUTCOME:
            no = Disallowed(no.url, replace(no.decision, reason=_too_large(
                self.client.max_bytes)))
        refusal = self.client._refusal(self.request.url,
                                       _explained(self.provenance, self.request.url, no))
        if isinstance(refusal, RobotsDisallowed):
            self.refusal = refusal  # a site that cannot be reached fails, and is retried

    def guard_goto(self) -> None:
        """crawlee's ``page.goto`` raises the navigation's refusal, crawlee's
        interruption (skipped, not retried), instead of the browser's aborted load."""
        from playwright.async_api import Error as PlaywrightError

        goto = self.page.goto

        async def goto_or_refusal(url: str, **options: Any) -> BrowserResponse | None:
            self._going = True
            try:
                return await goto(url, **options)
            except PlaywrightError:
                if self.refusal is None:
                    raise
                self.request.state = RequestState.SKIPPED
                raise self.refusal from None
            finally:
                self._going = False

        goto_or_refusal.__doc__ = goto.__doc__
        self.page.goto = goto_or_refusal  # type: ignore[method-assign]


class RobotGateHttpClient(HttpClient):
    """crawlee's HTTP client interface over ``gate`` (see the module).

    ``inner`` sends each hop and must follow no redirects itself (a hop it followed
    would not be judged); the default is ``ImpitHttpClient(follow_redirects=False)``.
    ``follow_redirects=False`` returns a redirect's answer as it is, as crawlee's
    clients do.  ``max_bytes``: the longest body (decoded) an answer may have, a
    PlaywrightCrawler's page and everything it loads included (None: no limit); a longer
    one is refused, read no further (``stream`` reads as its caller reads).
    ``max_redirects``: the hops followed before :class:`TooManyRedirects` (crawlee's
    clients' default, 20).  The gate is yours to open and close; ``inner`` is cleaned up
    with this client.
    """

    def __init__(self, gate: RobotGate, inner: HttpClient | None = None, *,
                 follow_redirects: bool = True, persist_cookies_per_session: bool = True,
                 on_refused: Callable[[str, Disallowed], object] | None = None,
                 max_bytes: int | None = MAX_BODY, max_redirects: int = MAX_REDIRECTS) -> None:
        super().__init__(persist_cookies_per_session=persist_cookies_per_session)
        if max_bytes is not None and max_bytes < 0:
            raise ValueError(f"max_bytes must be None or at least 0, not {max_bytes!r}")
        if max_redirects < 0:
            raise ValueError(f"max_redirects must be at least 0, not {max_redirects!r}")
        self.gate = gate
        self.follow_redirects = follow_redirects
        self.max_redirects = max_redirects
        self.max_bytes = max_bytes
        #: Called with the URL asked for and the refusal (its ``url``: the hop refused,
        #: its ``decision``: why) for each request robots.txt or a pointer rule refuses.
        self.on_refused = on_refused
        self.inner = inner if inner is not None else ImpitHttpClient(
            persist_cookies_per_session=persist_cookies_per_session, follow_redirects=False)
        self._entered_inner = False  # whether this client entered inner (then it exits it)
        # inner made without its own credentials, for the hops that left their request's
        # first origin (see _crawlee_credentials); made on first need.
        self._bare: HttpClient | None = None
        # A PlaywrightCrawler's navigations under way, by page (see attach).
        self._navigations: WeakKeyDictionary[Page, _Navigation] = WeakKeyDictionary()

    async def crawl(self, request: Request, *, session: Session | None = None,
                    proxy_info: ProxyInfo | None = None, statistics: Statistics | None = None,
                    timeout: timedelta | None = None) -> HttpCrawlingResult:
        """Fetch ``request`` for a crawler, as who pointed at it: a refused one is
        skipped, not retried."""
        try:
            url, response = await self._send(request.url, request.method, request.headers,
                                             request.payload, session, proxy_info, timeout,
                                             provenance_of(request))
        except RobotsDisallowed:
            request.state = RequestState.SKIPPED
            raise
        if statistics is not None:
            statistics.register_status_code(response.status_code)
        request.loaded_url = url
        return HttpCrawlingResult(http_response=response)

    async def send_request(self, url: str, *, method: HttpMethod = "GET",
                           headers: Mapping[str, str] | None = None,
                           payload: HttpPayload | None = None, session: Session | None = None,
                           proxy_info: ProxyInfo | None = None,
                           timeout: timedelta | None = None) -> HttpResponse:
        """Send one request (``context.send_request`` in a handler: the caller's own
        input), checked and paced."""
        validate_http_url(redact(url))
        return (await self._send(url, method, headers or {}, payload, session, proxy_info,
                                 timeout))[1]

    @asynccontextmanager
    async def stream(self, url: str, *, method: HttpMethod = "GET",
                     headers: Mapping[str, str] | None = None,
                     payload: HttpPayload | None = None, session: Session | None = None,
                     proxy_info: ProxyInfo | None = None,
                     timeout: timedelta | None = None) -> AsyncGenerator[HttpResponse]:
        """Stream one request's answer; the server's slot is held until the block exits."""
        validate_http_url(redact(url))
        sender = _Sender(self, method, headers or {}, payload, session, proxy_info, timeout,
                         stream=True)
        done = await self._exchange(sender, url, INPUT, proxy_info)
        try:
            yield done.response
        finally:
            try:
                await sender.close()
            finally:
                done.turn.release()

    async def cleanup(self) -> None:
        """Clean up ``inner`` if this client started it (the gate stays open: it is yours)."""
        bare, self._bare = self._bare, None
        try:
            if bare is not None and bare is not self.inner:
                await bare.cleanup()
        finally:
            if self._entered_inner:
                self._entered_inner = False
                await self.inner.__aexit__(None, None, None)

    def _inner_for(self, on_first_origin: bool) -> HttpClient:
        """``inner`` for a hop on its request's first origin; for one after the request left
        it, ``inner`` without its own credentials (``auth=``, ``cookies=``, credential
        headers: see :func:`~._crawlee_credentials.bare_twin`), as crawlee's clients alone
        send them on no other origin."""
        if on_first_origin:
            return self.inner
        if self._bare is None:
            self._bare = bare_twin(self.inner) or self.inner
        return self._bare

    async def __aenter__(self) -> RobotGateHttpClient:
        await super().__aenter__()
        if not self.inner.active:
            await self.inner.__aenter__()
            self._entered_inner = True
        return self

    # -- a page's links and directives, in a request handler -------------------------

    async def enqueue_links(self, context: ParsedHttpCrawlingContext[Any]
                            | PlaywrightCrawlingContext, *,
                            requests: Sequence[str | Request] | None = None,
                            transform_request_function: Callable[
                                [RequestOptions], RequestOptions | RequestTransformAction]
                            | None = None,
                            **kwargs: Any) -> None:
        """``context.enqueue_links(...)`` with each link carrying its page: the one way
        a page's links reach this client as that page's own pointers, which a private
        page's need to go into its network (see the module).
        Nothing is enqueued from a page that says ``nofollow`` (:meth:`directives`).

        Takes crawlee's arguments (``selector``, ``strategy``, ``include``, ``label``,
        ``user_data``, ``transform_request_function``, ``requests``, ...); ``requests``
        are links the handler took from the page itself."""
        page = context.request.loaded_url or context.request.url
        said = await self.directives(context)
        if said.nofollow:
            log.info("no links enqueued from %s: %s", redact(page), said.explain())
            return
        carried = _stored(pointer_of(page))
        if requests is not None:
            base = kwargs.get("base_url") or page
            await context.enqueue_links(
                requests=[found for link in requests
                          if (found := _carrying(link, base, carried)) is not None], **kwargs)
            return

        def carry(options: RequestOptions) -> RequestOptions | RequestTransformAction:
            if transform_request_function is not None:
                changed = transform_request_function(options)
                if changed == "skip":
                    return changed
                if changed != "unchanged":
                    options = changed
            options["user_data"] = {**options.get("user_data", {}), PROVENANCE: carried}
            return options

        await context.enqueue_links(transform_request_function=carry, **kwargs)

    async def directives(self, context: HttpCrawlingContext | PlaywrightCrawlingContext
                         ) -> PageDirectives:
        """The page's directives for this robot (``X-Robots-Tag``, and the meta tags
        of an HTML page's head): ``nofollow``, ``noindex``, ``noai``, ..."""
        if isinstance(context, HttpCrawlingContext):
            answer = context.http_response
            headers: Any = answer.headers
            content_type = answer.headers.get("content-type")
            body: bytes | None = await answer.read()
        else:
            headers = [(h["name"], h["value"]) for h in await context.response.headers_array()]
            content_type = next((value for name, value in headers
                                 if name.lower() == "content-type"), None)
            body = await _body(context.response)
        return page_directives(headers, body, agent=self.gate.robots_agent,
                               content_type=content_type)

    # -- a PlaywrightCrawler's pages ---------------------------------------------------

    def attach(self, crawler: PlaywrightCrawler) -> None:
        """Put every page ``crawler`` opens through the gate: everything the page asks
        for goes through :func:`robotgate.integrations.playwright.attach`, the crawler's
        navigation as who pointed at its request (each redirect hop judged, its cookies
        kept by Chromium's rules, a public page's pointer held to the address its check
        found).  A refused page is skipped with its reason (not retried); a dead host's
        is a failed request.

        ``crawler`` must be built with ``http_client=`` this client (ValueError if not):
        crawlee's own browser client would send ``context.send_request`` past the page's
        routes.  The browser is given no network but the gate: the launch options of
        :func:`robotgate.integrations.playwright.launch_options` are added to each of
        the crawler's Playwright browsers' ``browser_launch_options`` (ValueError for a
        proxy of their own there), and each page's ``attach`` checks the floor.  A
        ``proxy_configuration``'s proxy (each request's ``proxy_info``) carries the
        page's requests and its robots.txt, through the gate; the browser is not given
        it (its proxy stays the black hole)."""
        from .browser_network.floor import floor_launch

        # crawlee has no public accessor for its client: a crawlee that keeps it
        # elsewhere is refused, its client not known to be this one.
        if not hasattr(crawler, "_http_client"):
            raise missing(CRAWLEE_HTTP_CLIENT)
        if crawler._http_client is not self:
            raise ValueError("build the PlaywrightCrawler with http_client= this "
                             "RobotGateHttpClient before attaching it")
        # crawlee launches the browser as the crawl starts, with each plugin's options
        # (the mapping it hands out is the one it launches with).
        pool = getattr(crawler, "_browser_pool", None)
        for plugin in getattr(pool, "plugins", ()):
            launch = getattr(plugin, "browser_launch_options", None)
            if not isinstance(launch, dict):
                continue  # not a Playwright plugin's: each page's attach refuses it
            floor_launch(launch)  # ValueError for a proxy of its own
        if pool is not None:
            # crawlee makes a page's browser context with the request's proxy_info as its
            # proxy, a network past the gate; that proxy goes to attach instead (the
            # page's requests are sent through it), and the browser keeps the black hole.
            # crawlee offers no seam for this but its pool's new_page.
            new_page = pool.new_page

            async def new_page_without_proxy(page_id: str | None = None,
                                             browser_plugin: Any = None,
                                             proxy_info: ProxyInfo | None = None) -> Any:
                return await new_page(page_id=page_id, browser_plugin=browser_plugin)

            pool.new_page = new_page_without_proxy
        crawler.pre_navigation_hook(self._before_navigation)
        crawler.post_navigation_hook(self._after_navigation)

    async def _before_navigation(self, context: PlaywrightPreNavCrawlingContext) -> None:
        from .playwright import attach

        request, page = context.request, context.page
        try:
            provenance = provenance_of(request)
            if request.headers or request.method != "GET":
                # crawlee sends such a navigation itself, past every route (route.continue_).
                raise self._refusal(request.url, Disallowed(request.url, Decision(
                    False, "a PlaywrightCrawler request with its own method or headers is "
                    "sent by crawlee past the gate's route: send it with a "
                    "BeautifulSoupCrawler, or context.send_request", outcome=_UNROUTED)))
            navigation = _Navigation(self, request, page, provenance)
            navigation.attachment = await attach(
                self.gate, page, proxy=_proxy_settings(context.proxy_info),
                max_bytes=self.max_bytes, navigation_provenance=navigation.provenance_for,
                on_refused=navigation.refused)
            navigation.guard_goto()
        except BaseException as failed:
            if isinstance(failed, RobotsDisallowed):
                request.state = RequestState.SKIPPED
            # crawlee opens the page before this hook and closes it after navigating:
            # a page not navigated is closed here.
            with suppress(Exception):
                await page.close()
            raise
        self._navigations[page] = navigation

    async def _after_navigation(self, context: PlaywrightPostNavCrawlingContext) -> None:
        navigation = self._navigations.pop(context.page, None)
        if navigation is None:
            return
        if navigation.refusal is not None:  # the browser loaded something all the same
            context.request.state = RequestState.SKIPPED
            raise navigation.refusal
        document = None if navigation.attachment is None else navigation.attachment.document(
            context.page)
        if document is not None:
            context.request.loaded_url = document.came_from  # after the route's redirects

    # -- one request, hop by hop -----------------------------------------------------

    async def _send(self, url: str, method: str, headers: Mapping[str, str],
                    payload: HttpPayload | None, session: Session | None,
                    proxy_info: ProxyInfo | None, timeout: timedelta | None,
                    provenance: Provenance = INPUT) -> tuple[str, HttpResponse]:
        """The answer to ``url`` (a request of ``provenance``) and the URL it came
        from, redirects followed; the answer is read whole (within ``max_bytes``: a
        longer one is refused) before the server's slot is given back."""
        sender = _Sender(self, method, headers, payload, session, proxy_info, timeout,
                         limit=self.max_bytes)
        done = await self._exchange(sender, url, provenance, proxy_info)
        try:
            response = await sender.read(done.response, done.url)
        except BodyTooLarge as large:
            raise self._refusal(url, Disallowed(done.url, Decision(
                False, _too_large(large.limit), outcome=BodyTooLarge.OUTCOME))) from None
        finally:
            try:
                await sender.close()
            finally:
                done.turn.release()
        return done.url, response

    async def _exchange(self, sender: _Sender, url: str, provenance: Provenance,
                        proxy_info: ProxyInfo | None) -> Exchanged[HttpResponse]:
        """``url`` sent through the gate's exchange, a refusal raised as this module's;
        robots.txt is asked through the page's proxy too (by the gate's client)."""
        via = Route(None, proxy_info.url) if proxy_info is not None else None
        try:
            # crawlee's clients resolve with the system resolver, as the loop's getaddrinfo does.
            return await self.gate.exchange(sender, url, provenance, resolve=resolve,
                                            follow=self.follow_redirects,
                                            max_redirects=self.max_redirects, via=via)
        except Disallowed as no:
            raise self._refusal(url, _explained(provenance, url, no)) from None
        except CoreTooManyRedirects as many:
            raise TooManyRedirects(many.url, many.limit) from None
        except CoreProxyFailed as failed:
            raise _proxy_failure(failed) from failed

    @staticmethod
    def _where(turn: RequestTurn, url: str, headers: dict[str, str], session: Session | None
               ) -> tuple[str, dict[str, str], Session | None]:
        """The URL, headers and session a begun turn's request is sent with: a public
        page's ``http`` pointer goes to the address its check found (see
        :func:`~._follow.pinned`), the session's cookies for the name sent here, and
        ``inner`` given no session (it would keep cookies under the address)."""
        merged = {**headers, **lower(turn.headers)}
        to, host = pinned(url, turn.checked if turn.guard else ())
        if host is None:
            return url, merged, session
        merged["host"] = host
        if session is not None and "cookie" not in merged:
            jar = session.cookies.get_cookie_string(url)
            if jar:
                merged["cookie"] = jar
        return to, merged, None

    def _keep_cookies(self, url: str, response: HttpResponse, session: Session | None,
                      sent_with: Session | None) -> None:
        """A pinned request's cookies are kept for the name it was sent to (the
        ``Set-Cookie`` as crawlee's headers hold it: one value)."""
        if session is None or sent_with is not None or not self._persist_cookies_per_session:
            return
        set_cookie = response.headers.get("set-cookie")
        if set_cookie:
            session.cookies.extract_cookies_from_headers(url, [set_cookie])

    def _refusal(self, asked: str, no: Disallowed) -> Disallowed:
        """What a request the gate did not send raises: :class:`RobotsUnreachable` when
        its site's robots.txt could not be fetched, else :class:`RobotsDisallowed`
        (``on_refused`` told)."""
        if no.decision.outcome == Outcome.UNREACHABLE:
            log.info("failed %s: %s", no.url, no.decision.reason)
            return RobotsUnreachable(no.url, no.decision)
        self._tell(asked, no)
        return RobotsDisallowed(no.url, no.decision)

    def _tell(self, asked: str, no: Disallowed) -> None:
        log.info("skipped %s: %s", no.url, no.decision.reason)
        if self.on_refused is not None:
            self.on_refused(asked, no)



def _too_large(limit: int | None) -> str:
    return (f"the answer's body is longer than {limit:,} bytes "
            "(RobotGateHttpClient(..., max_bytes=...)): not read further")


def _explained(provenance: Provenance, url: str, no: Disallowed) -> Disallowed:
    """``no``, the refusal of ``url`` (a request of ``provenance``), saying how a
    private page's links go into its network where a link said no page."""
    if provenance == _UNSAID and no.url == url and no.decision.outcome == REFUSED:
        return Disallowed(no.url, replace(no.decision, reason=(
            f"{no.decision.reason}; it was added from a page without saying which, and "
            "counts as a public page's link: enqueue a private page's links with "
            "RobotGateHttpClient.enqueue_links(context)")))
    return no


def _top_level(request: BrowserRequest, page: Page) -> bool:
    """Whether ``request`` is a navigation of ``page``'s main frame."""
    from playwright.async_api import Error as PlaywrightError

    try:
        return request.is_navigation_request() and request.frame == page.main_frame
    except PlaywrightError:  # its frame is gone
        return False


def _carrying(link: str | Request, base: str, carried: dict[str, str | bool | None]
              ) -> Request | None:
    """``link`` as a request carrying its page's pointer (None: no http(s) URL)."""
    if isinstance(link, Request):
        link.user_data[PROVENANCE] = carried
        return link
    try:
        return Request.from_url(urljoin(base, link), user_data={PROVENANCE: carried})
    except ValueError:  # crawlee's check of the URL: no http(s) URL
        log.debug("not enqueued from %s: %s", redact(base), redact(link))
        return None


async def _body(response: BrowserResponse) -> bytes | None:
    """A browser answer's body; None for one the browser keeps none of (a redirect's)."""
    from playwright.async_api import Error as PlaywrightError

    try:
        return await response.body()
    except PlaywrightError:
        return None


class _Sender:
    """crawlee's side of the gate's exchange: one request at a time through ``inner``,
    which follows no redirect (the exchange does), with crawlee's session and proxy.
    ``stream``: each answer is streamed, the last one's stream left open until
    :meth:`close`.  ``limit``: each answer is streamed too, and the last one read
    within ``limit`` bytes (:meth:`read`), never whole by ``inner``."""

    def __init__(self, client: RobotGateHttpClient, method: str, headers: Mapping[str, str],
                 payload: HttpPayload | None, session: Session | None,
                 proxy_info: ProxyInfo | None, timeout: timedelta | None, *,
                 stream: bool = False, limit: int | None = None) -> None:
        self.client = client
        self.method = method
        self.headers = lower(headers)
        self.payload = payload
        self.session = session
        self.proxy_info = proxy_info
        self.timeout = timeout
        self.stream = stream
        self.limit = limit
        self._url = ""  # the URL of the request last sent
        # Whether no hop has left the first request's origin yet: inner's own credentials
        # go with the hops until then, as the caller's go by the core's rule.
        self._on_first_origin = True
        self._open: AbstractAsyncContextManager[HttpResponse] | None = None  # its stream

    def prepare(self, url: str) -> str:
        return url

    async def send(self, turn: RequestTurn) -> HttpResponse:
        """Send ``turn.url``: a public page's ``http`` pointer to the address its check
        found (see :meth:`RobotGateHttpClient._where`)."""
        client = self.client
        self._url = url = turn.url
        to, headers, session = client._where(turn, url, self.headers, self.session)
        slot = turn.slot
        if slot is not None:
            # crawlee's clients tell nothing as their bytes go: the fleet slot is looked
            # at last as the request is handed to ``inner`` (LateSlot: not handed).
            slot.check(asyncio.get_running_loop().time())
        response = await self._send_once(to, headers, session)
        client._keep_cookies(url, response, self.session, session)
        return response

    async def _send_once(self, to: str, headers: dict[str, str],
                         session: Session | None) -> HttpResponse:
        """One request through ``inner``: streamed (the stream kept open until
        :meth:`close`) when streaming or reading within a limit, else read whole."""
        inner = self.client._inner_for(self._on_first_origin)
        method = _method(self.method)
        if self.stream or self.limit is not None:
            opened = inner.stream(to, method=method, headers=headers, payload=self.payload,
                                  session=session, proxy_info=self.proxy_info,
                                  timeout=self.timeout)
            response = await opened.__aenter__()
            self._open = opened
            return response
        return await inner.send_request(to, method=method, headers=headers,
                                        payload=self.payload, session=session,
                                        proxy_info=self.proxy_info, timeout=self.timeout)

    def answer(self, response: HttpResponse) -> Answer:
        headers = response.headers
        return Answer(response.status_code, headers.get("retry-after"), headers.get("location"))

    async def redirected(self, response: HttpResponse, hop: NextHop) -> None:
        await self.close()
        self.method, self.headers, self.payload = (hop.method, hop.headers(self.headers),
                                                   hop.body(self.payload))
        if hop.leaves_origin:
            self._on_first_origin = False

    def drop(self, response: HttpResponse) -> Awaitable[None] | None:
        return self.close()

    async def read(self, response: HttpResponse, url: str) -> HttpResponse:
        """``response`` (the last answer) read whole, within ``limit`` bytes:
        :class:`BodyTooLarge` past it, nothing more read."""
        if self.limit is None or self._open is None:
            return response  # read whole by inner (send_request)
        body = bytearray()
        chunks = response.read_stream()
        try:
            async for chunk in chunks:
                body += chunk
                if len(body) > self.limit:
                    raise BodyTooLarge(url, self.limit,
                                       "(RobotGateHttpClient(..., max_bytes=...))")
        finally:
            finish = getattr(chunks, "aclose", None)  # an async generator's, as crawlee's
            if finish is not None:
                await finish()
        return _ReadAnswer(response, bytes(body))

    async def close(self) -> None:
        """Close the stream still open (none: nothing to do)."""
        opened, self._open = self._open, None
        if opened is not None:
            await opened.__aexit__(None, None, None)


class _ReadAnswer:
    """An answer read within the limit: crawlee's ``HttpResponse``, its body held."""

    def __init__(self, streamed: HttpResponse, body: bytes) -> None:
        self.streamed = streamed
        self.http_version: str = streamed.http_version
        self.status_code: int = streamed.status_code
        self.headers: HttpHeaders = streamed.headers
        self._body = body

    async def read(self) -> bytes:
        return self._body

    async def read_stream(self) -> AsyncIterator[bytes]:
        # Read whole, as an answer of crawlee's own clients' send_request and crawl is:
        # its stream is consumed, which they raise for (read() has the body).
        raise RuntimeError("Stream is already consumed.")
        yield b""  # an async generator, as theirs


def _method(method: str) -> HttpMethod:
    return method  # type: ignore[return-value]  # crawlee's Literal of method names
