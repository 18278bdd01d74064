"""The robots.txt transport over aiohttp: the robots.txt (and tdmrep.json) flow's
requests through the gate's session, or the user's with its proxy (:class:`Route`).
(The aiohttp adapter's modules: :mod:`robotgate.gate.aiohttp_client`.)"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, NamedTuple

import aiohttp
from yarl import URL

from ..errors import Disallowed, ProxyFailed
from ..policy.content_coding import decode_capped
from ..policy.fetch import LocalFailure
from ..policy.fetch_flow import RobotsRequest, RobotsResponse
from ..politeness.exchange import Reach, first_reach, robots_reach
from ..politeness.permits import Permit
from ..politeness.redirects import refused_answer
from ..timeouts import PausableDeadline, bounded
from .aiohttp_bodies import _read_capped
from .aiohttp_fetch import LastLook
from .aiohttp_peers import Handler, Middleware, _peer_guard, _resolve_with
from .connections import RequestTrace, tells_socket_waits

if TYPE_CHECKING:
    from .aiohttp_client import AiohttpClient, AiohttpConnections

__all__ = ["AiohttpProxyFailed", "AiohttpRobotsTransport", "Route", "proxy_route"]


class Route(NamedTuple):
    """The way a page goes, which its origin's robots.txt is asked by too: the user's
    session a ``gate.middleware`` request came through (None: the gate's), and the
    proxy a request goes through (``proxy``, ``proxy_auth``, ``proxy_headers`` as
    aiohttp takes them; None: none of its own)."""

    session: aiohttp.ClientSession | None = None
    proxy: str | URL | None = None
    proxy_auth: aiohttp.BasicAuth | None = None
    proxy_headers: Any = None

    def proxy_kwargs(self) -> dict[str, Any]:
        """The proxy as aiohttp's request takes it."""
        return {"proxy": self.proxy, "proxy_auth": self.proxy_auth,
                "proxy_headers": self.proxy_headers}


_DIRECT = Route()


def _route_of(via: object) -> Route:
    """The way a robots.txt request goes: ``via`` itself, or the way of the
    ``gate.middleware`` request it is (that request's session and proxy, read here, once
    an origin, rather than copied from every page); None: the gate's session, no proxy."""
    if via is None:
        return _DIRECT
    if isinstance(via, Route):
        return via
    if isinstance(via, aiohttp.ClientRequest):
        return Route(getattr(via, "session", None), via.proxy, via.proxy_auth,
                     via.proxy_headers)
    raise TypeError(f"no robots.txt route from {type(via).__name__}")  # never sent by guess


def proxy_route(kwargs: dict[str, Any]) -> Route | None:
    """The proxy a call's aiohttp arguments send it through (None: none of its own)."""
    proxy = kwargs.get("proxy")
    if proxy is None:
        return None
    return Route(None, proxy, kwargs.get("proxy_auth"), kwargs.get("proxy_headers"))


class AiohttpProxyFailed(ProxyFailed, aiohttp.ClientConnectionError):
    """:class:`~robotgate.ProxyFailed` as the aiohttp paths raise it: also an
    ``aiohttp.ClientConnectionError`` (the base of aiohttp's own
    ``ClientProxyConnectionError``), raised from the proxy's error when there was one."""


async def _proxy_watch(req: aiohttp.ClientRequest,
                       handler: Handler) -> aiohttp.ClientResponse:
    """A robots.txt request's middleware: the failure of the proxy it goes through (the
    call's, the session's, the environment's: aiohttp's request knows which) raised as
    the proxy's, never read as the site's answer."""
    proxy = req.proxy
    if proxy is None:
        return await handler(req)
    try:
        resp = await handler(req)
    except aiohttp.ClientHttpProxyError as exc:  # the tunnel (CONNECT) refused
        why = f"it answered {exc.status} to the tunnel's request"
        raise AiohttpProxyFailed(str(proxy), str(req.url), why) from exc
    except aiohttp.ClientProxyConnectionError as exc:
        why = f"it could not be reached ({exc.os_error.strerror or 'connection failed'})"
        raise AiohttpProxyFailed(str(proxy), str(req.url), why) from exc
    if resp.status == 407:  # a plain-http request goes to the proxy, which answers it
        resp.release()
        raise AiohttpProxyFailed(str(proxy), str(req.url),
                                 "it answered 407: it refused its credentials")
    return resp


class AiohttpRobotsTransport:
    """Sends the robots.txt flow's requests through the gate's aiohttp session, or
    through the user's session when a request of theirs (the middleware) asked."""

    #: Each request ends at its deadline (a PausableDeadline in place of aiohttp's own
    #: timer, which every request would have anyway): no second timer per fetch.
    enforces_deadline = True

    def __init__(self, client: AiohttpConnections | AiohttpClient) -> None:
        self.client = client

    def send(self, request: RobotsRequest) -> Coroutine[Any, Any, RobotsResponse]:
        """The request's coroutine: on the common path (a first request through the
        gate's own session, no proxy) the GET itself, with no coroutine around it."""
        if request.previous is None and request.via is None and not request.guard:
            return _get(self.client.session(), request, self._headers(request))
        return self._send(request)

    def _headers(self, request: RobotsRequest) -> dict[str, str]:
        client_headers = self.client.headers
        return {**client_headers, **request.headers} if request.headers else client_headers

    async def _send(self, request: RobotsRequest) -> RobotsResponse:
        client = self.client
        route = _route_of(request.via)
        via = route.session  # the user's session, or None: the gate's
        if request.previous is None:
            # A first request is judged at once: nothing is looked up, so it needs no
            # resolver and no timer (which would cost it a task of its own).
            reach: Reach | RobotsResponse = first_reach(request)
        else:
            # A redirect hop's target is looked up, and the resolver has no timer of its own.
            reach = await asyncio.wait_for(robots_reach(
                request, client.refuse_private,
                _resolve_with(via if via is not None and not via.closed else client.session()),
                client.is_private),
                _left(request))
        if isinstance(reach, RobotsResponse):
            return reach  # a hop refused: not sent
        guard = (_peer_guard(client.is_private, reach.what),) if reach.guard else ()
        headers = self._headers(request)
        try:
            if via is not None and not via.closed:
                try:
                    return await _get(via, request, headers, guard, route)
                except aiohttp.ClientError:
                    if not via.closed:
                        raise
                    # The user closed that session meanwhile: not the site's failure.
            return await _get(client.session(), request, headers, guard, route)
        except Disallowed as no:  # the connection reached a private address: not sent
            return refused_answer(request, no.decision)


async def _get(session: aiohttp.ClientSession, request: RobotsRequest,
               headers: dict[str, str], guard: tuple[Middleware, ...] = (),
               route: Route | None = None) -> RobotsResponse:
    left = _left(request)
    ours = tells_socket_waits(session)
    if left is None:
        # The gate's own session looks at the request's permit as its headers go out.
        trace = RequestTrace(None, request.permit) if ours else None
        return await _sent(session, request, headers, guard, route, session.timeout, trace)
    if not ours:
        return await _get_timed_by_aiohttp(session, request, headers, guard, route, left)
    # The timeout's clock stops while the request waits for a free socket (the gate's
    # session tells it: connections.socket_wait_trace); that wait has a bound of its own.
    deadline = PausableDeadline(left, SOCKET_WAIT,
                                lambda: _no_free_socket(request.url, "the gate's session"))
    async with deadline:
        return await _sent(session, request, headers, guard, route, _UNTIMED,
                           RequestTrace(deadline, request.permit))


async def _get_timed_by_aiohttp(session: aiohttp.ClientSession, request: RobotsRequest,
                                headers: dict[str, str], guard: tuple[Middleware, ...],
                                route: Route | None, left: float) -> RobotsResponse:
    """robots.txt through a session of the user's, which tells no wait for a socket:
    aiohttp's per-request timers leave that wait out instead (``sock_connect``,
    ``sock_read``); ``connect``, which counts it, bounds it by :data:`SOCKET_WAIT`; the
    body has ``left`` seconds from its headers, so a drip-fed one still ends."""
    timeout = aiohttp.ClientTimeout(total=None, connect=SOCKET_WAIT + left,
                                    sock_connect=left, sock_read=left)
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        return await _sent(session, request, headers, guard, route, timeout, None, left)
    except aiohttp.ConnectionTimeoutError:
        if loop.time() - started < SOCKET_WAIT:
            raise  # the site's connect (sock_connect): its failure to answer
        raise _no_free_socket(request.url, "the session") from None


#: aiohttp's own timers off: the request's PausableDeadline bounds it.
_UNTIMED = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=None, sock_read=None)
#: How long a robots.txt request waits for a free socket of its session, beside its
#: timeout: aiohttp's default total timeout, which bounds a page's request, wait
#: included.  Past it: :class:`~robotgate.LocalFailure` (never the site's verdict).
SOCKET_WAIT = 300.0


def _no_free_socket(url: str, whose: str) -> LocalFailure:
    return LocalFailure(url, f"free sockets (every connection of {whose} was in "
                        f"use for {SOCKET_WAIT:g}s)", "raise Network(max_connections=...) "
                        "(or your connector's limit) or send fewer requests at once", None)


async def _sent(session: aiohttp.ClientSession, request: RobotsRequest,
                headers: dict[str, str], guard: tuple[Middleware, ...], route: Route | None,
                timeout: aiohttp.ClientTimeout, trace: RequestTrace | None,
                body_within: float | None = None) -> RobotsResponse:
    # Our own middleware list: the session's (gate.middleware among them) stays out.
    proxy = route.proxy_kwargs() if route is not None and route.proxy is not None else {}
    if trace is None and isinstance(request.permit, Permit):
        # A session of the user's has no trace of the gate's: the last look is added
        # to this request's own, innermost.
        guard = (*guard, LastLook(request.permit))
    # The raw bytes, decoded by the core as every adapter's are: aiohttp reads one
    # coding only (not "x-gzip", "gzip, br"...) and leaves the rest as they came.
    async with session.get(request.url, headers=headers, allow_redirects=False,
                           raise_for_status=False,
                           middlewares=(_once(), _proxy_watch, *guard),
                           timeout=timeout, auto_decompress=False,
                           trace_request_ctx=trace, **proxy) as resp:
        status = resp.status
        body = None
        if 200 <= status < 300:
            content = resp.content
            # Most robots.txt come whole with their headers: no coroutine to read them.
            if content.is_eof():
                raw = content.read_nowait(request.max_bytes)
            elif body_within is None:
                raw = await _read_capped(resp, request.max_bytes)
            else:
                raw = await bounded(_read_capped(resp, request.max_bytes), body_within)
            body = decode_capped(raw, resp.headers.getall("Content-Encoding", ()),
                                 request.max_bytes)
        return RobotsResponse(status, resp.headers, body, request.url)


def _left(request: RobotsRequest) -> float | None:
    """Seconds left until the request's deadline (None: no deadline)."""
    if request.deadline is None:
        return None
    return max(request.deadline - time.time(), 0.001)


def _once() -> Middleware:
    """A middleware that lets a request go out once: aiohttp would silently retry
    a GET after a dropped connection, a second robots.txt request we don't want."""
    sent = False

    async def middleware(req: aiohttp.ClientRequest, handler: Handler) -> aiohttp.ClientResponse:
        nonlocal sent
        if sent:
            raise aiohttp.ServerDisconnectedError("connection dropped; not retried")
        sent = True
        return await handler(req)

    return middleware
