"""robotgate for httpx: a transport that checks, paces and caps every request.

>>> async with RobotGate("MyBot/1.0 (+https://example.com/bot)") as gate:  # doctest: +SKIP
...     async with httpx.AsyncClient(transport=RobotGateTransport(gate),
...                                  follow_redirects=True) as client:
...         try:
...             resp = await client.get("https://example.com/page")
...         except Disallowed as no:
...             print(no.decision)

httpx follows redirects above its transport, so every hop reaches
:meth:`RobotGateTransport.handle_async_request` and is checked and paced on
its own.  robots.txt is fetched through the same inner transport (no aiohttp
session is ever opened) with the gate's User-Agent and From headers.

A request holds its server's slot (``max_per_host``) until its body has been
read or the response closed, as ``gate.fetch`` does: with ``client.stream()``
close the response (``async with``) or the server's next request waits for it.
The interval to the next request counts from the arrival of the headers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

try:  # the client comes with an extra: say which, not a bare ModuleNotFoundError
    import httpx
except ImportError as _exc:
    raise ImportError(f"{__name__} needs httpx: pip install 'robotgate[httpx]'") from _exc

import anyio
import httpcore

from ..decision import Decision
from ..errors import Disallowed, ProxyFailed
from ..gate.aiohttp_robots import SOCKET_WAIT
from ..gate.connections import connection_budget
from ..gate.directives import headers_directives
from ..policy.content_coding import decode_capped
from ..policy.fetch import LocalFailure, local_failure
from ..policy.fetch_flow import REDIRECTS, RobotsRequest, RobotsResponse
from ..policy.hops import REFUSED, Address, IsPrivate, is_private, literal_address
from ..policy.provenance import Provenance, pointer_of
from ..politeness.exchange import Answer, NextHop, Resend, robots_reach
from ..politeness.permits import Permit
from ..politeness.questions import provenance_of
from ..politeness.request_turn import RequestTurn
from ..politeness.robots_fetcher import open_file_limit
from ..robots.directives import MAX_HEAD_BYTES
from ..timeouts import PausableDeadline
from ..urls import InvalidURL, redact
from ._hops import first_address, resolve, robots_headers

if TYPE_CHECKING:
    from ..gate.gate import RobotGate

__all__ = ["POINTED_BY", "REFUSED", "HttpxDisallowed", "HttpxInvalidURL", "HttpxLocalFailure",
           "HttpxProxyFailed", "HttpxProxyUnreachable", "HttpxRobotsTransport",
           "RobotGateTransport"]

# Set on a request whose answer was a redirect; httpx copies a request's
# extensions into the redirect it builds, so the next hop knows where it came from.
_HOP_FROM = "robotgate.redirected_from"
#: ``request.extensions`` key of who pointed at the request, as ``gate.fetch`` takes
#: ``pointed_by``: a page's URL (``""``: a page known to be public) or a
#: :class:`~robotgate.policy.provenance.Provenance`; absent: the caller's own input.
POINTED_BY = "robotgate_pointed_by"
_CHUNK = 65536
#: ``response.extensions`` key of the page's directives (``PageDirectives``): the
#: headers' at first, with the HTML head's meta tags once the body has been read;
#: read when first asked for.
DIRECTIVES = "robotgate_directives"


class HttpxDisallowed(Disallowed, httpx.RequestError):
    """A refusal raised by :class:`RobotGateTransport` from the client call: robots.txt
    forbids the URL, or a redirect's hop leads where it may not.

    It is a :class:`~robotgate.Disallowed` (``url``, ``decision``) and an
    ``httpx.RequestError`` (``request``: the request refused, nothing sent), so an
    ``except httpx.RequestError`` or ``except httpx.HTTPError`` written for plain httpx
    catches it too; put ``except robotgate.Disallowed`` first to tell a refusal from a
    failure.  It is no ``httpx.TransportError``: nothing failed on the wire.
    """

    def __init__(self, url: str, decision: Decision, *,
                 request: httpx.Request | None = None) -> None:
        super().__init__(url, decision)
        self._request = request


class HttpxInvalidURL(InvalidURL, httpx.UnsupportedProtocol):
    """A URL :class:`RobotGateTransport` cannot send (not http(s), no host, a port out
    of range): robotgate's :class:`~robotgate.urls.InvalidURL` (a ``ValueError``; the
    message and ``url`` without the password) and the ``httpx.UnsupportedProtocol``
    plain httpx raises for a URL its transport cannot send, so that ``except
    httpx.HTTPError`` (or ``httpx.TransportError``) catches it; ``request``: the
    request, nothing sent."""

    def __init__(self, url: object, why: str, *, request: httpx.Request | None = None) -> None:
        InvalidURL.__init__(self, url, why)
        self._request = request


class HttpxProxyFailed(ProxyFailed, httpx.ProxyError):
    """:class:`~robotgate.ProxyFailed` as the httpx transport raises it: the proxy the
    inner transport sends through refused its credentials (407) or the tunnel, while
    robots.txt was asked; also the ``httpx.ProxyError`` plain httpx raises for a tunnel
    refused, so that ``except httpx.TransportError`` catches it.  ``request``: the caller's request
    (httpx sets it); ``url``: the robots.txt URL the proxy failed."""

    def __init__(self, proxy: str, url: str, why: str, *,
                 request: httpx.Request | None = None) -> None:
        ProxyFailed.__init__(self, proxy, url, why)
        self._request = request


class HttpxProxyUnreachable(HttpxProxyFailed, httpx.ConnectError):
    """The proxy could not be reached (refused, unreachable, timed out): also the
    ``httpx.ConnectError`` plain httpx raises then."""


class HttpxLocalFailure(LocalFailure, httpx.ConnectError):
    """:class:`~robotgate.LocalFailure` as the httpx transport raises it: this machine
    ran out of something (descriptors, memory, ports, free sockets) before the request
    could be sent; also the ``httpx.ConnectError`` plain httpx raises out of
    descriptors, so that ``except httpx.HTTPError`` catches it (put ``except
    robotgate.LocalFailure`` first to keep the page).  ``request``: the request."""

    def __init__(self, what: str, resource: str, remedy: str, code: int | None, *,
                 request: httpx.Request | None = None) -> None:
        LocalFailure.__init__(self, what, resource, remedy, code)
        self._request = request


def _local(short: LocalFailure, request: httpx.Request) -> HttpxLocalFailure:
    return HttpxLocalFailure(short.what, short.resource, short.remedy, short.errno,
                             request=request)


def _nothing() -> None:
    """Nothing to give back (a request through an inner transport of yours)."""


def _proxy_of(inner: httpx.AsyncBaseTransport) -> str | None:
    """The proxy httpx's own transport sends every request through (None: none, or a
    transport of another kind, whose proxy robotgate cannot see)."""
    pool = inner._pool if isinstance(inner, httpx.AsyncHTTPTransport) else None
    url = getattr(pool, "_proxy_url", None)  # private_parts.HTTPX_PROXY_URL
    if url is None:
        return None
    try:
        return f"{url.scheme.decode()}://{url.host.decode()}:{url.port}"
    except (AttributeError, UnicodeDecodeError):
        return None


def _refusal(refused: Disallowed, request: httpx.Request) -> HttpxDisallowed:
    """The core's refusal as httpx's caller gets it (its traceback kept)."""
    if isinstance(refused, HttpxDisallowed):
        return refused
    return HttpxDisallowed(refused.url, refused.decision,
                           request=request).with_traceback(refused.__traceback__)


class HttpxRobotsTransport:
    """Sends the robots.txt flow's requests through an httpx transport.

    One GET per call, no redirect followed (the flow follows them), at most
    ``max_bytes`` of a 2xx body read; a hop from a public site into a private
    address is answered as refused without being sent.

    Each request ends at its deadline; through httpx's own transport, the wait for
    a connection of its pool is not counted (httpcore's trace tells when the request
    has one), and is bounded on its own (``SOCKET_WAIT``: past it, LocalFailure).
    """

    enforces_deadline = True

    def __init__(self, inner: httpx.AsyncBaseTransport, headers: dict[str, str],
                 refuse_private: bool = True, private: IsPrivate = is_private) -> None:
        self.inner = inner
        self.headers = headers
        self.refuse_private = refuse_private
        self.is_private = private

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        """Send one robots.txt request and return its answer."""
        if request.deadline is None:
            return await self._send(request, None)
        left = max(request.deadline - time.time(), 0.001)
        deadline = PausableDeadline(left, SOCKET_WAIT, lambda: LocalFailure(
            request.url, f"free connections (every one of httpx's pool was in use for "
            f"{SOCKET_WAIT:g}s)", "raise the pool's limits or send fewer requests at once",
            None))
        async with deadline:
            return await self._send(request, deadline)

    async def _send(self, request: RobotsRequest,
                    deadline: PausableDeadline | None) -> RobotsResponse:
        reach = await robots_reach(request, self.refuse_private, resolve, self.is_private)
        if isinstance(reach, RobotsResponse):
            return reach  # a hop refused: not sent
        headers = robots_headers(request, self.headers)
        extensions: dict[str, Any] = {}
        if deadline is not None and isinstance(self.inner, httpx.AsyncHTTPTransport):
            # Waiting for a connection of the pool until httpcore's first event on one.
            async def connected(event: str, info: dict[str, Any]) -> None:
                deadline.resume()

            extensions["trace"] = connected
            deadline.pause()
        permit = request.permit
        if isinstance(permit, Permit):
            # Looked at last as its headers go, as a page's is (LateSlot: not sent).
            extensions["trace"] = _LastLook(permit, extensions.get("trace"))
        req = httpx.Request("GET", request.url, headers=headers, extensions=extensions)
        # A hop goes to the address its check found; the first request of an origin a
        # public page pointed to, to the address the pointer check found.
        pinned = _pinned(req, reach.checked if reach.guard else (), self.inner)
        proxy = _proxy_of(self.inner)
        try:
            resp = await self.inner.handle_async_request(pinned)
        except (httpx.ProxyError, httpx.ConnectError, httpx.ConnectTimeout) as exc:
            if proxy is None:
                raise  # the site's: the flow judges it
            # Through a proxy every connection is the proxy's: its failure is no site's.
            kind = (HttpxProxyFailed if isinstance(exc, httpx.ProxyError)
                    else HttpxProxyUnreachable)
            raise kind(proxy, request.url, f"{type(exc).__name__}: {exc}",
                       request=req) from exc
        if proxy is not None and resp.status_code == 407:
            await resp.aclose()
            raise HttpxProxyFailed(proxy, request.url,
                                   "it answered 407: it refused its credentials", request=req)
        try:
            status = resp.status_code
            body = None
            if 200 <= status < 300 and resp.is_stream_consumed:
                body = resp.content[:request.max_bytes]  # read already (MockTransport)
            elif 200 <= status < 300:
                # Raw bytes, decoded here: httpx would inflate a whole chunk unbounded.
                raw = await _read_capped(resp, request.max_bytes)
                body = decode_capped(raw, resp.headers.get_list("Content-Encoding"),
                                     request.max_bytes)
        finally:
            await resp.aclose()
        return RobotsResponse(status, resp.headers, body, request.url)


async def _read_capped(resp: httpx.Response, limit: int) -> bytes:
    """At most ``limit`` bytes of the raw body; the rest is not read."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.aiter_raw(_CHUNK):
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(chunks)[:limit]


class _HeldStream(httpx.AsyncByteStream):
    """A response body whose turn gives its server's slot back once read or closed, and
    its place in the transport's own pool (``place``), once."""

    def __init__(self, stream: httpx.AsyncByteStream, turn: RequestTurn,
                 place: Callable[[], None]) -> None:
        self._stream = stream
        self._turn = turn
        self._place: Callable[[], None] | None = place

    def release(self) -> None:
        place, self._place = self._place, None
        try:
            self._turn.release()
        finally:
            if place is not None:
                place()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk
        self.release()

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            self.release()


class _HeadKept(httpx.AsyncByteStream):
    """A response body that hands its first bytes on once read whole (for its meta tags)."""

    def __init__(self, stream: httpx.AsyncByteStream, done: Callable[[bytes], None]) -> None:
        self._stream = stream
        self._done = done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        head = bytearray()
        async for chunk in self._stream:
            if len(head) < MAX_HEAD_BYTES:
                head += chunk[: MAX_HEAD_BYTES - len(head)]
            yield chunk
        self._done(bytes(head))

    async def aclose(self) -> None:
        await self._stream.aclose()


class _Extensions(dict[str, Any]):
    """A response's extensions, whose ``robotgate_directives`` is read when first asked
    for: what most crawls never ask costs nothing.  ``body``: the body, decoded, when
    the inner transport read it; else the head the stream keeps is decoded when asked."""

    def __init__(self, extensions: dict[str, Any], agent: str, headers: httpx.Headers,
                 body: bytes | None) -> None:
        super().__init__(extensions)
        self._agent = agent
        self._headers = headers
        self._body = body
        self._head: bytes | None = None

    def kept_head(self, head: bytes) -> None:
        """The body's head is read: asked again, the directives include its meta tags."""
        self._head = head
        self.pop(DIRECTIVES, None)

    def __missing__(self, key: str) -> Any:
        if key != DIRECTIVES:
            raise KeyError(key)
        found = self[DIRECTIVES] = headers_directives(self._headers, self._agent,
                                                      self._decoded_body())
        return found

    def _decoded_body(self) -> bytes | None:
        if self._body is not None or self._head is None:
            return self._body
        try:
            return decode_capped(self._head, self._headers.get_list("Content-Encoding"),
                                 MAX_HEAD_BYTES)
        except Exception:  # a coding robotgate cannot undo: the headers' directives stand
            return None

    def __contains__(self, key: object) -> bool:
        return key == DIRECTIVES or super().__contains__(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key == DIRECTIVES else super().get(key, default)


def _read_already(resp: httpx.Response) -> bytes | None:
    try:
        return resp.content
    except httpx.ResponseNotRead:
        return None


class _HttpxSender:
    """The transport's side of the exchange: one request through the inner transport
    (httpx follows the redirects above it, each hop a request of its own here)."""

    __slots__ = ("_inner", "_request")

    def __init__(self, request: httpx.Request, inner: httpx.AsyncBaseTransport) -> None:
        self._request = request
        self._inner = inner

    def prepare(self, url: str) -> str:
        return url  # httpx sends the URL as it holds it

    async def send(self, turn: RequestTurn) -> httpx.Response:
        request, inner = self._request, self._inner
        headers = request.headers
        for name, value in turn.headers.items():
            headers[name] = value
        slot = turn.slot
        extensions = request.extensions
        theirs = extensions.get("trace")
        if slot is not None:
            extensions["trace"] = _LastLook(slot, theirs)
        try:
            return await inner.handle_async_request(
                _pinned(request, turn.checked if turn.guard else (), inner))
        except (httpx.PoolTimeout, httpx.ReadError, httpx.WriteError) as exc:
            if _unsent(exc) and isinstance(request.stream, httpx.ByteStream):
                raise Resend(exc) from exc  # sent again, in a turn of its own
            raise
        finally:
            if slot is not None:  # the caller's own trace, as it was
                if theirs is None:
                    extensions.pop("trace", None)
                else:
                    extensions["trace"] = theirs

    def answer(self, resp: httpx.Response) -> Answer:
        status, headers = resp.status_code, resp.headers
        if status in REDIRECTS:
            return Answer(status, None, headers.get("Location"))
        return Answer(status, headers.get("Retry-After"), None)

    @property
    def method(self) -> str:
        return self._request.method

    async def redirected(self, resp: httpx.Response, hop: NextHop) -> None:
        await resp.aclose()  # httpx follows redirects itself: the exchange is asked not to

    def drop(self, resp: httpx.Response) -> Awaitable[None]:
        return resp.aclose()


class _LastLook:
    """httpcore's ``trace`` extension for a request in a fleet ``slot``: the slot is
    looked at last as the request's headers are about to be written (past it,
    :class:`~robotgate.politeness.fleet_slots.LateSlot`: httpcore closes the
    connection, nothing sent, and the turn takes the next slot).  ``theirs``: the
    caller's own trace, told first.  A transport that is not httpcore's ignores the
    extension: its request is looked at last as it is handed to it."""

    __slots__ = ("slot", "theirs")

    def __init__(self, slot: Permit, theirs: Any) -> None:
        self.slot = slot
        self.theirs = theirs

    async def __call__(self, event: str, info: dict[str, Any]) -> None:
        theirs = self.theirs
        if theirs is not None:
            await theirs(event, info)
        if event.endswith(".send_request_headers.started"):  # http11 and http2
            self.slot.check(asyncio.get_running_loop().time())


def _unsent(exc: httpx.TransportError) -> bool:
    """Whether ``exc`` left the request unsent for a shortage of this process's own
    pool: no connection came in time, or the pool closed the idle connection it had
    given the request (to make room for another origin's) before it was written on."""
    if isinstance(exc, httpx.PoolTimeout):
        return True
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return False
        if isinstance(seen, anyio.ClosedResourceError):  # closed on this side
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class _BoundedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, opening a socket only while fewer than ``most`` are
    open: the pool closes an idle connection to make room for another origin's, and its
    socket stays open until the loop's next pass (``connections.BoundedConnector`` waits
    for them alike)."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend, most: int) -> None:
        self._inner = inner
        self.most = most
        self.open = 0
        self._closed = asyncio.Event()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        while self.open >= self.most:  # the connect timeout bounds the wait
            self._closed.clear()
            await self._closed.wait()
        self.open += 1
        try:
            stream = await self._inner.connect_tcp(host, port, timeout, local_address,
                                                   socket_options)
        except BaseException:
            self.gone()
            raise
        return _CountedStream(stream, self)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        return await self._inner.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)

    def gone(self) -> None:
        self.open -= 1
        self._closed.set()


class _CountedStream(httpcore.AsyncNetworkStream):
    """A socket :class:`_BoundedBackend` counts until it is closed."""

    def __init__(self, stream: httpcore.AsyncNetworkStream, backend: _BoundedBackend) -> None:
        self._stream = stream
        self._backend: _BoundedBackend | None = backend

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._stream.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()  # anyio's closes the socket before it returns
        finally:
            backend, self._backend = self._backend, None
            if backend is not None:
                backend.gone()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        tls = await self._stream.start_tls(ssl_context, server_hostname, timeout)
        counted = _CountedStream(tls, self._backend) if self._backend is not None else tls
        self._backend = None  # the same socket: counted once, by the TLS stream
        return counted

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


def _own_transport(budget: int) -> httpx.AsyncHTTPTransport:
    """The transport's own inner transport: httpx's, holding at most ``budget`` sockets
    (closing ones included), every one kept alive when idle, a failed connect tried again."""
    transport = httpx.AsyncHTTPTransport(limits=_default_limits(budget),
                                         retries=CONNECT_RETRIES)
    pool = getattr(transport, "_pool", None)  # private_parts.HTTPX_NETWORK_BACKEND
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.AsyncNetworkBackend):
        pool._network_backend = _BoundedBackend(backend, budget)  # type: ignore[union-attr]
    return transport


#: Connection attempts the transport's own inner transport makes again (httpx's
#: ``retries``): a connect that failed or timed out sent nothing.
CONNECT_RETRIES = 2


#: The idle connections the transport's own pool keeps alive while it holds more
#: connections than that: httpcore 1.0's pool looks at every connection for each idle
#: one it keeps, each time a request comes or goes, so 768 idle ones (``ulimit -n``
#: 1024) made the loop too busy to connect within httpx's 5 s.
KEEP_ALIVE = 64


def _default_limits(budget: int) -> httpx.Limits:
    """httpx's pool limits for the transport's own inner transport: at most ``budget``
    sockets; up to :data:`KEEP_ALIVE` kept alive when idle."""
    return httpx.Limits(max_connections=budget,
                        max_keepalive_connections=min(budget, KEEP_ALIVE))


def _pinned(request: httpx.Request, checked: Sequence[Address],
            inner: httpx.AsyncBaseTransport) -> httpx.Request:
    """The request as sent: a public page's pointer to a name goes to the address its
    check found public (Host and TLS name kept), so that the connection cannot look
    the name up again and find a private one (DNS rebinding); httpx's pool keeps
    connections by that address.  (A transport other than httpx's own sends as asked:
    its look-up is its own.)  ``checked``: empty when the request is not guarded."""
    if not checked or not isinstance(inner, httpx.AsyncHTTPTransport):
        return request
    host = request.url.host
    if literal_address(host) is not None:
        return request
    return httpx.Request(request.method, request.url.copy_with(host=str(checked[0])),
                         headers=request.headers, stream=request.stream,
                         extensions={**request.extensions, "sni_hostname": host})


class RobotGateTransport(httpx.AsyncBaseTransport):
    """An httpx transport that puts every request through ``gate``.

    ``inner`` sends the requests (default ``httpx.AsyncHTTPTransport()``) and
    is closed by :meth:`aclose`; the gate is not (it is yours).  Creating the
    transport makes the gate fetch robots.txt through ``inner``.

    A disallowed URL raises :class:`HttpxDisallowed` (a :class:`~robotgate.Disallowed`
    and an ``httpx.RequestError``) from the client call, as does a redirect from a
    public site into a private address; a
    redirect to a URL that is not http(s), or not valid, raises the
    ``httpx.TransportError`` plain httpx gives (``UnsupportedProtocol``,
    ``RemoteProtocolError``); a URL of the caller's that robotgate cannot send,
    :class:`HttpxInvalidURL` (an ``httpx.UnsupportedProtocol`` too).  ``async with
    client`` enters and exits ``inner``.
    """

    def __init__(self, gate: RobotGate, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self.gate = gate
        # The default pool holds the gate's socket budget (three quarters of the open-file
        # limit), keep-alive ones included: httpx's own 100 made pages wait past its
        # pool timeout, and a budget above the limit would run out of descriptors.
        budget = connection_budget()
        self.inner = inner if inner is not None else _own_transport(budget)
        # A request takes a place in the transport's own pool before its turn and gives it
        # back with its response: httpcore's pool never queues one (its queue times out
        # at httpx's pool timeout, a page lost for this machine's shortage, and is looked
        # through against every connection for each request that comes or goes).  A
        # robots.txt request is asked by a request holding a place, at one socket each.
        self._places = asyncio.Semaphore(budget) if inner is None else None
        self.headers = gate.headers
        self.refuse_private = gate.refuse_private
        self.is_private = gate.is_private
        self.robots = HttpxRobotsTransport(self.inner, self.headers, self.refuse_private,
                                           self.is_private)
        gate.set_robots_transport(self.robots)
        if gate.pace_by == "ip":
            # The gate's own resolver would open an aiohttp session.
            gate.set_address_resolver(first_address)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Check, pace and send one request (one hop of a redirect chain) through the
        core's exchange (:mod:`robotgate.politeness.exchange`), httpx following the
        redirects itself.  Its provenance: a redirect hop is a pointer of the URL
        redirected; else the request's ``robotgate_pointed_by`` extension
        (:data:`POINTED_BY`), as ``gate.fetch`` takes ``pointed_by``; none: the
        caller's own input."""
        came_from = request.extensions.pop(_HOP_FROM, None)
        provenance = (pointer_of(came_from) if isinstance(came_from, str)
                      else provenance_of(request.extensions.get(POINTED_BY)))
        places = self._places
        if places is None:
            return await self._handle(request, came_from, provenance, _nothing)
        try:
            await asyncio.wait_for(places.acquire(), SOCKET_WAIT)
        except TimeoutError:
            raise HttpxLocalFailure(
                redact(str(request.url)), f"free connections (every one of the transport's "
                f"pool was held by a response not yet closed for {SOCKET_WAIT:g}s)",
                "close the responses you stream, or send fewer requests at once", None,
                request=request) from None
        try:
            return await self._handle(request, came_from, provenance, places.release)
        except BaseException:
            places.release()
            raise

    async def _handle(self, request: httpx.Request, came_from: object,
                      provenance: Provenance, place: Callable[[], None]) -> httpx.Response:
        """:meth:`handle_async_request` for a request holding its ``place`` (given back by
        calling it, once: with its response's body, or here if there is none)."""
        try:
            # httpx resolves inside its transport: the loop's getaddrinfo reads the same
            # system configuration (see integrations/_hops.py).
            done = await self.gate.exchange(_HttpxSender(request, self.inner),
                                            str(request.url), provenance, resolve=resolve,
                                            follow=False)
        except InvalidURL as exc:
            if not isinstance(came_from, str):  # the caller's own URL
                raise HttpxInvalidURL(exc.url, exc.why, request=request) from None
            # A Location the server sent: the error plain httpx gives for it.
            kind = (httpx.UnsupportedProtocol if request.url.scheme not in ("http", "https")
                    else httpx.RemoteProtocolError)
            raise kind(f"redirected to an unusable URL: {exc}", request=request) from None
        except Disallowed as refused:
            raise _refusal(refused, request) from None
        except LocalFailure as short:  # robots.txt's, asked for the request
            raise _local(short, request) from short
        except httpx.TransportError as exc:
            shortage = local_failure(exc, redact(str(request.url)), open_file_limit())
            if shortage is None:
                raise
            raise _local(shortage, request) from exc  # never sent: this machine's failure
        resp, turn = done.response, done.turn
        # Released below once the body is read (or by the inner transport already).
        if resp.status_code in REDIRECTS and "Location" in resp.headers:
            request.extensions[_HOP_FROM] = str(request.url)
        stream = resp.stream
        agent = self.gate.robots_agent
        if resp.is_closed or not isinstance(stream, httpx.AsyncByteStream):
            turn.release()  # the inner transport read the body already (MockTransport)
            place()
            resp.extensions = _Extensions(resp.extensions, agent, resp.headers,
                                          _read_already(resp))
        else:
            extensions = resp.extensions = _Extensions(resp.extensions, agent, resp.headers,
                                                       None)
            held: httpx.AsyncByteStream = _HeldStream(stream, turn, place)
            if "html" in resp.headers.get("Content-Type", "").lower():
                held = _HeadKept(held, extensions.kept_head)
            resp.stream = held
        return resp

    async def __aenter__(self) -> RobotGateTransport:
        """``async with client`` enters the inner transport too, as httpx enters its own."""
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None = None,
                        exc: BaseException | None = None,
                        tb: TracebackType | None = None) -> None:
        """Exit the inner transport (the gate stays open: it is yours)."""
        await self.inner.__aexit__(exc_type, exc, tb)

    async def aclose(self) -> None:
        """Close the inner transport (the gate stays open)."""
        await self.inner.aclose()
