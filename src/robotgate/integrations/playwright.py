"""robotgate for Playwright: every request a browser context makes goes through the gate.

>>> handle = await attach(gate, context)     # a BrowserContext, or one Page  # doctest: +SKIP
>>> await page.goto("https://example.com/")                                  # doctest: +SKIP
>>> await handle.detach()                                                    # doctest: +SKIP

The browser's only network is the gate.  Chromium is launched with
:func:`launch_options`: its proxy a black hole (:data:`BLACK_HOLE`, port 0 on loopback,
on which nothing can listen), loopback included, and WebRTC held to that proxy, so a
request no route fulfils (a popup's ``document.write``, a download, a keepalive
``fetch`` as a page closes, a WebSocket, WebRTC, a worker, the DevTools protocol)
reaches nothing, whatever made it.  :func:`attach` routes every http(s) request of
``context`` (``context.route``) to a handler that sends it itself, through a request
client of its own (the gate's aiohttp, through ``attach``'s ``proxy``, with the Cookie
header Chromium computed for the request:
:mod:`robotgate.integrations.browser_network.sender`), reads the body within
``max_bytes`` (a longer one is refused as a disallowed request is, its outcome
``"body-too-large"``), and hands the answer to the browser with ``route.fulfill``,
its ``Set-Cookie`` headers for Chromium to keep or refuse as its own (a redirect's
hops, which Chromium never sees, by its rules restated in
:mod:`robotgate.integrations.browser_network.cookies`).  The floor and those rules
live in :mod:`robotgate.integrations.browser_network`.  A request robots.txt forbids is aborted with
``"blockedbyclient"``: ``page.goto`` raises, an image stays empty, and
``await gate.decide(url)`` says why.

- Only what the caller asks (``page.goto``) is **input**; every other request is a
  **pointer** of the document that made it (its frame's, a parent's for a frame with
  no document yet, a popup's opener's; a public page's when that cannot be told),
  refused when it leads from a public page into a private address, before anything
  (the target's robots.txt included) is sent.  :func:`attach` refuses a context whose
  browser has a network of its own (see :func:`launch_options`), naming what to set.
- A **navigation** (a document request) takes a full request turn
  (:class:`~robotgate.politeness.request_turn.RequestTurn`): robots.txt's verdict, the
  server's turn (the delay, the site's Crawl-delay and Request-rate, the caps, a fleet
  slot), the gate's headers, and the answer's status and ``Retry-After`` teach the
  server's back-off.
- A **script-made request** (fetch, XHR, EventSource, a beacon) takes a full turn too.
- A **markup subresource** (image, script, style, font, media) takes an unpaced
  request turn: judged by robots.txt the same way, holding one of the server's cap
  slots (shared with ``gate.fetch`` and every other path) while in flight, waiting
  while the server rests after a 429 or 503, and its own 429 or 503 teaches the
  back-off; it is not held to the delay (a page must be able to load), and
  ``attach(..., pace_subresources=True)`` gives each one a full request turn instead.
- **Redirects** are followed here, hop by hop, through the gate's one exchange
  (:mod:`robotgate.politeness.exchange`), each hop judged (its target by
  robots.txt, and a public site's hop into a private address refused) before it is
  sent; the browser gets the last answer as the answer to the URL it asked for, so
  ``page.url`` keeps that URL.  (Playwright does not route the hops of a redirect the
  browser follows itself: they would go out unchecked.)  Each hop is the one
  :func:`~robotgate.policy.redirect_hop.next_hop` gives (the Fetch standard's method
  and body, Authorization off another origin), with the context's cookies for its own
  URL that Chromium would send there (``SameSite``, the credentials mode).  A
  script's request (fetch, XHR, EventSource, a beacon) is not followed to another origin,
  and fails: Chromium would make it a CORS request there (a preflight,
  cookies by its credentials mode, an answer the page may not read), none of which a
  route handing the page the answer as its first URL's can keep.  The client would look a
  hop's host up again, and might find a private address there (DNS rebinding): a
  hop from a public site goes to the address its check found public, ``http`` and
  ``https`` alike (the Host header and the context's cookies for the name kept; the
  TLS server name and the certificate's check are the host's too, so a
  certificate is still checked for the name), and a context that ignores
  certificate errors is held to the address too; see :func:`~._follow.pinned`).
- The gate's ``User-Agent`` and ``From`` go on every request; robots.txt is matched
  against ``gate.robots_agent``, whatever User-Agent the browser would send.
- robots.txt is fetched by the gate's own client, once per origin, shared with every
  other path (``gate.fetch``, httpx, Scrapy, other processes through the store), through
  the proxy the pages go through: the one given to ``attach(..., proxy=...)`` (the
  browser's own is the black hole), bypassed for the hosts its ``bypass`` names.
- An attached page's ``close`` returns once the page is closed: Chromium can leave a
  page open whose close met a navigation's commit (a refused navigation commits its
  error page), and the close is then asked again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

try:  # the client comes with an extra: say which, not a bare ModuleNotFoundError
    import playwright.async_api  # noqa: F401
except ImportError as _exc:
    raise ImportError(f"{__name__} needs Playwright: pip install 'robotgate[playwright]'") from _exc

import aiohttp
from playwright.async_api import (
    BrowserContext,
    Frame,
    Page,
    ProxySettings,
    Request,
    Response,
    Route,
)
from playwright.async_api import Error as PlaywrightError

from ..decision import Decision
from ..errors import BodyTooLarge, Disallowed, GateClosed, ProxyFailed, TooManyRedirects
from ..gate.gate import RobotGate
from ..policy.hops import Address
from ..policy.provenance import INPUT, Provenance, pointer_of
from ..politeness.exchange import Answer, NextHop
from ..politeness.permits import Permit
from ..politeness.request_turn import RequestTurn
from ..urls import InvalidURL, redact
from ._follow import MAX_REDIRECTS, lower
from ._hops import resolve
from .browser_network.cookies import kept_cookies, same_origin, same_site, sent_cookies
from .browser_network.floor import (
    BLACK_HOLE,
    LAUNCH_ARGS,
    UnsafeBrowser,
    checked_proxy,
    launch_options,
    preloading_off,
    refuse_unfloored,
    via,
)
from .browser_network.sender import MAX_BODY, RouteClient, browser_headers, route_client

__all__ = ["BLACK_HOLE", "LAUNCH_ARGS", "MAX_REDIRECTS", "MAX_SUBRESOURCES", "Attachment",
           "Document", "UnsafeBrowser", "attach", "launch_options", "preloading_off"]

log = logging.getLogger(__name__)

_ALL = "**/*"
#: The requests a page's script makes (``Request.resource_type``): each takes a full
#: request turn, held to its server's delay; a type Playwright does not name is one too.
_MARKUP = frozenset({"image", "media", "font", "script", "stylesheet", "texttrack",
                     "manifest", "prefetch"})
# How deep a chain of popups (a popup's popup...) an attached page's route follows.
_MAX_POPUPS = 50
# Chromium can acknowledge a page's close without closing it when the close meets a
# navigation's commit (a refused navigation commits Chromium's error page), and Playwright
# then waits for ever: the close is asked again, this often, this
# many times, then awaited.
_CLOSE_AGAIN_AFTER = 1.0
_CLOSE_AGAIN = 5
#: Subresource requests one document may make before the rest are refused.
MAX_SUBRESOURCES = 1000
TOO_MANY = "too-many-subresources"
#: The outcome of a request whose answer's body was longer than ``attach``'s ``max_bytes``.
TOO_LARGE = BodyTooLarge.OUTCOME


@dataclass(frozen=True)
class Document:
    """Where a page's current document came from (:meth:`Attachment.document`)."""

    #: The URL the browser asked for, which it shows as ``page.url``.
    url: str
    #: The URL its answer came from, after the redirects the gate followed.
    came_from: str


@dataclass
class Attachment:
    """What :func:`attach` returns: the route on ``target``, until :meth:`detach`."""

    gate: RobotGate
    target: BrowserContext | Page
    #: Whether markup subresources (images, styles, fonts, scripts, media) take a full
    #: request turn too (the delay), as navigations and script-made requests do.
    pace_subresources: bool = False
    #: Called with the browser's request and the refusal (its URL: the hop refused, its
    #: ``decision``: why) for each request aborted as disallowed.
    on_refused: Callable[[Request, Disallowed], object] | None = None
    #: Subresource requests one document may make; the rest are refused.
    max_subresources: int = MAX_SUBRESOURCES
    #: The proxy the context's requests go through, which robots.txt is asked through
    #: too (None: direct).
    proxy: ProxySettings | None = None
    #: Who pointed at a URL the caller sends a page to (``page.goto``), given the page
    #: and the URL: None (or no callable) makes it the caller's input.  A crawl of
    #: links (crawl4ai's deep crawl) tells the page each link was found on this way.
    navigation_provenance: Callable[[Page, str], Provenance | None] | None = None
    #: The longest body (decoded) an answer may have to reach the browser (None: no
    #: limit); a longer one is refused, read no further.
    max_bytes: int | None = MAX_BODY
    # Per page: the URLs the caller asked it to go to (``page.goto``), not yet requested.
    _asked: dict[Page, list[str]] = field(default_factory=dict, repr=False)
    # Per page: the subresource requests of its current document.
    _made: dict[Page, int] = field(default_factory=dict, repr=False)
    # Per page: where its current document came from.
    _documents: dict[Page, Document] = field(default_factory=dict, repr=False)
    # The browser's requests held here until the gate's answer (their turn, robots.txt).
    # Chromium sends a held keepalive request (a beacon, a ping, a keepalive fetch) itself,
    # unrouted, when its route goes away: each is aborted before that can happen.
    _held: set[Route] = field(default_factory=set, repr=False)
    _closing: bool = field(default=False, repr=False)
    # The pages whose work is over until the caller sends them on (park): every request
    # of theirs is aborted (a requestAnimationFrame loop's, a worker's, a promise's).
    _parked: set[Page] = field(default_factory=set, repr=False)
    # The parked pages the caller is sending on (page.goto): their top-level navigation
    # goes, the rest of their requests (the old document's) not until it commits.
    _leaving: set[Page] = field(default_factory=set, repr=False)
    # The browser's requests being sent by the request client, each done when answered.
    _sending: dict[Route, asyncio.Future[None]] = field(default_factory=dict, repr=False)
    # The request client the browser's requests are sent with (attach makes it): the
    # context's own (``context.request``) goes through the black hole.
    _route_client: RouteClient | None = field(default=None, repr=False)

    @property
    def client(self) -> RouteClient:
        """The request client the browser's requests are sent with: the gate's (aiohttp),
        through :attr:`proxy`; the cookies are the context's (none kept in the client)."""
        if self._route_client is None:
            raise GateClosed("the attachment is detached")
        return self._route_client

    @property
    def context(self) -> BrowserContext:
        """The browser context whose requests are routed (its cookies too)."""
        target = self.target
        return target if isinstance(target, BrowserContext) else target.context

    async def detach(self) -> None:
        """Stop routing ``target``'s requests through the gate: the requests still
        waiting for the gate's answer are aborted first, so that none leaves unrouted."""
        await self._abort_held()
        with suppress(PlaywrightError):  # a context closed meanwhile has no route left
            await self.context.unroute(_ALL, self._route)
        await self._dispose_client()
        if isinstance(self.target, BrowserContext):
            self.target.remove_listener("page", self._watch)
        for page in list(self._asked):
            with suppress(AttributeError):
                del page.goto  # the class's own again
            with suppress(AttributeError):
                del page.close
            with suppress(AttributeError):
                del page.set_content
        self._asked.clear()
        self._made.clear()
        self._documents.clear()
        self._parked.clear()
        self._leaving.clear()

    async def _abort_held(self) -> None:
        """Abort every request held here and every one that comes from now on."""
        self._closing = True
        held, self._held = list(self._held), set()
        for route in held:
            await _finish(route.abort("blockedbyclient"))

    async def _target_closed(self, page: Page) -> None:
        """An attached page closed: its route and request client go (its popups'
        requests, unrouted, reach nothing)."""
        await self.detach()

    async def _dispose_client(self) -> None:
        client, self._route_client = self._route_client, None
        if client is not None:
            await client.close()

    def _guard_close(self) -> None:
        """Closing the context first aborts the requests held here (the context's own
        ``close``, as the caller calls it), and ends the request client."""
        context = self.context
        close = context.close

        async def close_held_first(**options: Any) -> None:
            await self._abort_held()
            await self._dispose_client()
            await close(**options)

        close_held_first.__doc__ = close.__doc__
        context.close = close_held_first  # type: ignore[method-assign]

    # -- who asked for a request -----------------------------------------------------

    async def _ours(self, page: Page) -> bool:
        """Whether ``page``'s requests are routed here: every page of an attached
        context; of an attached page, it and the popups it opened (and theirs)."""
        target = self.target
        if isinstance(target, BrowserContext) or page in self._asked:
            return True
        opener: Page | None = page
        for _ in range(_MAX_POPUPS):
            opener = await opener.opener() if opener is not None else None
            if opener is None:
                return False
            if opener is target or opener in self._asked:
                self._watch(page)
                return True
        return False

    def _watch(self, page: Page) -> None:
        """Note the URLs the caller sends ``page`` to: only those are input."""
        if page in self._asked:
            return
        goto = page.goto
        asked = self._asked.setdefault(page, [])
        page.on("close", self._forget)

        async def caller_goto(url: str, **options: Any) -> Response | None:
            if page in self._parked:
                self._leaving.add(page)  # sent on: its requests go once it commits
            key = _same(url)
            asked.append(key)
            try:
                return await goto(url, **options)
            finally:
                self._unpark(page)
                with suppress(ValueError):
                    asked.remove(key)  # not requested (it failed before, or was refused)

        caller_goto.__doc__ = goto.__doc__
        page.goto = caller_goto  # type: ignore[method-assign]
        close = page.close

        async def close_surely(**options: Any) -> None:
            await _close_surely(page, close(**options), again=not options.get(
                "run_before_unload"))

        close_surely.__doc__ = close.__doc__
        page.close = close_surely  # type: ignore[method-assign]
        set_content = page.set_content

        async def caller_set_content(html: str, **options: Any) -> None:
            self._unpark(page)  # the caller's document (the same one): its requests go
            await set_content(html, **options)

        caller_set_content.__doc__ = set_content.__doc__
        page.set_content = caller_set_content  # type: ignore[method-assign]
        page.on("framenavigated", lambda frame: self._committed(page, frame))

    def _forget(self, page: Page) -> None:
        self._asked.pop(page, None)
        self._made.pop(page, None)
        self._documents.pop(page, None)
        self._unpark(page)
        self._drop_held(page)

    def _drop_held(self, page: Page) -> None:
        """A closed page's requests still waiting for their turn (its timers', a beacon
        as it went) are not sent: each fails as its turn comes."""
        self._held = {route for route in self._held if _page_of(route.request) is not page}

    async def settle(self, page: Page) -> None:
        """Return once no request ``page`` made so far can reach a server any more: those
        waiting for their turn are not sent, those being sent have been answered.  For
        a page whose work is over, closed or kept for more (a crawl's run ends so:
        nothing it asked of its page leaves after it)."""
        self._drop_held(page)
        sending = [sent for route, sent in self._sending.items()
                   if _page_of(route.request) is page]
        if sending:
            await asyncio.wait(sending)

    async def park(self, page: Page) -> None:
        """Keep ``page`` from the network until the caller sends it on (``page.goto``,
        once its new document commits; ``page.set_content``): every request it makes
        from now on is aborted, and this returns once none it made before can reach a
        server (:meth:`settle`).  For a page kept for more whose document may still run
        (a crawl's tab between runs)."""
        if not page.is_closed():
            self._parked.add(page)
        await self.settle(page)

    def _unpark(self, page: Page) -> None:
        self._parked.discard(page)
        self._leaving.discard(page)

    def _committed(self, page: Page, frame: Frame) -> None:
        """A frame of ``page`` navigated: a parked page the caller sent on has its new
        document (whose requests Chromium makes after the commit), and the old one is
        gone."""
        if page in self._leaving and frame.parent_frame is None:
            self._unpark(page)

    async def _parked_page(self, request: Request) -> bool:
        """Whether ``request`` is of a parked page (but the navigation the caller sends
        it on with), or of a popup one opened (which is parked with it)."""
        page = _page_of(request)
        if page is None or page in self._parked:
            return page is not None and not (
                page in self._leaving and request.is_navigation_request()
                and request.frame.parent_frame is None)
        if await page.opener() in self._parked:  # Playwright knows it: no round trip
            self._parked.add(page)
            return True
        return False

    def document(self, page: Page) -> Document | None:
        """Where ``page``'s current document came from: the URL the browser asked for
        and the one the gate's redirects ended at (None: no navigation of the page has
        been answered through the gate yet)."""
        return self._documents.get(page)

    async def _provenance(self, request: Request) -> Provenance:
        """Input when the caller asked for this navigation (``page.goto``), else a
        pointer of the document that made the request.  A request whose document
        cannot be told (a worker's, a frame not attached yet) counts as a public
        page's pointer: it is never let into a private network on a guess."""
        try:
            frame = request.frame
        except PlaywrightError:
            return pointer_of("")
        page = frame.page
        if request.is_navigation_request() and frame.parent_frame is None:
            asked = self._asked.get(page)
            if asked and request.redirected_from is None:
                key = _same(request.url)
                if key in asked:
                    asked.remove(key)
                    told = self.navigation_provenance
                    pointer = None if told is None else told(page, request.url)
                    return INPUT if pointer is None else pointer
        # The document that made the request: a frame's, or, for a frame with no
        # document of its own yet (about:blank, srcdoc, data:), its parent's.
        document: Frame | None = frame
        while document is not None:
            if document.url.startswith(("http://", "https://")):
                return pointer_of(document.url)
            document = document.parent_frame
        opener = await page.opener()  # a popup's first navigation: its opener's
        if opener is not None and opener.url.startswith(("http://", "https://")):
            return pointer_of(opener.url)
        return pointer_of("")

    def _new_document(self, request: Request, came_from: str) -> None:
        """A navigation was answered (by ``came_from``, after the redirects): a page's
        new document counts its own subresources, and where it came from is noted."""
        with suppress(PlaywrightError):
            frame = request.frame
            if frame.parent_frame is None:
                self._made[frame.page] = 0
                self._documents[frame.page] = Document(request.url, came_from)

    def _too_many(self, request: Request) -> Disallowed | None:
        """The refusal of a subresource past its document's cap (None: within it)."""
        try:
            page = request.frame.page
        except PlaywrightError:
            return None  # a worker's request: its page is not known; the gate's caps hold
        made = self._made.get(page, 0) + 1
        self._made[page] = made
        if made <= self.max_subresources:
            return None
        reason = (f"the page made more than {self.max_subresources} subresource requests "
                  f"(attach(..., max_subresources=...))")
        return Disallowed(request.url, Decision(False, reason, outcome=TOO_MANY))

    # -- one browser request ---------------------------------------------------------

    async def _route(self, route: Route) -> None:
        """Send one browser request through the gate and hand its answer to the browser;
        whatever happens, the route is finished (an unfinished one hangs the page)."""
        request = route.request
        if not request.url.startswith(("http://", "https://")):
            await route.fallback()  # not the network's (a data: or blob: URL never is)
            return
        try:
            ours = await self._ours(request.frame.page)
        except PlaywrightError:
            ours = True  # a worker's request, or its page gone: judged here
        if not ours:
            await _finish(route.fallback())  # another page of the context: not attached
            return
        if self._closing or (self._parked and await self._parked_page(request)):
            await _finish(route.abort("blockedbyclient"))
            return
        navigation = request.is_navigation_request()
        paced = (navigation or self.pace_subresources
                 or request.resource_type not in _MARKUP)
        self._held.add(route)
        try:
            provenance = await self._provenance(request)
            if not navigation and (refused := self._too_many(request)) is not None:
                raise refused
            headers = lower(request.headers)  # Playwright builds them anew each time asked
            scope = _cookie_scope(request, provenance, headers.get("cookie"))
            if not scope.may_carry_cookies(request.url):
                headers.pop("cookie", None)
            sender = _Sender(self, route, request.method, headers,
                             request.post_data_buffer,
                             navigation or request.resource_type in _MARKUP, scope)
            client = self.client
            done = await self.gate.exchange(
                sender, request.url, provenance, resolve=resolve, max_redirects=MAX_REDIRECTS,
                paced=paced, via=via(self.proxy, request.url))
            response = done.response
            try:
                body = await client.read(response, done.url)
            except BodyTooLarge as large:
                # Playwright hands the browser a whole body only: refused, as the gate
                # refuses a request, and told why (on_refused, the log).
                raise Disallowed(done.url, Decision(False, _too_large(large.limit),
                                                    outcome=TOO_LARGE)) from None
            finally:
                done.turn.release()  # the client has read the answer
            setting = response.headers.getall("set-cookie", [])
            if setting and sender.hops:
                # Chromium sees no redirect: an answer of another URL than the one it
                # asked for has its cookies kept here, for its own URL.
                await self._keep_cookies(done.url, setting, sender.scope)
            if navigation:
                self._new_document(request, done.url)
        except Disallowed as refused:
            log.info("refused %s: %s", refused.url, refused.decision.reason)
            try:
                if self.on_refused is not None:
                    self.on_refused(request, refused)  # told before the page hears of it
            finally:
                await _finish(route.abort("blockedbyclient"))
            return
        except ProxyFailed as proxy_failed:
            # The crawler's set-up failed, not the site: the page's request fails as a
            # proxy's would in Chromium alone, and nothing is kept of the site.
            log.warning("%s", proxy_failed)
            await _finish(route.abort("connectionfailed"))
            return
        except (GateClosed, InvalidURL, TooManyRedirects, PlaywrightError, aiohttp.ClientError,
                asyncio.TimeoutError) as failed:
            log.info("failed %s: %s", request.url, failed)
            await _finish(route.abort("failed"))
            return
        except BaseException:
            await _finish(route.abort("failed"))
            raise
        finally:
            held = route in self._held
            self._held.discard(route)
        if not held:
            return  # aborted while the gate answered: the context is closing
        # The answer to the URL the browser asked for goes with its Set-Cookie headers:
        # Chromium keeps them as it would its own (Domain, SameSite, Secure, prefixes).
        # A redirect that ends here (to no usable http(s) URL) keeps no Location: the
        # browser would follow it unrouted.
        headers = {name: value for name, value in browser_headers(response).items()
                   if name != "set-cookie" and not (name == "location"
                                                    and 300 <= response.status < 400)}
        if setting and not sender.hops:
            headers["set-cookie"] = "\n".join(setting)
        await _finish(route.fulfill(status=response.status, headers=headers, body=body))

    async def _fetch(self, url: str, method: str, headers: dict[str, str],
                     body: bytes | None, checked: Sequence[Address], first_url: str,
                     slot: Permit | None = None) -> aiohttp.ClientResponse:
        """Send one request (its Cookie header as given); a public page's pointer
        (``checked``: the addresses its check found public) goes to the first of them;
        ``slot``: its fleet slot, looked at last as its headers go."""
        return await self.client.send(url, method, headers, body, checked,
                                      first_url=first_url, slot=slot)

    async def _keep_cookies(self, url: str, setting: list[str], scope: _CookieScope) -> None:
        """Keep in the context the cookies an answer to ``url`` sets, by Chromium's rules
        (an answer Chromium never sees: a redirect's hop, or one after a hop)."""
        if not scope.top_level and scope.cross_site(url):
            return  # a third party's: Chromium blocks its cookies
        kept = kept_cookies(url, setting, cross_site=scope.cross_site(url),
                            top_level_navigation=scope.top_level)
        context = self.context
        for name, domain, path in kept.delete:
            await context.clear_cookies(name=name, domain=domain, path=path)
        if kept.add:
            await context.add_cookies(kept.add)

    async def _cookie_header(self, url: str, scope: _CookieScope) -> str:
        """The Cookie header a hop to ``url`` carries: the context's cookies for it, by
        the rules Chromium sends them by (SameSite, the credentials mode)."""
        context = self.context
        if scope.omitted is None:
            # A script's request whose first URL Chromium sent none of the cookies it
            # would send: its credentials mode is "omit".
            scope.omitted = scope.script and not scope.chromium_cookie and bool(sent_cookies(
                await context.cookies(scope.first_url), scope.first_url,
                cross_site=scope.cross_site(scope.first_url), top_level_navigation=False))
        if scope.omitted or not scope.may_carry_cookies(url):
            return ""
        return sent_cookies(await context.cookies(url), url, cross_site=scope.cross_site(url),
                            top_level_navigation=scope.top_level)


@dataclass
class _CookieScope:
    """Where one browser request stands for cookies: what Chromium's rules for the hops
    it never sees need.  ``initiator``: the URL of the document that made the request
    (None: the caller's ``page.goto``); ``top_url``: its page's top document's."""

    first_url: str
    chromium_cookie: str | None
    top_level: bool
    script: bool
    initiator: str | None
    top_url: str | None
    #: Whether its credentials mode is "omit" (None: not known yet).
    omitted: bool | None = None
    #: Whether a URL of its redirect chain so far was cross-site.
    crossed: bool = False

    def may_carry_cookies(self, url: str) -> bool:
        """Whether a request to ``url`` in this chain may carry cookies at all, where
        Chromium's Cookie header as the route is handed it still has them: no
        third-party cookie (a cross-site request but a top-level navigation), and none
        on a script's request to another origin (its credentials mode, "same-origin"
        by default, cannot be told from "include": the one that gives less)."""
        if not self.top_level and self.cross_site(url):
            return False
        return not (self.script and self.initiator is not None
                    and not same_origin(self.initiator, url))

    def cross_site(self, url: str) -> bool:
        """Whether a request to ``url`` in this chain is cross-site (a chain that was
        stays so, as Chromium has it)."""
        here = False
        if self.initiator is not None and not same_site(self.initiator, url):
            here = True
        if not self.top_level and self.top_url is not None and not same_site(self.top_url, url):
            here = True
        self.crossed = self.crossed or here
        return self.crossed


def _cookie_scope(request: Request, provenance: Provenance,
                  chromium_cookie: str | None) -> _CookieScope:
    top_level, top_url = request.is_navigation_request(), None
    try:
        frame = request.frame
        top_level = top_level and frame.parent_frame is None
        top_url = frame.page.main_frame.url
    except PlaywrightError:
        pass  # a worker's request: its document is not known
    if top_url is not None and not top_url.startswith(("http://", "https://")):
        top_url = None
    initiator = provenance.page or None
    return _CookieScope(request.url, chromium_cookie, top_level,
                        not request.is_navigation_request()
                        and request.resource_type not in _MARKUP,
                        initiator, top_url)


class _Sender:
    """One browser request sent hop by hop through the context's request client (the
    exchange's sender): the method, headers and body of the hop being sent.
    ``leaves_origin``: whether a redirect may take it to another origin (a navigation's
    or a markup subresource's may)."""

    def __init__(self, attachment: Attachment, route: Route, method: str,
                 headers: dict[str, str], body: bytes | None, leaves_origin: bool,
                 scope: _CookieScope) -> None:
        self.attachment = attachment
        self.scope = scope
        #: The redirects followed so far.
        self.hops = 0
        self.route = route
        self.method = method
        self.headers = headers
        self.body = body
        self.leaves_origin = leaves_origin
        #: The other origin a redirect took a script's request to (not sent there).
        self.crossed: str | None = None
        self.url = ""
        # The Authorization the last answer (a 401 Basic challenge) is answered with, by
        # the next send (in a turn of its own); None: not answered.
        self._answering: str | None = None

    def prepare(self, url: str) -> str:
        return url  # the browser's URL, sent as it is

    async def send(self, turn: RequestTurn) -> aiohttp.ClientResponse:
        if self.route not in self.attachment._held:
            # Aborted while it waited for its turn (the context is closing): not sent.
            raise PlaywrightError("the browser context is closing")
        if self.crossed is not None:
            # Judged as every hop is (robots.txt, the private-network rule), not sent.
            raise PlaywrightError(f"a script's request redirected to another origin "
                                  f"({redact(self.crossed)}) is not followed")
        self.url = turn.url
        headers = {**self.headers, **lower(turn.headers)}
        answering, self._answering = self._answering, None
        if answering is not None:
            headers["authorization"] = answering
        if self.hops:
            # Chromium computed the first URL's Cookie header (it came with the request);
            # a hop's, which it never sees, is computed here by its rules.
            headers.pop("cookie", None)
            cookie = await self.attachment._cookie_header(turn.url, self.scope)
            if cookie:
                headers["cookie"] = cookie
        sending = self.attachment._sending
        sent = sending[self.route] = asyncio.get_running_loop().create_future()
        try:
            response = await self.attachment._fetch(turn.url, self.method, headers, self.body,
                                                    turn.checked if turn.guard else (),
                                                    self.scope.first_url, turn.slot)
        finally:
            del sending[self.route]
            sent.set_result(None)
        self._answering = self.attachment.client.challenged(response, turn.url,
                                                            self.scope.first_url)
        return response

    def answer(self, response: aiohttp.ClientResponse) -> Answer:
        headers = response.headers
        return Answer(response.status, headers.get("retry-after"), headers.get("location"),
                      self._answering is not None)

    async def redirected(self, response: aiohttp.ClientResponse, hop: NextHop) -> None:
        setting = response.headers.getall("set-cookie", [])
        response.close()  # its body unread: the browser never sees it
        if setting:
            await self.attachment._keep_cookies(self.url, setting, self.scope)
        self.hops += 1
        if hop.leaves_origin and not self.leaves_origin:
            # A script's request (fetch, XHR, EventSource, a beacon) redirected to another
            # origin is a CORS request there: a preflight first unless it is a simple
            # one, cookies only if its credentials mode says so, and an answer the page
            # may read only if that origin allows it.  The route, which hands the page the
            # last answer as its first URL's, can keep none of it: the hop fails as it
            # would be sent, as a failed CORS check fails it in Chromium.
            self.crossed = hop.url
        self.method, self.headers, self.body = (hop.method, hop.headers(self.headers),
                                                hop.body(self.body))

    def drop(self, response: aiohttp.ClientResponse) -> None:
        response.close()


def _too_large(limit: int) -> str:
    return (f"the answer's body is longer than {limit:,} bytes (attach(..., max_bytes=...)): "
            "the browser was not handed it")


def _page_of(request: Request) -> Page | None:
    """The page that made ``request`` (None: a service worker's, or not known)."""
    try:
        return request.frame.page
    except PlaywrightError:
        return None


async def _finish(step: Awaitable[None]) -> None:
    """Abort or fulfill a route; a page closed meanwhile makes that fail, harmlessly."""
    with suppress(PlaywrightError):
        await step


async def _close_surely(page: Page, close: Awaitable[None], *, again: bool) -> None:
    """Await ``close`` (``page``'s own); when the page is still open after a while, ask
    Chromium to close its target again (see ``_CLOSE_AGAIN``)."""
    closing = asyncio.ensure_future(close)
    try:
        for _ in range(_CLOSE_AGAIN if again else 0):
            done, _ = await asyncio.wait({closing}, timeout=_CLOSE_AGAIN_AFTER)
            if done:
                break
            log.info("closing %s again: Chromium left it open", page.url)
            await _close_target(page)
        await closing
    finally:
        closing.cancel()


async def _close_target(page: Page) -> None:
    """Ask Chromium (over CDP) to close ``page``'s target; a browser that cannot be
    asked (not Chromium), or a page closed meanwhile, is left to its own close."""
    with suppress(PlaywrightError, asyncio.TimeoutError):
        session = await asyncio.wait_for(page.context.new_cdp_session(page), 5)
        try:
            info = await asyncio.wait_for(session.send("Target.getTargetInfo"), 5)
            await asyncio.wait_for(session.send(
                "Target.closeTarget", {"targetId": info["targetInfo"]["targetId"]}), 5)
        finally:
            with suppress(PlaywrightError, asyncio.TimeoutError):
                await asyncio.wait_for(session.detach(), 5)


def _same(url: str) -> str:
    """``url`` as near as the browser will request it, to know a ``page.goto`` by its
    request: scheme and host in lower case, no default port, a path, no fragment."""
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, {"http": 80, "https": 443}.get(scheme)) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))




async def attach(gate: RobotGate, target: BrowserContext | Page, *,
                 pace_subresources: bool = False,
                 on_refused: Callable[[Request, Disallowed], object] | None = None,
                 max_subresources: int = MAX_SUBRESOURCES,
                 proxy: ProxySettings | None = None,
                 navigation_provenance: Callable[[Page, str], Provenance | None] | None = None,
                 max_bytes: int | None = MAX_BODY,
                 ) -> Attachment:
    """Route every http(s) request of ``target`` (a BrowserContext, or a Page)
    through ``gate``; :meth:`Attachment.detach` (or closing the context) ends it.

    Only what the caller asks (``page.goto``) is input; every other request is a
    pointer of the document that made it, refused when it leads from a public page
    into a private address.  Navigations and the page's script-made requests (fetch,
    XHR, EventSource, beacons) take full request turns, held to the server's delay;
    markup subresources (images, styles, fonts, scripts, media) are judged and capped,
    wait while the server rests after a 429 or 503, and are not delayed, unless
    ``pace_subresources=True``.  A document's subresource requests past
    ``max_subresources`` are refused.  ``on_refused`` hears of each request aborted
    as disallowed, with the refusal's decision.  ``navigation_provenance(page, url)``
    says who pointed at a URL the caller sends a page to (None: the caller's input,
    as without it); :meth:`Attachment.document` tells where a page's document came
    from after the gate's redirects.  An answer whose body is longer than
    ``max_bytes`` (decoded; None: no limit) is refused, read no further, and
    ``on_refused`` hears it (outcome ``"body-too-large"``).

    The browser must have no network but the gate: launched with
    :func:`launch_options` (its proxy the black hole, loopback included, WebRTC held to
    it) and its context with ``service_workers="block"``.  The requests the route is
    given are sent by a request client of attach's own (the gate's aiohttp), through
    ``proxy`` (Playwright's
    proxy settings: the pages' proxy, which robots.txt is asked through too; None:
    direct), with the context's cookies, certificate errors setting and HTTP
    credentials.  ``context.request`` and ``page.request`` go through the black hole:
    they fail.

    Raises :class:`UnsafeBrowser` for a context whose requests past the route would
    reach anything (a switch missing, a context's own proxy: a request no route
    fulfils is tried against a loopback listener of attach's), naming the settings to
    use, and for a proxy robots.txt cannot be asked through (SOCKS).
    """
    context = target if isinstance(target, BrowserContext) else target.context
    proxied = checked_proxy(proxy)
    await refuse_unfloored(context, None if isinstance(target, BrowserContext) else target)
    attachment = Attachment(gate, target, pace_subresources, on_refused, max_subresources,
                            proxied, navigation_provenance, max_bytes)
    attachment._route_client = route_client(context, proxied, max_bytes)
    # The context's route, even for one page: Playwright routes a page's popups only
    # through its context (a page's own route would let them out unjudged).
    if isinstance(target, BrowserContext):
        for page in target.pages:
            attachment._watch(page)
        context.on("page", attachment._watch)
    else:
        attachment._watch(target)  # its popups once they make a request (_ours)
        target.once("close", attachment._target_closed)
    await context.route(_ALL, attachment._route)
    attachment._guard_close()
    # A context closed with its browser, not by its close: the client's session ends too.
    context.once("close", lambda _: attachment._dispose_client())
    return attachment
