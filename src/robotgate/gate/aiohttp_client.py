"""The aiohttp adapter: robots.txt transport, ``gate.fetch`` and ``gate.middleware``.

Everything here is about aiohttp objects; the decisions come from
:class:`~robotgate.politeness.admission.Admission`.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from types import TracebackType
from typing import Any, cast

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from ..decision import Decision
from ..errors import BodyTooLarge, Disallowed, GateClosed, without_context
from ..policy.content_coding import decode_capped
from ..policy.fetch_flow import REDIRECTS, RobotsRequest, RobotsResponse
from ..policy.hops import REFUSED, IsPrivate, hop_decision, is_private, redirect_location
from ..policy.network import strip_credentials
from ..politeness.admission import Admission
from ..politeness.fleet_slots import CURRENT, LateSlot
from ..politeness.scheduler import Group
from ..urls import NOT_IN_URIS, InvalidURL, redact, split_origin

__all__ = ["MAX_BODY", "REFUSED", "AiohttpClient", "AiohttpRobotsTransport", "FetchCall",
           "read_body"]

#: ``gate.fetch``'s default ``max_bytes``: a decoded body longer than this raises
#: :class:`BodyTooLarge` (a gzip bomb inflates only as far as it is read).
MAX_BODY = 64 << 20
_CHUNK = 1 << 16

Handler = Callable[[aiohttp.ClientRequest], Awaitable[aiohttp.ClientResponse]]
Middleware = Callable[[aiohttp.ClientRequest, Handler], Awaitable[aiohttp.ClientResponse]]
# What yarl rewrites in a URL before aiohttp sends it: a "%" (it decodes "%41" and
# "%21", upper-cases the rest), what no URI holds as such, controls and non-ASCII
# characters. Searched for as anything but the printable ASCII yarl keeps: a negated
# class is one table test a character (every page's URL is searched).
_KEPT = "".join(c for c in map(chr, range(0x21, 0x7F)) if c != "%" and c not in NOT_IN_URIS)
_REWRITTEN = re.compile(f"[^{re.escape(_KEPT)}]").search


def for_aiohttp(url: str) -> tuple[URL | str, str]:
    """What to hand aiohttp for ``url``, and the URL as it goes out, which is what
    robots.txt must judge: yarl encodes a space as ``%20`` (``+`` in the query),
    decodes ``%41`` and ``%21``...  A URL yarl would rewrite goes as the yarl URL
    (parsed once, not again by aiohttp); one it cannot parse raises
    :class:`~robotgate.urls.InvalidURL`.

    >>> for_aiohttp("http://example.com/%70rivate/a b")
    (URL('http://example.com/private/a%20b'), 'http://example.com/private/a%20b')
    """
    if _REWRITTEN(url) is None:
        return url, url
    parsed: URL | None
    try:
        parsed = URL(url)
    except Exception:  # yarl's ValueError, and its IndexError on some odd authorities
        parsed = None
    if parsed is None:  # raised out here, the client's error is no context of ours
        split_origin(url)  # robotgate's InvalidURL, saying what is wrong, if it sees it
        raise InvalidURL(url, "the HTTP client cannot parse it")
    return parsed, str(parsed)


def yarl_form(url: str) -> str:
    """``url`` as aiohttp sends it (see :func:`for_aiohttp`).

    >>> yarl_form("http://example.com/%70rivate/a b")
    'http://example.com/private/a%20b'
    """
    return for_aiohttp(url)[1]


#: The last redirect the middleware let through in this task: (from, to).
_HOP: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "robotgate_hop", default=None)
#: The user's session a middleware request came through: a robots.txt fetch it
#: starts (in a task that inherits this) goes over the same connections.
_VIA: contextvars.ContextVar[aiohttp.ClientSession | None] = contextvars.ContextVar(
    "robotgate_via", default=None)


async def read_body(resp: aiohttp.ClientResponse, limit: int,
                    keep: bool) -> tuple[bytes, int, bool]:
    """Up to ``limit`` bytes of the decoded body, read chunk by chunk: (body, size, cut).
    (``gate.fetch``'s ``max_bytes``, and ``robotgate fetch --max-bytes``.)

    Memory stays within ``limit`` whatever the server sends (a gzip or brotli
    bomb inflates only as fast as it is read).  ``keep=False`` counts without
    keeping.
    """
    chunks: list[bytes] = []
    size = 0
    truncated = False
    content = resp.content
    while not truncated:
        # One byte past the cap tells a body of exactly `limit` bytes from a longer one.
        chunk = await content.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            chunk = chunk[: len(chunk) - (size - limit)]
            size = limit
            truncated = True
        if keep:
            chunks.append(chunk)
    if size == 0 and not truncated:
        # A gate that read the body before handing the response over: take it from there.
        body = await resp.read()
        if body:
            truncated = len(body) > limit
            body = body[:limit]
            return (body if keep else b""), len(body), truncated
    return b"".join(chunks), size, truncated


async def _read_within(resp: aiohttp.ClientResponse, limit: int, url: str) -> None:
    """``resp.read()``, but past ``limit`` decoded bytes :class:`BodyTooLarge`."""
    body, _, cut = await read_body(resp, limit, keep=True)
    if cut:
        raise BodyTooLarge(url, limit)
    resp._body = body
    await resp.read()  # as aiohttp ends a read (the connection goes back to the pool)


def _ours(exc: aiohttp.ClientError, url: str, closed: bool) -> Exception:
    """A client error gate.fetch answers itself: the session's connector went down
    under the request (``close()``), or the client refuses a URL (its message would
    show the password)."""
    if closed:
        return GateClosed(f"the gate was closed while requesting {redact(url)}")
    return InvalidURL(url, "the HTTP client refuses it")


class FetchCall:
    """``await gate.fetch(url)`` or ``async with gate.fetch(url) as resp``.

    With ``stream=True`` only ``async with`` works: the response comes back after
    its headers and the server's slot is held until the block exits.
    """

    __slots__ = ("_args", "_client", "_group", "_resp", "_stream", "_url")

    def __init__(self, client: AiohttpClient, url: str, method: str, kwargs: dict[str, Any],
                 stream: bool, max_bytes: int | None) -> None:
        self._client = client
        self._url = url
        self._args = (method, kwargs, max_bytes)
        self._stream = stream
        self._resp: aiohttp.ClientResponse | None = None
        self._group: Group | None = None

    def __await__(self) -> Generator[Any, None, aiohttp.ClientResponse]:
        if self._stream:
            raise TypeError("gate.fetch(url, stream=True) is used as 'async with'")
        return self._client.fetch(self._url, *self._args).__await__()

    def __aenter__(self) -> Coroutine[Any, Any, aiohttp.ClientResponse]:
        # The fetch itself, not a coroutine around it: one frame less per page.
        method, kwargs, max_bytes = self._args
        return self._client.fetch(self._url, method, kwargs, max_bytes, self)

    def __aexit__(self, exc_type: type[BaseException] | None,
                  exc: BaseException | None, tb: TracebackType | None) -> Awaitable[None]:
        # Nothing here waits: an awaitable already done, not a coroutine each page.
        resp, group = self._resp, self._group
        if resp is not None:
            resp.release()
        if group is not None:
            # Streamed: the response is still tracked and holds its server's slot.
            self._group = None
            if resp is not None:
                self._client.forget(resp)
            self._client.admission.done(group)
        return _DONE


class _Done:
    """An awaitable that is done already: awaiting it allocates nothing."""

    __slots__ = ()

    def __await__(self) -> Generator[None, None, None]:
        return _SPENT


# An iterator at its end: each await of _DONE ends at once, and without an exception
# (a compiled generator that has ended raises StopIteration, with a traceback).
_SPENT = cast("Generator[None, None, None]", iter(()))
_DONE = _Done()


class AiohttpClient:
    """Sends requests through an aiohttp session under the gate's admission.

    ``session()`` returns the session (creating the owned one on first use).
    Responses in flight are tracked so that :meth:`close` can end them.
    """

    #: The gate's, set once it is built (it needs this client's robots.txt transport).
    admission: Admission

    def __init__(self, session: Callable[[], aiohttp.ClientSession], headers: dict[str, str],
                 owned: bool, refuse_private: bool = True,
                 is_private: IsPrivate = is_private) -> None:
        self.session = session
        self.headers = headers
        self.owned = owned
        # Our headers for a user's session, made once (see _sending): handed over as the
        # call's, not set by a middleware, whose closure and coroutines would stay alive
        # across every page's wait.
        self._call_headers: CIMultiDict[str] | None = None if owned else CIMultiDict(headers)
        self._stamping: tuple[Middleware, ...] = (self._stamp,)
        self.refuse_private = refuse_private
        self.is_private = is_private
        #: The owned session's resolver (``pace_by="ip"``); hops ask the connector's.
        self.resolver: aiohttp.abc.AbstractResolver | None = None
        self._open: set[aiohttp.ClientResponse] = set()
        self.closed = False

    # -- gate.fetch -----------------------------------------------------------------

    async def fetch(self, url: str, method: str, kwargs: dict[str, Any],
                    max_bytes: int | None = MAX_BODY,
                    call: FetchCall | None = None) -> aiohttp.ClientResponse:
        """Send ``url`` and read its body, hop by hop through redirects, each checked and paced.

        With ``call`` (``async with``) the last response is kept there for its
        exit; when it streams, the response is unread and its server's Group,
        still held, is kept there too.  A body longer than ``max_bytes`` (not
        None) raises :class:`BodyTooLarge`.
        """
        stream = call is not None and call._stream
        follow = kwargs.pop("allow_redirects", True)
        max_redirects = kwargs.pop("max_redirects", 10)
        sending = self._sending(kwargs)
        admission = self.admission
        history: tuple[aiohttp.ClientResponse, ...] = ()  # no allocation without redirects
        while True:
            # One hop, inline: a coroutine layer less on every resumption of the request.
            sent, url = (url, url) if _REWRITTEN(url) is None else for_aiohttp(url)  # inline
            group = admission.admit(url)
            if not isinstance(group, Group):
                group = await group
            keep = False  # True once a streamed response holds the server's slot
            try:
                if admission.fleet is None:
                    sent_at = admission.sent()
                    resp = await self.session().request(
                        method, sent, allow_redirects=False, middlewares=sending,
                        **kwargs)
                else:
                    resp, sent_at = await self._request_in_slot(group, method, sent, sending,
                                                                kwargs)
                redirect = follow and resp.status in REDIRECTS
                # Learn from the answer, then read its body unless it streams.
                # (Inline, not a coroutine of its own: this runs for every page.)
                self._open.add(resp)
                try:
                    pending = admission.answered(group, resp.status, _retry_after(resp),
                                                 sent_at)
                    if pending is not None:
                        await pending
                    keep = stream and not redirect
                    if not keep:
                        # A body already whole and within the limit (most pages: they come
                        # with their headers) is read as aiohttp does; any other in chunks.
                        content = resp.content
                        if max_bytes is None or (
                                content.is_eof() and content.total_bytes <= max_bytes):
                            await resp.read()
                        else:
                            await _read_within(resp, max_bytes, url)
                except BaseException as exc:
                    resp.close()
                    if self.closed:
                        raise GateClosed(
                            f"the gate was closed while reading {redact(url)}") from exc
                    raise
                finally:
                    if not keep:
                        self._open.discard(resp)
            except aiohttp.ClientError as exc:
                if self.closed:
                    raise _ours(exc, url, True) from exc
                if isinstance(exc, aiohttp.InvalidURL):
                    raise without_context(_ours(exc, url, False)) from None
                raise
            finally:
                if not keep:
                    admission.done(group)
            location = redirect_location(resp.headers) if redirect else None
            if location is not None and len(history) >= max_redirects:
                raise aiohttp.TooManyRedirects(resp.request_info, (*history, resp))
            target = self._target(resp, location) if location is not None else None
            if target is None:
                # The answer (not a redirect, or to no http(s) URL), or streamed.
                if call is not None:
                    call._resp = resp
                    if keep:
                        call._group = group  # streamed: the caller reads it and lets go
                return resp
            method = await self._hop(url, target, resp.status, method, kwargs)
            history += (resp,)
            url = target

    def _sending(self, kwargs: dict[str, Any]) -> tuple[Middleware, ...]:
        """The middlewares gate.fetch sends through (the session's own stay out).

        The agent robots.txt was read for wins over the session's and the call's
        headers: the owned session's defaults carry ours; a user's session gets them
        as the call's (aiohttp lays them over its defaults); a call with headers of its
        own goes through ``_stamp``, which sets ours on the built request."""
        if "headers" in kwargs:
            return self._stamping
        if self._call_headers is not None:
            kwargs["headers"] = self._call_headers
        return ()

    async def _hop(self, url: str, target: str, status: int, method: str,
                   kwargs: dict[str, Any]) -> str:
        """May a redirect from ``url`` lead to ``target``?  Returns the next hop's method."""
        refused = await self.hop_decision(url, target, self.session())
        if refused is not None:
            raise Disallowed(target, refused)
        if status == 303 or (status in (301, 302) and method == "POST"):
            kwargs.pop("data", None)
            kwargs.pop("json", None)
            return "GET"
        return method

    async def _stamp(self, req: aiohttp.ClientRequest,
                     handler: Handler) -> aiohttp.ClientResponse:
        req.headers.update(self.headers)  # ours win over the session's and the call's
        return await handler(req)

    def _target(self, resp: aiohttp.ClientResponse, location: str) -> str | None:
        try:
            target = strip_credentials(str(resp.url.join(URL(location))))
            split_origin(target)
        except (ValueError, InvalidURL):
            return None
        return target

    def forget(self, resp: aiohttp.ClientResponse) -> None:
        """A streamed response was let go."""
        self._open.discard(resp)

    async def _request_in_slot(self, group: Group, method: str, url: URL | str,
                               sending: tuple[Middleware, ...],
                               kwargs: dict[str, Any]) -> tuple[aiohttp.ClientResponse, float]:
        """Send within the fleet slot the admission reserved (or reserve again);
        the response and when the request left."""
        admission = self.admission
        fleet = admission.fleet
        assert fleet is not None
        while True:
            slot = CURRENT.get()
            try:
                if slot is not None:
                    slot.check(asyncio.get_running_loop().time())
                sent_at = admission.sent()
                resp = await self.session().request(
                    method, url, allow_redirects=False, middlewares=sending, **kwargs)
            except LateSlot:
                # Too late for its fleet slot (the loop lagged): not sent; ask again
                # (the new slot is checked on the next round).
                assert slot is not None
                await admission.slot_missed(group, slot)
                continue
            except BaseException:
                CURRENT.set(None)
                raise
            CURRENT.set(None)
            fleet.on_time()
            return resp, sent_at

    # -- gate.middleware ---------------------------------------------------------------

    async def middleware(self, req: aiohttp.ClientRequest,
                         handler: Handler) -> aiohttp.ClientResponse:
        """Check and pace one request of the user's own session (each redirect hop too)."""
        admission = self.admission
        url = str(req.url)
        hop = _HOP.get()
        if hop is not None:
            # The request follows a redirect this middleware saw: where may it lead?
            _HOP.set(None)
            if _same_target(hop[1], req.url):
                session = getattr(req, "session", None)
                refused = await self.hop_decision(hop[0], url, session)
                if refused is not None:
                    raise Disallowed(_bare(req.url), refused)
                req.headers.pop("Authorization", None)  # never credentials from a Location
        group = admission.admit(url)
        if not isinstance(group, Group):
            via = _VIA.set(getattr(req, "session", None))
            try:
                group = await group
            finally:
                _VIA.reset(via)
        req.headers.update(self.headers)  # each name's values replaced, as setting it would
        try:
            if admission.fleet is not None:
                await admission.on_time(group)  # a late slot is given up and asked again
            sent_at = admission.sent()
            resp = await handler(req)
            pending = admission.answered(group, resp.status, _retry_after(resp), sent_at)
            if pending is not None:
                await pending
        finally:
            admission.done(group)
        if resp.status in REDIRECTS:
            location = redirect_location(resp.headers)
            target = self._target(resp, location) if location else None
            if target is not None:
                _HOP.set((url, target))
        return resp

    # -- hops into private networks ----------------------------------------------------

    async def hop_decision(self, from_url: str, to_url: str,
                           session: aiohttp.ClientSession | None) -> Decision | None:
        """The refusal of a redirect from ``from_url`` to ``to_url`` (None: followed);
        names are resolved by ``session``'s connector, the resolver it connects with."""
        if not self.refuse_private:
            return None
        resolver = _resolver_of(session) if session is not None else None

        async def resolve(host: str) -> list[str]:
            if resolver is None:
                return []  # no resolver to ask: the hop is refused
            infos = await resolver.resolve(host, 0, socket.AF_UNSPEC)
            return [info["host"] for info in infos]

        return await hop_decision(from_url, to_url, resolve, self.is_private)

    async def hop_refusal(self, from_url: str, to_url: str,
                          session: aiohttp.ClientSession | None = None) -> str | None:
        """Why a redirect from ``from_url`` to ``to_url`` is refused (None: followed)."""
        refused = await self.hop_decision(from_url, to_url,
                                          session if session is not None else self.session())
        return refused.reason if refused is not None else None

    async def _resolve(self, host: str) -> list[str]:
        resolver = self.resolver
        if resolver is None:
            resolver = _resolver_of(self.session())
        if resolver is None:
            return []
        try:
            infos = await resolver.resolve(host, 0, socket.AF_UNSPEC)
        except OSError:
            return []
        return [info["host"] for info in infos]

    async def first_address(self, host: str) -> str:
        """The address a connection to ``host`` will use (for ``pace_by="ip"``)."""
        found = await self._resolve(host)
        return found[0] if found else host

    def close_responses(self) -> None:
        """End every response still being read: its reader gets :class:`GateClosed`."""
        self.closed = True
        for resp in list(self._open):
            resp.close()
        self._open.clear()


class AiohttpRobotsTransport:
    """Sends the robots.txt flow's requests through the gate's aiohttp session, or
    through the user's session when a request of theirs (the middleware) asked."""

    #: Each request ends at its deadline (aiohttp's own timer, which every request
    #: has anyway): no second timer per robots.txt fetch.
    enforces_deadline = True

    def __init__(self, client: AiohttpClient) -> None:
        self.client = client

    def send(self, request: RobotsRequest) -> Coroutine[Any, Any, RobotsResponse]:
        """The request's coroutine: on the common path (a first request through the
        gate's own session) the GET itself, with no coroutine around it."""
        if request.previous is None and _VIA.get() is None:
            return _get(self.client.session(), request, self._headers(request))
        return self._send(request)

    def _headers(self, request: RobotsRequest) -> dict[str, str]:
        client_headers = self.client.headers
        return {**client_headers, **request.headers} if request.headers else client_headers

    async def _send(self, request: RobotsRequest) -> RobotsResponse:
        client = self.client
        if request.previous is not None:
            # The resolver has no timer of its own.
            via = _VIA.get()
            session = via if via is not None and not via.closed else client.session()
            why = await asyncio.wait_for(
                client.hop_refusal(request.previous, request.url, session), _left(request))
            if why is not None:
                return RobotsResponse(0, {}, None, request.url, refused=f"{request.name} {why}")
        headers = self._headers(request)
        via = _VIA.get()
        if via is not None and not via.closed:
            try:
                return await _get(via, request, headers)
            except aiohttp.ClientError:
                if not via.closed:
                    raise
                # The user closed that session meanwhile: not the site's failure.
        return await _get(client.session(), request, headers)


async def _get(session: aiohttp.ClientSession, request: RobotsRequest,
               headers: dict[str, str]) -> RobotsResponse:
    # Our own middleware list: the session's (gate.middleware among them) stays out.
    left = _left(request)
    timeout = aiohttp.ClientTimeout(total=left) if left is not None else session.timeout
    # The raw bytes, decoded by the core as every adapter's are: aiohttp reads one
    # coding only (not "x-gzip", "gzip, br"...) and leaves the rest as they came.
    async with session.get(request.url, headers=headers, allow_redirects=False,
                           raise_for_status=False, middlewares=(_once(),),
                           timeout=timeout, auto_decompress=False) as resp:
        status = resp.status
        body = None
        if 200 <= status < 300:
            content = resp.content
            # Most robots.txt come whole with their headers: no coroutine to read them.
            raw = (content.read_nowait(request.max_bytes) if content.is_eof()
                   else await _read_capped(resp, request.max_bytes))
            body = decode_capped(raw, resp.headers.getall("Content-Encoding", ()),
                                 request.max_bytes)
        return RobotsResponse(status, resp.headers, body, request.url)


async def check_slot(session: aiohttp.ClientSession, ctx: object,
                     params: aiohttp.TraceRequestHeadersSentParams) -> None:
    """Trace hook: a fleet slot's deadline is checked right before the first bytes go out."""
    slot = CURRENT.get()
    if slot is not None:
        slot.check(asyncio.get_running_loop().time())


def _resolver_of(session: aiohttp.ClientSession) -> aiohttp.abc.AbstractResolver | None:
    """The resolver ``session``'s connections are made with (None: not a TCP connector)."""
    return getattr(session.connector, "_resolver", None)


def _bare(url: URL) -> str:
    """``url`` without userinfo or fragment: as a redirect hop is compared and reported."""
    return str(url.with_user(None).with_fragment(None))


def _same_target(target: str, url: URL) -> bool:
    """Whether ``url`` is the request aiohttp made to follow a redirect to ``target``."""
    try:
        return _bare(URL(target)) == _bare(url)
    except ValueError:
        return False


def _left(request: RobotsRequest) -> float | None:
    """Seconds left until the request's deadline (None: no deadline)."""
    if request.deadline is None:
        return None
    return max(request.deadline - time.time(), 0.001)


def _retry_after(resp: aiohttp.ClientResponse) -> str | None:
    """The Retry-After of a 429/503 (the only answers whose wait it sets)."""
    status = resp.status
    return resp.headers.get("Retry-After") if status == 429 or status == 503 else None


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


async def _read_capped(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """At most ``limit`` bytes of the body; the rest is not read."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await resp.content.read(min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
