"""``gate.fetch``'s request: the call (:class:`FetchCall`), its side of the core's
exchange (one aiohttp request at a time, no redirect followed by aiohttp), the URL as
aiohttp sends it, and no resend out of turn.  (The aiohttp adapter's modules:
:mod:`robotgate.gate.aiohttp_client`.)"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Coroutine, Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

import aiohttp
from aiohttp.tracing import Trace
from multidict import CIMultiDict
from yarl import URL

from ..policy.fetch_flow import REDIRECTS
from ..policy.hops import redirect_location
from ..policy.provenance import INPUT, Provenance
from ..policy.redirect_hop import ORIGIN_SCOPED, NextHop
from ..politeness.exchange import Answer, Resend, answer_of
from ..politeness.permits import Permit
from ..politeness.request_turn import RequestTurn
from ..private_parts import LAST_LOOK_TRACE, missing
from ..urls import NOT_IN_URIS, InvalidURL, split_origin
from .aiohttp_bodies import _closed_reading, _read
from .aiohttp_peers import Handler, _peer_guard
from .connections import RequestTrace

if TYPE_CHECKING:
    from .aiohttp_client import AiohttpClient

__all__ = ["FetchCall", "LastLook", "check_slot", "for_aiohttp", "resends_off",
           "without_resends", "yarl_form"]


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
    parsed = yarl_parsed(url)
    return parsed, str(parsed)


def yarl_parsed(url: str) -> URL:
    """``url`` parsed by yarl; one it cannot parse raises
    :class:`~robotgate.urls.InvalidURL` (with no yarl error as its context: that
    names the password)."""
    parsed: URL | None
    try:
        parsed = URL(url)
    except Exception:  # yarl's ValueError, and its IndexError on some odd authorities
        parsed = None
    if parsed is None:  # raised out here, the client's error is no context of ours
        split_origin(url)  # robotgate's InvalidURL, saying what is wrong, if it sees it
        raise InvalidURL(url, "the HTTP client cannot parse it")
    return parsed


def yarl_form(url: str) -> str:
    """``url`` as aiohttp sends it (see :func:`for_aiohttp`).

    >>> yarl_form("http://example.com/%70rivate/a b")
    'http://example.com/private/a%20b'
    """
    return for_aiohttp(url)[1]


class FetchCall:
    """``await gate.fetch(url)`` or ``async with gate.fetch(url) as resp``.

    With ``stream=True`` only ``async with`` works: the response comes back after
    its headers and the server's slot is held until the block exits.  ``sent``: the
    Unix time its request left (the first hop's), after any wait for its turn
    (None until then); ``gate.crawl`` records it as the request's start.  ``via``: the
    route it takes, known before it is sent.
    """

    __slots__ = ("_args", "_client", "_provenance", "_resp", "_stream", "_turn", "_url", "sent")

    def __init__(self, client: AiohttpClient, url: str, method: str, kwargs: dict[str, Any],
                 stream: bool, max_bytes: int | None, provenance: Provenance = INPUT) -> None:
        self._client = client
        self._url = url
        self._args = (method, kwargs, max_bytes)
        self._provenance = provenance
        self._stream = stream
        self._resp: aiohttp.ClientResponse | None = None
        self._turn: RequestTurn | None = None
        self.sent: float | None = None

    @property
    def via(self) -> object:
        """The route the request takes (its ``proxy``, ``proxy_auth``, ``proxy_headers``;
        None: the session's own), which its origin's robots.txt is asked by too:
        ``gate.crawl`` reads it before the request is sent, to ask robots.txt its way."""
        return self._client.route_of(self._args[1])

    def __await__(self) -> Generator[Any, None, aiohttp.ClientResponse]:
        if self._stream:
            raise TypeError("gate.fetch(url, stream=True) is used as 'async with'")
        return self._client.fetch(self._url, *self._args, None, self._provenance).__await__()

    def __aenter__(self) -> Coroutine[Any, Any, aiohttp.ClientResponse]:
        method, kwargs, max_bytes = self._args
        return self._client.fetch(self._url, method, kwargs, max_bytes, self, self._provenance)

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        resp, turn = self._resp, self._turn
        if resp is not None:
            resp.release()
        if turn is not None:
            # Streamed: the response is still tracked and its turn holds the server's slot.
            self._turn = None
            if resp is not None:
                self._client.forget(resp)
            turn.release()

    if not TYPE_CHECKING:  # at run time only: mypy still flags gate.fetch(url).status
        def __getattr__(self, name: str) -> NoReturn:
            # Only what a FetchCall lacks comes here: mostly a response's attribute read
            # from the call itself, the await or the 'async with' forgotten.
            hint = "" if name.startswith("_") else (
                ": gate.fetch(url) is not the response yet; use"
                " 'async with gate.fetch(url) as resp:' or 'resp = await gate.fetch(url)'")
            raise AttributeError(f"'FetchCall' object has no attribute {name!r}{hint}",
                                 name=name, obj=self)


class _FetchSender:
    """``gate.fetch``'s side of the exchange: one aiohttp request at a time through the
    gate's or the user's session, no redirect followed by aiohttp (the exchange does)."""

    __slots__ = ("_call", "_client", "_dropped", "_kwargs", "_max_bytes", "_sending",
                 "_target", "_userinfo", "hops", "last", "method", "url")

    def __init__(self, client: AiohttpClient, method: str, kwargs: dict[str, Any],
                 max_bytes: int | None, call: FetchCall | None) -> None:
        self._client = client
        self._call = call  # told when its first request leaves
        #: The method of the request being sent.
        self.method = method
        self._kwargs = kwargs
        self._max_bytes = max_bytes
        self._sending = client._sending(kwargs)
        self._target: URL | str = ""  # the URL handed to aiohttp
        # The first URL's userinfo, which aiohttp sends again on a hop within its origin
        # (None: none, or the hops left that origin).
        self._userinfo: tuple[str | None, str | None] | None = None
        #: The URL being sent, as the gate's errors name it.
        self.url = ""
        # What dropped the connection under the request being sent (see _sent_once).
        self._dropped: BaseException | None = None
        #: The redirect responses followed, and the last response (for aiohttp's
        #: TooManyRedirects).
        self.hops: tuple[aiohttp.ClientResponse, ...] = ()
        self.last: aiohttp.ClientResponse | None = None

    def prepare(self, url: str) -> str:
        if "@" in url or self._userinfo is not None:
            return self._prepare_credentials(url)
        if _REWRITTEN(url) is None:  # most URLs: sent as they are (for_aiohttp's first case)
            self._target = url
            return url
        self._target, url = for_aiohttp(url)
        return url

    def _prepare_credentials(self, url: str) -> str:
        """:meth:`prepare` for a URL with userinfo, or a hop within the origin of the
        first URL's: the hop carries that userinfo, as aiohttp's own hop does (the
        credentials a Location names were stripped by the hop's check)."""
        target, url = for_aiohttp(url)
        parsed = target if isinstance(target, URL) else yarl_parsed(target)
        if not self.hops and (parsed.raw_user is not None or parsed.raw_password is not None):
            self._userinfo = (parsed.user, parsed.password)
        elif self._userinfo is not None and parsed.raw_user is None:
            user, password = self._userinfo
            parsed = parsed.with_user(user).with_password(password)
        self._target = parsed
        return url

    def send(self, turn: RequestTurn) -> Awaitable[aiohttp.ClientResponse]:
        client = self._client
        # The trace hook's last look (only the owned session has it): a fleet slot
        # found past as the headers go out raises LateSlot, nothing sent.
        slot = turn.slot
        kwargs = self._kwargs
        extra = {**kwargs, "trace_request_ctx": RequestTrace(None, slot)} \
            if slot is not None and client.owned else kwargs
        if self._call is not None and not self.hops:
            self._call.sent = time.time()  # as it leaves: in a fleet, after the wait for a slot
        middlewares = self._sending
        if turn.guard:
            middlewares = (*middlewares, _peer_guard(client.is_private, turn.what))
        self.url = turn.url
        session = client.session()
        if slot is not None and not client.owned:
            # A user's session has no trace of the gate's: the last look is added to
            # this request's own traces (LastLook), innermost, nearest the bytes.
            middlewares = (*middlewares, LastLook(slot))
        if client.owned and resends_off(session):
            return self._sent(session.request(
                self.method, self._target, allow_redirects=False, middlewares=middlewares,
                **extra))
        # A user's session resends on its own (and the gate's, on an aiohttp without the
        # switch): the resend is stopped where it starts, in the one coroutine a request
        # of it takes here; its errors are made the gate's by the fetch
        # (AiohttpClient.fetch).
        self._dropped = None
        return session.request(
            self.method, self._target, allow_redirects=False,
            middlewares=(self._sent_once, *middlewares), **extra)

    async def _sent(self, sending: Awaitable[aiohttp.ClientResponse]
                    ) -> aiohttp.ClientResponse:
        """The gate's own session's request: a dropped connection's request is sent
        again in a turn of its own (the session does not resend by itself)."""
        client = self._client
        try:
            return await sending
        except aiohttp.ClientError as exc:
            if not client.closed and _dropped(exc) and self._resendable():
                raise Resend(exc) from None
            client._raise_ours(exc, self.url)

    async def _sent_once(self, req: aiohttp.ClientRequest,
                         handler: Handler) -> aiohttp.ClientResponse:
        """A middleware that lets the request go out once: aiohttp sends a request again
        at once when the connection dropped under it; that resend is a request of its
        own, sent in a turn of its own (:class:`~robotgate.politeness.exchange.Resend`;
        after the gate's close, that turn raises GateClosed)."""
        if self._dropped is not None:
            raise Resend(self._dropped)
        try:
            return await handler(req)
        except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError) as exc:
            self._dropped = exc
            raise

    def _resendable(self) -> bool:
        """Whether aiohttp would send this request again after a dropped connection (an
        idempotent method; here, without a body to send again)."""
        kwargs = self._kwargs
        return (self.method.upper() in aiohttp.client.IDEMPOTENT_METHODS and "data" not in kwargs
                and "json" not in kwargs)

    def answer(self, resp: aiohttp.ClientResponse) -> Answer:
        # The exchange asks as soon as the response came: tracked from here.
        self._client._open.add(resp)
        self.last = resp
        status = resp.status
        if status in REDIRECTS:
            return Answer(status, None, redirect_location(resp.headers))
        if status == 429 or status == 503:
            return Answer(status, resp.headers.get("Retry-After"), None)
        return answer_of(status)

    async def redirected(self, resp: aiohttp.ClientResponse, hop: NextHop) -> None:
        try:
            await self.read(resp, str(resp.url))
        finally:
            self._client._open.discard(resp)
        self.hops += (resp,)
        self.method = hop.method
        kwargs = self._kwargs
        if not hop.keeps_body:
            kwargs.pop("data", None)
            kwargs.pop("json", None)
        if hop.leaves_origin:
            # The call's credentials, as aiohttp drops them on its own hops; a session's
            # default Authorization or Cookie header, or its auth= (which aiohttp would
            # send again), is taken off the built request.
            kwargs.pop("auth", None)
            kwargs.pop("cookies", None)
            self._userinfo = None
            session = self._client.session()
            sending = self._sending
            if _scoped_defaults(session):
                if _without_scoped not in sending:
                    self._sending = (*sending, _without_scoped)
            elif session.auth is not None and _without_authorization not in sending:
                self._sending = (*sending, _without_authorization)
        if "headers" in kwargs and kwargs["headers"] is not self._client._call_headers:
            kwargs["headers"] = _headers_without(kwargs["headers"], hop.dropped)

    def drop(self, resp: aiohttp.ClientResponse) -> None:
        self._client._drop(resp)

    async def read(self, resp: aiohttp.ClientResponse, url: str) -> None:
        """Read ``resp``'s body within ``max_bytes``; the client's errors as the gate's."""
        try:
            await _read(resp, url, self._max_bytes, self._client.body_unheard())
        except BaseException as exc:
            self.unread(resp, url, exc)
        finally:
            self._client._open.discard(resp)

    def unread(self, resp: aiohttp.ClientResponse, url: str, exc: BaseException) -> NoReturn:
        """Reading ``resp``'s body failed with ``exc``: it is closed, and the client's
        error raised as the gate's."""
        resp.close()
        client = self._client
        if client.closed:
            raise _closed_reading(url) from None
        if isinstance(exc, aiohttp.ClientError):
            client._raise_ours(exc, url)
        raise exc


def _dropped(exc: aiohttp.ClientError) -> bool:
    """Whether ``exc`` is a connection that dropped under a request sent (aiohttp's
    reason to send it again), not one that could not be made."""
    return (isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError))
            and not isinstance(exc, aiohttp.ClientConnectorError))


def without_resends(session: aiohttp.ClientSession) -> aiohttp.ClientSession:
    """The gate's own session, made not to send a request again by itself after a
    dropped connection: ``gate.fetch`` sends it again in a turn of its own.  (aiohttp
    has no public switch for it; its own test client turns it off so.)  An aiohttp
    without the switch is left as it is: :func:`resends_off` tells, and gate.fetch then
    stops the resend with a middleware."""
    if hasattr(session, "_retry_connection"):  # private_parts.RETRY_CONNECTION
        session._retry_connection = False
    return session


def resends_off(session: aiohttp.ClientSession) -> bool:
    """Whether ``session`` is known to send no request again by itself (its switch
    found, and off)."""
    return getattr(session, "_retry_connection", True) is False


async def check_slot(session: aiohttp.ClientSession, ctx: object,
                     params: aiohttp.TraceRequestHeadersSentParams) -> None:
    """Trace hook: a fleet slot's deadline is checked right before the first bytes go
    out; the slot is the permit of the request's ``trace_request_ctx``
    (:class:`~robotgate.gate.connections.RequestTrace`)."""
    trace = getattr(ctx, "trace_request_ctx", None)
    if isinstance(trace, RequestTrace) and isinstance(trace.permit, Permit):
        trace.permit.check(asyncio.get_running_loop().time())


# The last look's trace on a session the gate did not make (see LastLook).
_LAST_LOOK = aiohttp.TraceConfig()
_LAST_LOOK.on_request_headers_sent.append(check_slot)
_LAST_LOOK.freeze()


class LastLook:
    """A middleware giving one request of a session the gate did not make (a user's,
    or an attachment's) the last look the gate's own session's trace gives: the fleet
    ``slot`` checked right before the headers are written (:func:`check_slot`; past
    it, :class:`~robotgate.politeness.fleet_slots.LateSlot`, nothing sent).

    A session's trace configs are fixed when it is made; aiohttp hands each request
    the list of its call's traces, and the writer tells every trace in it as the
    headers go: a trace of the gate's is put in that list while the request is in the
    handler, and taken out after.  An aiohttp without the list raises
    :class:`~robotgate.private_parts.PrivatePartMissing`: nothing is sent unchecked.
    """

    __slots__ = ("slot",)

    def __init__(self, slot: Permit) -> None:
        self.slot = slot

    async def __call__(self, req: aiohttp.ClientRequest,
                       handler: Handler) -> aiohttp.ClientResponse:
        try:
            traces: list[Trace] = req._traces  # private_parts.LAST_LOOK_TRACE
            session = req.session
        except AttributeError:
            raise missing(LAST_LOOK_TRACE) from None
        trace = Trace(session, _LAST_LOOK,
                      _LAST_LOOK.trace_config_ctx(trace_request_ctx=RequestTrace(None, self.slot)))
        traces.append(trace)
        try:
            return await handler(req)
        finally:
            traces.remove(trace)


def _with_params(url: str, params: Any) -> str:
    """``url`` with the query ``params`` added, as aiohttp adds them to the request it
    sends (yarl's ``extend_query``)."""
    with_params: str | None
    try:
        with_params = str(URL(url).extend_query(params))
    except Exception:  # yarl's ValueError and TypeError, its IndexError on odd authorities
        with_params = None
    if with_params is None:  # raised out here, the client's error is no context of ours
        split_origin(url)  # robotgate's InvalidURL, saying what is wrong, if it sees it
        raise InvalidURL(url, "the HTTP client cannot add its params to it")
    return with_params


def _headers_without(headers: Any, dropped: frozenset[str]) -> CIMultiDict[str] | None:
    """A call's ``headers`` (any form aiohttp takes) without the names in ``dropped``
    (lower case)."""
    if headers is None:
        return None
    items = headers.items() if hasattr(headers, "items") else headers
    return CIMultiDict((name, value) for name, value in items
                       if str(name).lower() not in dropped)


def _scoped_defaults(session: aiohttp.ClientSession) -> bool:
    """Whether ``session``'s default headers hold one that stays on its origin."""
    return any(name.lower() in ORIGIN_SCOPED for name in session.headers)


async def _without_authorization(req: aiohttp.ClientRequest,
                                 handler: Handler) -> aiohttp.ClientResponse:
    """A middleware for a hop that left its origin: no Authorization of the session's
    ``auth=`` goes with it (the jar's cookies for the new origin still do)."""
    req.headers.popall("Authorization", None)
    return await handler(req)


async def _without_scoped(req: aiohttp.ClientRequest,
                          handler: Handler) -> aiohttp.ClientResponse:
    """A middleware for a hop that left its origin: no Authorization,
    Proxy-Authorization or Cookie header of the session's defaults goes with it (the
    jar's cookies for the new origin go too then: stricter than aiohttp)."""
    for name in ORIGIN_SCOPED:
        req.headers.popall(name, None)
    return await handler(req)
