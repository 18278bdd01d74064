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
client of its own (Playwright's, through ``attach``'s ``proxy``, with the context's
cookies read before and the answer's written back), and hands the answer to the
browser with ``route.fulfill``.  A request robots.txt forbids is aborted with
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
  URL.  A script's request (fetch, XHR, EventSource, a beacon) is not followed to
  another origin, and fails: Chromium would make it a CORS request there (a preflight,
  cookies by its credentials mode, an answer the page may not read), none of which a
  route handing the page the answer as its first URL's can keep.  The client would look a
  hop's host up again, and might find a private address there (DNS rebinding): a
  hop from a public site goes to the address its check found public, ``http`` and
  ``https`` alike (the Host header and the context's cookies for the name kept; the
  client takes the TLS server name and the certificate's check from the Host
  header, so a certificate is still checked for the name, and a context that
  ignores certificate errors is held to the address too; see :func:`~._follow.pinned`).
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
import json
import logging
import os
import socket
import time
from base64 import b64encode
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

try:  # the client comes with an extra: say which, not a bare ModuleNotFoundError
    import playwright.async_api  # noqa: F401
except ImportError as _exc:
    raise ImportError(f"{__name__} needs Playwright: pip install 'robotgate[playwright]'") from _exc

from playwright._impl._async_base import mapping
from playwright.async_api import (
    APIRequest,
    APIRequestContext,
    APIResponse,
    Browser,
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
from ..errors import Disallowed, Error, GateClosed, TooManyRedirects
from ..gate.aiohttp_client import Route as Via
from ..gate.gate import RobotGate
from ..policy.hops import Address
from ..policy.provenance import INPUT, Provenance, pointer_of
from ..politeness.exchange import Answer, NextHop
from ..politeness.request_turn import RequestTurn
from ..private_parts import PLAYWRIGHT_OPTIONS, PrivatePartMissing
from ..urls import InvalidURL, redact
from ._follow import MAX_REDIRECTS, lower, pinned
from ._hops import resolve

if TYPE_CHECKING:
    from playwright._impl._api_structures import HttpHeader, SetCookieParam

__all__ = ["BLACK_HOLE", "LAUNCH_ARGS", "MAX_REDIRECTS", "MAX_SUBRESOURCES", "Attachment",
           "Document", "UnsafeBrowser", "attach", "launch_options", "preloading_off"]

log = logging.getLogger(__name__)

_ALL = "**/*"
#: The requests a page's script makes (``Request.resource_type``): each takes a full
#: request turn, held to its server's delay; a type Playwright does not name is one too.
_MARKUP = frozenset({"image", "media", "font", "script", "stylesheet", "texttrack",
                     "manifest", "prefetch"})
#: The browser's proxy: nothing can listen on port 0 (binding it picks another port), so
#: a connection to it is refused at once, and no later listener can take it over (a
#: closed port could be bound again; a listener that never accepts would hang pages).
BLACK_HOLE = "http://127.0.0.1:0"
_LOOPBACK_TOO = "<-loopback>"  # Chromium sends loopback past its proxy unless told
_PROXIED_UDP_ONLY = "disable_non_proxied_udp"  # WebRTC: no UDP, TCP through the proxy only
#: Chromium's switches of the floor (:func:`launch_options` adds them): loopback through
#: the proxy too, and WebRTC only through the proxy.
LAUNCH_ARGS = [f"--proxy-bypass-list={_LOOPBACK_TOO}",
               f"--webrtc-ip-handling-policy={_PROXIED_UDP_ONLY}"]
# Switches that would give Chromium a proxy (or none) other than the black hole.
_OTHER_PROXY = ("--no-proxy-server", "--proxy-pac-url", "--proxy-auto-detect")
# How deep a chain of popups (a popup's popup...) an attached page's route follows.
_MAX_POPUPS = 50
# Chromium can acknowledge a page's close without closing it when the close meets a
# navigation's commit (a refused navigation commits Chromium's error page), and Playwright
# then waits for ever: the close is asked again, this often, this
# many times, then awaited.
_CLOSE_AGAIN_AFTER = 1.0
_CLOSE_AGAIN = 5
# How long attach's probe of the floor waits for a request to fail (under the floor it
# fails at once; a connection that reached the probe's listener hangs until then).
_PROBE_TIMEOUT = 3.0
#: Subresource requests one document may make before the rest are refused.
MAX_SUBRESOURCES = 1000
TOO_MANY = "too-many-subresources"


@dataclass(frozen=True)
class Document:
    """Where a page's current document came from (:meth:`Attachment.document`)."""

    #: The URL the browser asked for, which it shows as ``page.url``.
    url: str
    #: The URL its answer came from, after the redirects the gate followed.
    came_from: str


class UnsafeBrowser(Error, ValueError):
    """:func:`attach` was given a context whose browser can make requests no route
    sees, or a proxy robots.txt cannot be asked through; the message names the
    setting to use."""


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
    # The browser's requests being sent by the request client, each done when answered.
    _sending: dict[Route, asyncio.Future[None]] = field(default_factory=dict, repr=False)
    # The request client the browser's requests are sent with (attach makes it): the
    # context's own (``context.request``) goes through the black hole.
    _api: APIRequestContext | None = field(default=None, repr=False)

    @property
    def api(self) -> APIRequestContext:
        """The request client the browser's requests are sent with: Playwright's,
        through :attr:`proxy`, the context's cookies read and written by the handler."""
        if self._api is None:
            raise GateClosed("the attachment is detached")
        return self._api

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
        self._asked.clear()
        self._made.clear()
        self._documents.clear()

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
        api, self._api = self._api, None
        if api is not None:
            with suppress(PlaywrightError):
                await api.dispose()

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
            key = _same(url)
            asked.append(key)
            try:
                return await goto(url, **options)
            finally:
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

    def _forget(self, page: Page) -> None:
        self._asked.pop(page, None)
        self._made.pop(page, None)
        self._documents.pop(page, None)
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
        if self._closing:
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
            done = await self.gate.exchange(
                _Sender(self, route, request.method, lower(request.headers),
                        request.post_data_buffer,
                        navigation or request.resource_type in _MARKUP),
                request.url, provenance, resolve=resolve, max_redirects=MAX_REDIRECTS,
                paced=paced, via=_via(self.proxy, request.url))
            done.turn.release()  # the client has read the whole answer
            response = done.response
            if navigation:
                self._new_document(request, done.url)
        except Disallowed as refused:
            log.info("refused %s: %s", refused.url, refused.decision.reason)
            await _finish(route.abort("blockedbyclient"))
            if self.on_refused is not None:
                self.on_refused(request, refused)
            return
        except (GateClosed, InvalidURL, TooManyRedirects, PlaywrightError) as failed:
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
            await _finish(response.dispose())
            return  # aborted while the gate answered: the context is closing
        # The client stored the answers' cookies in the context already, each for the
        # URL that set it: the browser is not to set them again for the first URL.  A
        # redirect that ends here (to no usable http(s) URL) keeps no Location: the
        # browser would follow it unrouted.
        headers = {name: value for name, value in response.headers.items()
                   if name != "set-cookie" and not (name == "location"
                                                    and 300 <= response.status < 400)}
        await _finish(route.fulfill(response=response, headers=headers))
        await _finish(response.dispose())  # the client keeps each body until told

    async def _fetch(self, url: str, method: str, headers: dict[str, str],
                     body: bytes | None, checked: Sequence[Address] = ()) -> APIResponse:
        """Send one request with the context's cookies for ``url``, and keep the
        answer's in the context; a public page's pointer (``checked``: the addresses
        its check found public) goes to the first of them."""
        # The request client names the server by the Host header in TLS too (SNI, the
        # certificate's check): an https pointer goes to the checked address as well,
        # its certificate still checked for the name (the only guard left in a context
        # that ignores certificate errors is the address).
        sent, host = pinned(url, checked, https=True)
        if host is not None:
            headers = {**headers, "host": host}
        # The request client has a cookie jar of its own: the context's cookies for the
        # URL go with the request, in place of the Cookie header the browser handed the
        # route (its jar's for the first URL, which a hop to the same origin kept: sent
        # too, each cookie went twice), as the browser's own hop takes its jar's for
        # each URL; the answer's are kept in the context for the name, none in the
        # client (its jar would send them again, past the context's own expiry and
        # deletions).
        context = self.context
        jar = "; ".join(f"{cookie.get('name', '')}={cookie.get('value', '')}"
                        for cookie in await context.cookies(url))
        headers = {name: value for name, value in headers.items() if name != "cookie"}
        if jar:
            headers["cookie"] = jar
        api = self.api
        response = await api.fetch(sent, method=method, headers=headers, data=body,
                                   max_redirects=0)
        setting = [header for header in response.headers_array
                   if header["name"].lower() == "set-cookie"]
        if setting:
            await api.clear_cookies()
            kept = _set_cookies(url, setting)
            if kept:
                await context.add_cookies(kept)
        return response


class _Sender:
    """One browser request sent hop by hop through the context's request client (the
    exchange's sender): the method, headers and body of the hop being sent.
    ``leaves_origin``: whether a redirect may take it to another origin (a navigation's
    or a markup subresource's may)."""

    def __init__(self, attachment: Attachment, route: Route, method: str,
                 headers: dict[str, str], body: bytes | None, leaves_origin: bool) -> None:
        self.attachment = attachment
        self.route = route
        self.method = method
        self.headers = headers
        self.body = body
        self.leaves_origin = leaves_origin
        #: The other origin a redirect took a script's request to (not sent there).
        self.crossed: str | None = None
        self.url = ""

    def prepare(self, url: str) -> str:
        return url  # the browser's URL, sent as it is

    async def send(self, turn: RequestTurn) -> APIResponse:
        if self.route not in self.attachment._held:
            # Aborted while it waited for its turn (the context is closing): not sent.
            raise PlaywrightError("the browser context is closing")
        if self.crossed is not None:
            # Judged as every hop is (robots.txt, the private-network rule), not sent.
            raise PlaywrightError(f"a script's request redirected to another origin "
                                  f"({redact(self.crossed)}) is not followed")
        self.url = turn.url
        sending = self.attachment._sending
        sent = sending[self.route] = asyncio.get_running_loop().create_future()
        try:
            return await self.attachment._fetch(turn.url, self.method,
                                                {**self.headers, **lower(turn.headers)},
                                                self.body, turn.checked if turn.guard else ())
        finally:
            del sending[self.route]
            sent.set_result(None)

    def answer(self, response: APIResponse) -> Answer:
        headers = response.headers
        return Answer(response.status, headers.get("retry-after"), headers.get("location"))

    async def redirected(self, response: APIResponse, hop: NextHop) -> None:
        await response.dispose()
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

    def drop(self, response: APIResponse) -> Awaitable[None]:
        return response.dispose()


def _set_cookies(url: str, headers: list[HttpHeader]) -> list[SetCookieParam]:
    """The cookies an answer to ``url`` sets (its ``Set-Cookie`` headers), for the
    browser context to keep for ``url``'s host; one it cannot read is left out."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    default_path = parts.path.rsplit("/", 1)[0] or "/"  # RFC 6265 5.1.4
    found: list[SetCookieParam] = []
    for header in headers:
        if header["name"].lower() != "set-cookie":
            continue
        read: SimpleCookie = SimpleCookie()
        try:
            read.load(header["value"])
        except CookieError:
            continue
        for name, morsel in read.items():
            cookie: SetCookieParam = {"name": name, "value": morsel.value,
                                      "domain": morsel["domain"] or host,
                                      "path": morsel["path"] or default_path}
            try:
                if morsel["max-age"]:
                    cookie["expires"] = time.time() + int(morsel["max-age"])
                elif morsel["expires"]:
                    cookie["expires"] = parsedate_to_datetime(morsel["expires"]).timestamp()
            except (ValueError, TypeError, OverflowError):
                pass  # a session cookie, as a browser reads an unreadable date
            if morsel["httponly"]:
                cookie["httpOnly"] = True
            if morsel["secure"]:
                cookie["secure"] = True
            same_site = str(morsel["samesite"]).capitalize()
            if same_site in ("Strict", "Lax", "None"):
                cookie["sameSite"] = same_site  # type: ignore[typeddict-item]
            found.append(cookie)
    return found


def _checked_proxy(proxy: ProxySettings | None) -> ProxySettings | None:
    """``proxy``, the one the pages go through (None: direct); raises
    :class:`UnsafeBrowser` for one robots.txt cannot be asked through."""
    if proxy is None:
        return None
    scheme = _proxy_url(proxy).split("://", 1)[0].lower()
    if scheme not in ("http", "https"):
        raise UnsafeBrowser(
            f"robots.txt cannot be asked through the context's {scheme} proxy (the gate's "
            "client speaks to http and https proxies only): use an http(s) proxy")
    return proxy


def _proxy_url(proxy: ProxySettings) -> str:
    """The proxy's server as a URL (Playwright takes ``host:port`` as ``http://``)."""
    server = proxy.get("server", "").strip()
    return server if "://" in server else "http://" + server


def _via(proxy: ProxySettings | None, url: str) -> Via | None:
    """The route a request to ``url`` takes, robots.txt's too: through ``proxy`` unless
    its ``bypass`` names the host (the rule of Playwright's request client: a name ends
    with one of the comma-separated domains)."""
    if proxy is None:
        return None
    host = "." + (urlsplit(url).hostname or "")
    for domain in (proxy.get("bypass") or "").split(","):
        domain = domain.strip()
        if domain and host.endswith(domain if domain.startswith(".") else "." + domain):
            return None
    username = proxy.get("username")
    if not username:
        return Via(None, _proxy_url(proxy))
    token = b64encode(f"{username}:{proxy.get('password') or ''}".encode()).decode("ascii")
    return Via(None, _proxy_url(proxy), proxy_headers={"Proxy-Authorization": f"Basic {token}"})


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


def launch_options(*args: str) -> dict[str, Any]:
    """The keyword arguments that give Chromium no network but the gate, for
    ``playwright.chromium.launch`` and ``launch_persistent_context``: its proxy
    :data:`BLACK_HOLE` (loopback included) and WebRTC held to that proxy
    (:data:`LAUNCH_ARGS`), so that a request no route fulfils reaches nothing.  ``args``:
    Chromium switches of your own, put before the floor's (the last of a switch wins).
    The pages' own proxy, if any, goes to :func:`attach` (``proxy=``).

    >>> launch_options("--headless")["args"][0]
    '--headless'
    """
    return {"proxy": {"server": BLACK_HOLE}, "args": [*args, *LAUNCH_ARGS]}


def preloading_off(user_data_dir: str | os.PathLike[str]) -> Path:
    """Make ``user_data_dir`` a Chromium profile whose browser preloads nothing (its
    "Preload pages" setting off: no speculation rules' prefetch or prerender, no
    preconnect, no DNS prefetch), keeping its other preferences; returns its path, for
    ``playwright.chromium.launch_persistent_context``.  Not needed for the promises
    (under :func:`launch_options` what no route sees reaches nothing): it spares the
    black hole the attempts, and the system's resolver the names."""
    where = Path(user_data_dir)
    preferences = where / "Default" / "Preferences"
    preferences.parent.mkdir(parents=True, exist_ok=True)
    try:
        kept = json.loads(preferences.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = {}
    if not isinstance(kept, dict):
        kept = {}
    net = kept.get("net")
    kept["net"] = {**(net if isinstance(net, dict) else {}), "network_prediction_options": 2}
    preferences.write_text(json.dumps(kept), encoding="utf-8")
    return where


def _made_with(owner: Browser | BrowserContext) -> dict[str, Any]:
    """The options Playwright launched a browser or made a context with, kept on its
    implementation object (Playwright does not let them be read): PrivatePartMissing
    where it keeps them no more, rather than a check that sees no options."""
    options = getattr(getattr(owner, "_impl_obj", None), "_options", None)
    if not isinstance(options, dict):
        raise PrivatePartMissing(PLAYWRIGHT_OPTIONS)
    return options


async def _switches(context: BrowserContext) -> list[str]:
    """Chromium's switches that set its network (the proxy's, WebRTC's): as Playwright
    launched it (its proxy setting, then ``args``, as Playwright passes them), or, for
    a browser launched without one (connected over CDP, say), as Chromium tells
    (``Browser.getBrowserCommandLine``, answered only under ``--enable-automation``)."""
    browser = context.browser
    launched = _made_with(browser) if browser is not None else {}
    proxy = launched.get("proxy")
    if isinstance(proxy, dict):
        switches = [f"--proxy-server={_proxy_url(proxy)}"]  # type: ignore[arg-type]
        if proxy.get("bypass"):
            switches.append(f"--proxy-bypass-list={proxy['bypass']}")
        return switches + [str(arg) for arg in launched.get("args") or ()]
    if browser is not None:
        with suppress(PlaywrightError):
            session = await browser.new_browser_cdp_session()
            try:
                told = await session.send("Browser.getBrowserCommandLine")
            finally:
                await session.detach()
            return [str(arg) for arg in told.get("arguments", ())]
    return [str(arg) for arg in launched.get("args") or ()]


def _floor_missing(switches: Sequence[str]) -> list[str]:
    """What Chromium launched with ``switches`` lacks of the floor, each as the setting
    that gives it."""
    last: dict[str, str] = {}
    for switch in switches:
        name, _, value = switch.partition("=")
        last[name] = value.strip("'\"")
    missing = []
    server = last.get("--proxy-server")
    if server is None or _proxy_url({"server": server}) != BLACK_HOLE:
        missing.append(f"the proxy {BLACK_HOLE} (launch with **launch_options(); the pages' "
                       "own proxy goes to attach(..., proxy=...))")
    others = [name for name in _OTHER_PROXY if name in last]
    if others:
        missing.append("no " + " or ".join(others))
    if last.get("--proxy-bypass-list") != _LOOPBACK_TOO:
        missing.append(f"--proxy-bypass-list={_LOOPBACK_TOO} last (loopback through the "
                       "proxy too: launch_options() puts it there)")
    # (``--force-webrtc-ip-handling-policy``, a name seen in advice, does nothing: STUN
    # still reached a private address under it.)
    if last.get("--webrtc-ip-handling-policy") != _PROXIED_UDP_ONLY:
        missing.append(f"--webrtc-ip-handling-policy={_PROXIED_UDP_ONLY} last "
                       "(WebRTC through the proxy only: launch_options() puts it there)")
    return missing


async def _reaches(context: BrowserContext, page: Page | None) -> bool:
    """Whether a request of ``context`` that no route fulfils reaches anything (the
    floor is not in place, whatever the switches say: a context's own
    ``new_context(proxy=...)``, which Playwright does not let be read, a policy): one
    made through the DevTools protocol from ``page`` (else the context's first page, or
    a new one) to a listener on loopback must fail to connect to the proxy.  (No page
    is opened when there is one: crawlee takes a page it did not open for its own.)"""
    probe = page or next(iter(context.pages), None)
    opened = probe is None
    if probe is None:
        probe = await context.new_page()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        try:
            session = await context.new_cdp_session(probe)
            try:
                frame = (await session.send("Page.getFrameTree"))["frameTree"]["frame"]["id"]
                # Under the floor this fails at once; a connection that reached the
                # listener is never answered, and fails by the timeout.
                loaded = await asyncio.wait_for(session.send("Network.loadNetworkResource", {
                    "frameId": frame, "url": f"http://127.0.0.1:{listener.getsockname()[1]}/",
                    "options": {"disableCache": True, "includeCredentials": False}}),
                    _PROBE_TIMEOUT)
            finally:
                with suppress(PlaywrightError):
                    await session.detach()
            failure = str(loaded.get("resource", {}).get("netErrorName"))
        except (PlaywrightError, asyncio.TimeoutError, KeyError):
            failure = ""  # it could not be told: as if it reached
        finally:
            if opened:
                await probe.close()
        try:
            listener.accept()[0].close()
        except BlockingIOError:
            return failure != "net::ERR_PROXY_CONNECTION_FAILED"
        return True


async def _refuse_unfloored(context: BrowserContext, page: Page | None) -> None:
    """Raise :class:`UnsafeBrowser` when a request of ``context`` no route fulfils
    would reach anything, naming the settings that close it (``page``: the one
    attached, if one is)."""
    missing = _floor_missing(await _switches(context))
    if _made_with(context).get("serviceWorkers") != "block":
        # A service worker's requests carry no document to judge them by.
        missing.append("service workers blocked (new_context or launch_persistent_context "
                       "with service_workers='block')")
    if not missing and await _reaches(context, page):
        missing.append(f"no proxy of the context's own (new_context(proxy=...)): the "
                       f"browser's is {BLACK_HOLE}, the pages' goes to attach(proxy=...)")
    if missing:
        raise UnsafeBrowser("the browser has a network of its own, past the gate: it needs "
                            + "; ".join(missing))


async def _request_client(context: BrowserContext,
                          proxy: ProxySettings | None) -> APIRequestContext:
    """A request client of Playwright's (the one that launched ``context``), through
    ``proxy``, with the context's certificate errors setting and HTTP credentials."""
    if context.browser is None:
        raise UnsafeBrowser("the browser context's Playwright cannot be found: attach a "
                            "context of a browser launched or connected by Playwright")
    launched, own = _made_with(context.browser), _made_with(context)
    browser = getattr(context.browser, "_impl_obj", None)
    driver = getattr(getattr(browser, "_browser_type", None), "_playwright", None)
    if driver is None:
        raise PrivatePartMissing(PLAYWRIGHT_OPTIONS)
    requests: APIRequest = mapping.from_impl(driver.request)
    return await requests.new_context(
        proxy=proxy,
        ignore_https_errors=bool(own.get("ignoreHTTPSErrors")
                                 or launched.get("ignore_https_errors")),
        http_credentials=own.get("httpCredentials") or launched.get("http_credentials"))


async def attach(gate: RobotGate, target: BrowserContext | Page, *,
                 pace_subresources: bool = False,
                 on_refused: Callable[[Request, Disallowed], object] | None = None,
                 max_subresources: int = MAX_SUBRESOURCES,
                 proxy: ProxySettings | None = None,
                 navigation_provenance: Callable[[Page, str], Provenance | None] | None = None,
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
    from after the gate's redirects.

    The browser must have no network but the gate: launched with
    :func:`launch_options` (its proxy the black hole, loopback included, WebRTC held to
    it) and its context with ``service_workers="block"``.  The requests the route is
    given are sent by a request client of attach's own, through ``proxy`` (Playwright's
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
    proxied = _checked_proxy(proxy)
    await _refuse_unfloored(context, None if isinstance(target, BrowserContext) else target)
    attachment = Attachment(gate, target, pace_subresources, on_refused, max_subresources,
                            proxied, navigation_provenance)
    attachment._api = await _request_client(context, proxied)
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
    return attachment
