"""robotgate for Playwright: every request a browser context makes goes through the gate.

>>> handle = await attach(gate, context)     # a BrowserContext, or one Page  # doctest: +SKIP
>>> await page.goto("https://example.com/")                                  # doctest: +SKIP
>>> await handle.detach()                                                    # doctest: +SKIP

:func:`attach` routes every http(s) request of ``context`` (``context.route``) to a
handler that sends it itself, through the context's own request client
(``context.request``: its cookies, proxy and certificates), and hands the answer to
the browser with ``route.fulfill``.  A request robots.txt forbids is aborted with
``"blockedbyclient"``: ``page.goto`` raises, an image stays empty, and
``await gate.decide(url)`` says why.

- A **navigation** (a document request) takes a full request turn
  (:class:`~robotgate.politeness.request_turn.RequestTurn`): robots.txt's verdict, the
  server's turn (the delay, the site's Crawl-delay and Request-rate, the caps, a fleet
  slot), the gate's headers, and the answer's status and ``Retry-After`` teach the
  server's back-off.
- A **subresource** (image, script, style, font, fetch/XHR, media) takes an unpaced
  request turn: judged by robots.txt the same way, holding one of the server's cap
  slots (shared with ``gate.fetch`` and every other path) while in flight, waiting
  while the server rests after a 429 or 503, and its own 429 or 503 teaches the
  back-off; it is not held to the delay (a page must be able to load), and
  ``attach(..., pace_subresources=True)`` gives each one a full request turn instead.
- **Redirects** are followed here, hop by hop, each hop judged (its target by
  robots.txt, and a public site's hop into a private address refused) before it is
  sent; the browser gets the last answer as the answer to the URL it asked for, so
  ``page.url`` keeps that URL.  (Playwright does not route the hops of a redirect the
  browser follows itself: they would go out unchecked.)  The client would look a
  hop's host up again, and might find a private address there (DNS rebinding): a
  hop from a public site goes to the address its check found public, ``http`` and
  ``https`` alike (the Host header and the context's cookies for the name kept; the
  client takes the TLS server name and the certificate's check from the Host
  header, so a certificate is still checked for the name, and a context that
  ignores certificate errors is held to the address too; see :func:`~._follow.pinned`).
- The gate's ``User-Agent`` and ``From`` go on every request; robots.txt is matched
  against ``gate.robots_agent``, whatever User-Agent the browser would send.
- robots.txt is fetched by the gate's own client, once per origin, shared with every
  other path (``gate.fetch``, httpx, Scrapy, other processes through the store).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from playwright.async_api import (
    APIRequestContext,
    APIResponse,
    BrowserContext,
    Page,
    Request,
    Route,
)
from playwright.async_api import Error as PlaywrightError

from ..errors import Disallowed, GateClosed
from ..gate.gate import RobotGate
from ..policy.hops import Address
from ..politeness.request_turn import RequestTurn, redirect_target, sent_in_turn
from ..urls import InvalidURL
from ._follow import MAX_REDIRECTS, lower, next_hop, pinned
from ._hops import resolve

if TYPE_CHECKING:
    from playwright._impl._api_structures import HttpHeader, SetCookieParam

__all__ = ["MAX_REDIRECTS", "Attachment", "attach"]

log = logging.getLogger(__name__)

_ALL = "**/*"
# Chromium asks for /favicon.ico of a page that names no icon, past every route (Playwright
# filters favicon requests out): a page is given an empty icon of its own instead, so that
# no request leaves unjudged.
_NO_DEFAULT_ICON = """
document.addEventListener("DOMContentLoaded", () => {
  if (!document.querySelector("link[rel~='icon']")) {
    const icon = document.createElement("link");
    icon.rel = "icon";
    icon.href = "data:,";
    (document.head || document.documentElement).appendChild(icon);
  }
});
"""


@dataclass
class Attachment:
    """What :func:`attach` returns: the route on ``target``, until :meth:`detach`."""

    gate: RobotGate
    target: BrowserContext | Page
    #: Whether subresources take a full request turn (the delay too), as navigations do.
    pace_subresources: bool = False
    #: Called with the browser's request and the refusal (its URL: the hop refused, its
    #: ``decision``: why) for each request aborted as disallowed.
    on_refused: Callable[[Request, Disallowed], object] | None = None

    @property
    def api(self) -> APIRequestContext:
        """The request client the browser's requests are sent with (the context's)."""
        target = self.target
        return target.request if isinstance(target, BrowserContext) else target.context.request

    @property
    def context(self) -> BrowserContext:
        """The browser context whose requests are routed (its cookies too)."""
        target = self.target
        return target if isinstance(target, BrowserContext) else target.context

    async def detach(self) -> None:
        """Stop routing ``target``'s requests through the gate (requests under way finish)."""
        await self.target.unroute(_ALL, self._route)

    # -- one browser request ---------------------------------------------------------

    async def _route(self, route: Route) -> None:
        """Send one browser request through the gate and hand its answer to the browser;
        whatever happens, the route is finished (an unfinished one hangs the page)."""
        request = route.request
        if not request.url.startswith(("http://", "https://")):
            await route.fallback()  # not the network's (a data: or blob: URL never is)
            return
        paced = self.pace_subresources or request.is_navigation_request()
        try:
            response = await self._send(request.url, request.method,
                                        lower(request.headers), request.post_data_buffer,
                                        paced)
        except Disallowed as refused:
            log.info("refused %s: %s", refused.url, refused.decision.reason)
            await _finish(route.abort("blockedbyclient"))
            if self.on_refused is not None:
                self.on_refused(request, refused)
            return
        except (GateClosed, InvalidURL, PlaywrightError) as failed:
            log.info("failed %s: %s", request.url, failed)
            await _finish(route.abort("failed"))
            return
        except BaseException:
            await _finish(route.abort("failed"))
            raise
        # The client stored the answers' cookies in the context already, each for the
        # URL that set it: the browser is not to set them again for the first URL.  A
        # redirect that ends here (to no usable http(s) URL) keeps no Location: the
        # browser would follow it unrouted.
        headers = {name: value for name, value in response.headers.items()
                   if name != "set-cookie" and not (name == "location"
                                                    and 300 <= response.status < 400)}
        await _finish(route.fulfill(response=response, headers=headers))
        await _finish(response.dispose())  # the client keeps each body until told

    async def _send(self, url: str, method: str, headers: dict[str, str],
                    body: bytes | None, paced: bool) -> APIResponse:
        """Send one request, following its redirects hop by hop, each hop judged."""
        came_from: str | None = None
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._turn(url, came_from, method, headers, body, paced)
            target = redirect_target(url, response.status, response.headers.get("location"))
            if target is None:
                return response
            await response.dispose()
            method, headers, body = next_hop(response.status, method, headers, body, url,
                                             target)
            came_from, url = url, target
        raise PlaywrightError(f"more than {MAX_REDIRECTS} redirects from {url}")

    async def _turn(self, url: str, came_from: str | None, method: str,
                    headers: dict[str, str], body: bytes | None, paced: bool) -> APIResponse:
        """One hop in its request turn: a page's, or a subresource's unpaced one
        (judged, holding one of the server's cap slots, not held to the delay)."""
        turn = self.gate.request_turn(url, came_from, resolve, paced=paced)

        async def send(turn: RequestTurn) -> APIResponse:
            return await self._fetch(url, method, {**headers, **lower(turn.headers)}, body,
                                     turn.checked if turn.guard else ())

        return await sent_in_turn(turn, send, _heard, drop=_dispose)

    async def _fetch(self, url: str, method: str, headers: dict[str, str],
                     body: bytes | None, checked: Sequence[Address] = ()) -> APIResponse:
        """Send one request; a public page's pointer (``checked``: the addresses its
        check found public) goes to the first of them."""
        # The request client names the server by the Host header in TLS too (SNI, the
        # certificate's check): an https pointer goes to the checked address as well,
        # its certificate still checked for the name (the only guard left in a context
        # that ignores certificate errors is the address).
        sent, host = pinned(url, checked, https=True)
        if host is None:
            return await self.api.fetch(url, method=method, headers=headers, data=body,
                                        max_redirects=0)
        # The client's cookie jar knows the request by its address: the name's cookies
        # go with it, and the answer's are kept for the name, none for the address
        # (another name served there must not be sent them).
        context = self.context
        headers = {**headers, "host": host}
        jar = "; ".join(f"{cookie.get('name', '')}={cookie.get('value', '')}"
                        for cookie in await context.cookies(url))
        if jar:
            mine = headers.get("cookie")
            headers["cookie"] = f"{mine}; {jar}" if mine else jar
        try:
            response = await self.api.fetch(sent, method=method, headers=headers, data=body,
                                            max_redirects=0)
        finally:
            await context.clear_cookies(domain=urlsplit(sent).hostname)
        kept = _set_cookies(url, response.headers_array)
        if kept:
            await context.add_cookies(kept)
        return response


def _heard(response: APIResponse) -> tuple[int, str | None]:
    return response.status, response.headers.get("retry-after")


async def _dispose(response: APIResponse) -> None:
    await response.dispose()


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


async def _finish(step: Awaitable[None]) -> None:
    """Abort or fulfill a route; a page closed meanwhile makes that fail, harmlessly."""
    with suppress(PlaywrightError):
        await step


async def attach(gate: RobotGate, target: BrowserContext | Page, *,
                 pace_subresources: bool = False,
                 on_refused: Callable[[Request, Disallowed], object] | None = None,
                 ) -> Attachment:
    """Route every http(s) request of ``target`` (a BrowserContext, or a Page)
    through ``gate``; :meth:`Attachment.detach` (or closing the context) ends it.

    ``pace_subresources=True`` holds images, scripts, styles and the page's own
    fetches to the server's delay too (each a full request turn, as a navigation);
    by default they are judged and capped, wait while the server rests after a 429
    or 503, and are not delayed.  ``on_refused`` hears of
    each request aborted as disallowed, with the refusal's decision.
    """
    attachment = Attachment(gate, target, pace_subresources, on_refused)
    await target.add_init_script(_NO_DEFAULT_ICON)
    await target.route(_ALL, attachment._route)
    return attachment
