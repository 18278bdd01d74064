"""robotgate for crawlee: an HTTP client that puts every request through the gate.

>>> crawler = BeautifulSoupCrawler(http_client=RobotGateHttpClient(gate))  # doctest: +SKIP

:class:`RobotGateHttpClient` implements crawlee's ``HttpClient`` interface
(``crawl``, ``send_request``, ``stream``) over the gate, so that an ``HttpCrawler``,
a ``BeautifulSoupCrawler`` or a ``ParselCrawler`` keeps robotgate's promises:

- each request, and each hop of a redirect, takes a full request turn
  (:class:`~robotgate.politeness.request_turn.RequestTurn`): robots.txt's verdict, a
  public site's hop into a private address refused, the server's turn (the delay,
  Crawl-delay, Request-rate, caps, fleet slots), the gate's ``User-Agent`` and
  ``From``, and what the answer's status and ``Retry-After`` teach;
- robots.txt is fetched by the gate's own client, once per origin, shared with every
  other path and process;
- a disallowed request is not sent: the crawler skips it (:class:`RobotsDisallowed`
  is crawlee's ``ContextPipelineInterruptedError``: no retry, no failure), the gate's
  events tell of it, and ``on_refused`` hears of it with the decision;
  ``send_request`` and ``stream`` raise it, a :class:`~robotgate.Disallowed`.

The requests are sent by ``inner``, a crawlee client that follows no redirects
(default: crawlee's own ``ImpitHttpClient(follow_redirects=False)``), so crawlee's
sessions, cookies, proxies and browser impersonation apply as without the gate; the
redirects are followed here, one turn per hop.  ``inner`` would look a hop's host up
again and might find a private address there (DNS rebinding): an ``http`` hop from a
public site goes to the address its check found public, with the Host header and the
session's cookies of the name; an ``https`` hop goes by its name, its certificate
binding it (see :func:`~._follow.pinned`).  crawlee 1.11's ``HttpxHttpClient``
cannot take another transport (it ignores ``transport=``), hence a client, not a
transport.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

from crawlee.errors import ContextPipelineInterruptedError
from crawlee.http_clients import HttpClient, HttpCrawlingResult, HttpResponse, ImpitHttpClient

from ..errors import Disallowed, Error
from ..politeness.request_turn import RequestTurn, redirect_target
from ._follow import MAX_REDIRECTS, lower, next_hop, pinned
from ._hops import resolve

if TYPE_CHECKING:
    from crawlee import Request
    from crawlee._types import HttpMethod, HttpPayload
    from crawlee.proxy_configuration import ProxyInfo
    from crawlee.sessions import Session
    from crawlee.statistics import Statistics

    from ..gate.gate import RobotGate

__all__ = ["RobotGateHttpClient", "RobotsDisallowed", "TooManyRedirects"]

log = logging.getLogger(__name__)


class RobotsDisallowed(Disallowed, ContextPipelineInterruptedError):
    """robots.txt forbids the URL (or a redirect's hop): a :class:`~robotgate.Disallowed`
    that crawlee's pipeline takes as "skip this request" (not retried, not failed)."""


class TooManyRedirects(Error):
    """A request was redirected more than :data:`MAX_REDIRECTS` times."""


class RobotGateHttpClient(HttpClient):
    """crawlee's HTTP client interface over ``gate`` (see the module).

    ``inner`` sends each hop and must follow no redirects itself (a hop it followed
    would not be judged); the default is ``ImpitHttpClient(follow_redirects=False)``.
    The gate is yours to open and close; ``inner`` is cleaned up with this client.
    """

    def __init__(self, gate: RobotGate, inner: HttpClient | None = None, *,
                 persist_cookies_per_session: bool = True,
                 on_refused: Callable[[str, Disallowed], object] | None = None) -> None:
        super().__init__(persist_cookies_per_session=persist_cookies_per_session)
        self.gate = gate
        #: Called with the URL asked for and the refusal (its ``url``: the hop refused,
        #: its ``decision``: why) for each request robots.txt or a hop rule refuses.
        self.on_refused = on_refused
        self.inner = inner if inner is not None else ImpitHttpClient(
            persist_cookies_per_session=persist_cookies_per_session, follow_redirects=False)
        self._entered_inner = False  # whether this client entered inner (then it exits it)

    async def crawl(self, request: Request, *, session: Session | None = None,
                    proxy_info: ProxyInfo | None = None, statistics: Statistics | None = None,
                    timeout: timedelta | None = None) -> HttpCrawlingResult:
        """Fetch ``request`` for a crawler: a disallowed one is skipped, not retried."""
        url, response = await self._send(request.url, request.method, request.headers,
                                         request.payload, session, proxy_info, timeout)
        if statistics is not None:
            statistics.register_status_code(response.status_code)
        request.loaded_url = url
        return HttpCrawlingResult(http_response=response)

    async def send_request(self, url: str, *, method: HttpMethod = "GET",
                           headers: Mapping[str, str] | None = None,
                           payload: HttpPayload | None = None, session: Session | None = None,
                           proxy_info: ProxyInfo | None = None,
                           timeout: timedelta | None = None) -> HttpResponse:
        """Send one request (``context.send_request`` in a handler), checked and paced."""
        return (await self._send(url, method, headers or {}, payload, session, proxy_info,
                                 timeout))[1]

    @asynccontextmanager
    async def stream(self, url: str, *, method: HttpMethod = "GET",
                     headers: Mapping[str, str] | None = None,
                     payload: HttpPayload | None = None, session: Session | None = None,
                     proxy_info: ProxyInfo | None = None,
                     timeout: timedelta | None = None) -> AsyncGenerator[HttpResponse]:
        """Stream one request's answer; the server's slot is held until the block exits."""
        sent = lower(headers or {})
        asked, came_from = url, None
        for _ in range(MAX_REDIRECTS + 1):
            async with AsyncExitStack() as stack:
                turn = self._turn(url, came_from)
                stack.callback(turn.release)
                await self._begin(turn, asked)
                to, hop_headers, hop_session = self._where(turn, url, sent, session)
                response = await stack.enter_async_context(self.inner.stream(
                    to, method=method, headers=hop_headers, payload=payload,
                    session=hop_session, proxy_info=proxy_info, timeout=timeout))
                self._keep_cookies(url, response, session, hop_session)
                await self._answered(turn, response)
                target = redirect_target(url, response.status_code,
                                         response.headers.get("location"))
                if target is None:
                    yield response
                    return
            method, sent, payload = _next(response, method, sent, payload, url, target)
            came_from, url = url, target
        raise TooManyRedirects(f"more than {MAX_REDIRECTS} redirects from {url}")

    async def cleanup(self) -> None:
        """Clean up ``inner`` if this client started it (the gate stays open: it is yours)."""
        if self._entered_inner:
            self._entered_inner = False
            await self.inner.__aexit__(None, None, None)

    async def __aenter__(self) -> RobotGateHttpClient:
        await super().__aenter__()
        if not self.inner.active:
            await self.inner.__aenter__()
            self._entered_inner = True
        return self

    # -- one request, hop by hop -----------------------------------------------------

    async def _send(self, url: str, method: str, headers: Mapping[str, str],
                    payload: HttpPayload | None, session: Session | None,
                    proxy_info: ProxyInfo | None,
                    timeout: timedelta | None) -> tuple[str, HttpResponse]:
        """The answer to ``url`` and the URL it came from, redirects followed."""
        sent = lower(headers)
        asked, came_from = url, None
        for _ in range(MAX_REDIRECTS + 1):
            turn = self._turn(url, came_from)
            try:
                await self._begin(turn, asked)
                to, hop_headers, hop_session = self._where(turn, url, sent, session)
                # The answer is read whole before the server's slot is given back.
                response = await self.inner.send_request(
                    to, method=_method(method), headers=hop_headers, payload=payload,
                    session=hop_session, proxy_info=proxy_info, timeout=timeout)
                self._keep_cookies(url, response, session, hop_session)
                await self._answered(turn, response)
            finally:
                turn.release()
            target = redirect_target(url, response.status_code, response.headers.get("location"))
            if target is None:
                return url, response
            method, sent, payload = _next(response, method, sent, payload, url, target)
            came_from, url = url, target
        raise TooManyRedirects(f"more than {MAX_REDIRECTS} redirects from {url}")

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

    def _turn(self, url: str, came_from: str | None) -> RequestTurn:
        # crawlee's clients resolve with the system resolver, as the loop's getaddrinfo does.
        return self.gate.request_turn(url, came_from, resolve)

    async def _begin(self, turn: RequestTurn, asked: str) -> None:
        """The verdict and the server's turn; then the request leaves.  ``asked``:
        the URL the caller asked for (the turn's may be a redirect's hop)."""
        try:
            ready = turn.begin()
            if ready is not None:
                await ready
        except Disallowed as no:
            log.info("skipped %s: %s", no.url, no.decision.reason)
            if self.on_refused is not None:
                self.on_refused(asked, no)
            raise RobotsDisallowed(no.url, no.decision) from None
        leaving = turn.leaving()
        if leaving is not None:
            await leaving

    @staticmethod
    async def _answered(turn: RequestTurn, response: HttpResponse) -> None:
        learnt = turn.answered(response.status_code, response.headers.get("retry-after"))
        if learnt is not None:
            await learnt


def _method(method: str) -> HttpMethod:
    return method  # type: ignore[return-value]  # crawlee's Literal of method names


def _next(response: HttpResponse, method: str, headers: dict[str, str],
          payload: HttpPayload | None, url: str,
          target: str) -> tuple[HttpMethod, dict[str, str], HttpPayload | None]:
    """The next hop's method, headers and payload."""
    method, headers, payload = next_hop(response.status_code, method, headers, payload, url,
                                        target)
    return _method(method), headers, payload
