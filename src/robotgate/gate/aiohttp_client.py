"""The aiohttp adapter: robots.txt transport, ``gate.fetch`` and ``gate.middleware``.

Everything here is about aiohttp objects; the decisions come from
:class:`~robotgate.politeness.request_turn.Requests`.
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from ..errors import BodyTooLarge, Disallowed, GateClosed, TooManyRedirects
from ..policy.content_coding import decode_capped
from ..policy.fetch_flow import REDIRECTS, RobotsRequest, RobotsResponse
from ..policy.hops import (
    A_POINTER,
    A_REDIRECT,
    REFUSED,
    IsPrivate,
    Resolve,
    is_private,
    judge_peer,
    parse_hop,
    redirect_location,
)
from ..policy.provenance import INPUT, Provenance, pointer_of
from ..policy.redirect_hop import ORIGIN_SCOPED, NextHop
from ..politeness.exchange import Answer, Resend, answer_of, exchange, robots_reach
from ..politeness.fleet_slots import Slot
from ..politeness.redirects import refused_answer
from ..politeness.request_turn import Requests, RequestTurn, sent_in_turn
from ..private_parts import CONNECTOR_RESOLVER, REQUEST_TRACES, RESPONSE_BODY, missing
from ..urls import NOT_IN_URIS, InvalidURL, redact, split_origin

__all__ = ["MAX_BODY", "REFUSED", "AiohttpClient", "AiohttpConnections", "AiohttpDisallowed",
           "AiohttpRobotsTransport", "AiohttpTooManyRedirects", "FetchCall", "Route", "read_body"]

#: ``gate.fetch``'s default ``max_bytes``: a decoded body longer than this raises
#: :class:`BodyTooLarge` (a gzip bomb inflates only as far as it is read).
MAX_BODY = 64 << 20
_CHUNK = 1 << 16
#: Whether aiohttp keeps a response's body where gate.fetch can hand it the body it read
#: (private_parts.RESPONSE_BODY).
_BODY_KEPT = hasattr(aiohttp.ClientResponse, "_body")

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
    if not _BODY_KEPT:  # the body read could not be handed over: read() would lose it
        raise missing(RESPONSE_BODY)
    resp._body = body
    await resp.read()  # as aiohttp ends a read (the connection goes back to the pool)


class AiohttpDisallowed(Disallowed, aiohttp.ClientError):
    """A refusal raised by ``gate.fetch`` and ``gate.middleware``: robots.txt forbids
    the URL, or a redirect's hop (or a public page's pointer) leads where it may not.

    It is a :class:`~robotgate.Disallowed` (``url``, ``decision``) and an
    ``aiohttp.ClientError``, so an ``except aiohttp.ClientError`` written for a plain
    session catches it too; put ``except robotgate.Disallowed`` first to tell a
    refusal from a failure.  Nothing was sent.
    """


class AiohttpTooManyRedirects(TooManyRedirects, aiohttp.TooManyRedirects):
    """``gate.fetch`` was redirected more than ``max_redirects`` times: a
    :class:`~robotgate.TooManyRedirects` and the ``aiohttp.TooManyRedirects`` plain
    aiohttp raises (``history``: the redirects followed, and the last one)."""

    def __init__(self, url: str, limit: int, request_info: aiohttp.RequestInfo,
                 history: tuple[aiohttp.ClientResponse, ...]) -> None:
        aiohttp.TooManyRedirects.__init__(self, request_info, history)
        self.url = redact(url)
        self.limit = limit


def _refusal(refused: Disallowed) -> AiohttpDisallowed:
    """The core's refusal as aiohttp's caller gets it (its traceback kept)."""
    if isinstance(refused, AiohttpDisallowed):
        return refused
    return AiohttpDisallowed(refused.url, refused.decision).with_traceback(refused.__traceback__)


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
    its headers and the server's slot is held until the block exits.  ``sent``: the
    Unix time its request left (the first hop's), after any wait for its turn
    (None until then); ``gate.crawl`` records it as the request's start.
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


def proxy_route(kwargs: dict[str, Any]) -> Route | None:
    """The proxy a call's aiohttp arguments send it through (None: none of its own)."""
    proxy = kwargs.get("proxy")
    if proxy is None:
        return None
    return Route(None, proxy, kwargs.get("proxy_auth"), kwargs.get("proxy_headers"))


class _FetchSender:
    """``gate.fetch``'s side of the exchange: one aiohttp request at a time through the
    gate's or the user's session, no redirect followed by aiohttp (the exchange does)."""

    __slots__ = ("_call", "_client", "_dropped", "_kwargs", "_max_bytes", "_sending",
                 "_target", "hops", "last", "method", "url")

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
        #: The URL being sent, as the gate's errors name it.
        self.url = ""
        # What dropped the connection under the request being sent (see _sent_once).
        self._dropped: BaseException | None = None
        #: The redirect responses followed, and the last response (for aiohttp's
        #: TooManyRedirects).
        self.hops: tuple[aiohttp.ClientResponse, ...] = ()
        self.last: aiohttp.ClientResponse | None = None

    def prepare(self, url: str) -> str:
        if _REWRITTEN(url) is None:  # most URLs: sent as they are (for_aiohttp's first case)
            self._target = url
            return url
        self._target, url = for_aiohttp(url)
        return url

    def send(self, turn: RequestTurn) -> Awaitable[aiohttp.ClientResponse]:
        client = self._client
        # The trace hook's last look (only the owned session has it): a fleet slot
        # found past as the headers go out raises LateSlot, nothing sent.
        slot = turn.slot
        kwargs = self._kwargs
        extra = {**kwargs, "trace_request_ctx": slot} if slot is not None and client.owned \
            else kwargs
        if self._call is not None and not self.hops:
            self._call.sent = time.time()  # as it leaves: in a fleet, after the wait for a slot
        middlewares = self._sending
        if turn.guard:
            middlewares = (*middlewares, _peer_guard(client.is_private, turn.what))
        self.url = turn.url
        session = client.session()
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
            # default Authorization or Cookie header is taken off the built request.
            kwargs.pop("auth", None)
            kwargs.pop("cookies", None)
            if _scoped_defaults(self._client.session()):
                self._sending = (*self._sending, _without_scoped)
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


class _Redirect(NamedTuple):
    """A redirect the middleware let through: the aiohttp call that got it (see
    :func:`_call_of`; held, so that its identity stays its own), the URL redirected,
    and whether the Location carried credentials (aiohttp would send them)."""

    call: object
    source: str
    credentials: bool


class _Followed:
    """The redirects the middleware let through, for the requests that follow them.

    aiohttp follows a redirect inside its call: the next request that call sends is the
    hop (or aiohttp's resend of it), and nothing else is.  A client middleware is given
    no link between the two but the call's own objects on each request; the redirect
    is kept by the task the call runs in (aiohttp awaits its hops in the caller's task)
    and matched by the call, so a request of another call (a later one of yours to the
    same URL, one a middleware makes in between) is never taken for the hop.  A task
    keeps the last :data:`_NESTED` calls' redirects: calls nest only as deep as
    middlewares that make requests of their own; an older one belongs to a call that
    ended without following it (``allow_redirects=False``, refused, too many).  Entries
    go when their task is done.
    """

    __slots__ = ("_by_task",)

    def __init__(self) -> None:
        self._by_task: dict[asyncio.Task[Any], dict[int, _Redirect]] = {}

    def by(self, call: object) -> _Redirect | None:
        """The redirect whose hop ``call``'s request is (None: it follows none)."""
        by_task = self._by_task
        if not by_task:  # no redirect anywhere: every request's case but a hop's
            return None
        calls = by_task.get(_task())
        redirect = calls.get(id(call)) if calls is not None else None
        return redirect if redirect is not None and redirect.call is call else None

    def answered(self, call: object, url: str, resp: aiohttp.ClientResponse) -> None:
        """``call``'s request to ``url`` got ``resp``: a redirect aiohttp may follow next."""
        by_task = self._by_task
        location = redirect_location(resp.headers) if resp.status in REDIRECTS else None
        if location is None and not by_task:
            return
        task = _task()
        calls = by_task.get(task)
        if calls is not None:
            calls.pop(id(call), None)
        if location is None:
            return
        if calls is None:  # kept until the task is done: one callback a task
            calls = by_task[task] = {}
            task.add_done_callback(self._done)
        elif len(calls) >= _NESTED:
            del calls[next(iter(calls))]
        calls[id(call)] = _Redirect(call, url, _carries_credentials(resp, location))

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._by_task.pop(task, None)


#: How many calls' redirects a task keeps (:class:`_Followed`).
_NESTED = 8


def _task() -> asyncio.Task[Any]:
    task = asyncio.current_task()
    if task is None:  # aiohttp's own timer needs one too
        raise RuntimeError("gate.middleware runs inside an asyncio task")
    return task


def _call_of(req: aiohttp.ClientRequest) -> object:
    """The aiohttp call ``req`` belongs to: the list of traces aiohttp makes once a call
    and hands to every request it sends for it (its redirect hops, its resends).  An
    aiohttp without it raises :class:`~robotgate.private_parts.PrivatePartMissing`: a
    hop would be taken for the caller's input."""
    try:
        return req._traces
    except AttributeError:
        raise missing(REQUEST_TRACES) from None


def _carries_credentials(resp: aiohttp.ClientResponse, location: str) -> bool:
    """Whether the redirect to ``location`` names credentials (one that cannot be read
    counts as naming them: none are sent)."""
    try:
        target = resp.url.join(URL(location))
    except ValueError:
        return True
    return target.raw_user is not None or target.raw_password is not None


class AiohttpConnections:
    """How the gate's requests connect: its aiohttp session (``session()`` makes the
    owned one on first use), the headers it sends, the private-network rule, and the
    resolver its connections use."""

    def __init__(self, session: Callable[[], aiohttp.ClientSession], headers: dict[str, str],
                 owned: bool, refuse_private: bool = True,
                 is_private: IsPrivate = is_private) -> None:
        self.session = session
        self.headers = headers
        self.owned = owned
        self.refuse_private = refuse_private
        self.is_private = is_private
        #: The owned session's resolver (``pace_by="ip"``); hops ask the connector's.
        self.resolver: aiohttp.abc.AbstractResolver | None = None

    async def addresses(self, host: str) -> list[str]:
        """``host``'s addresses by the resolver the gate's session connects with."""
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
        found = await self.addresses(host)
        return found[0] if found else host


class AiohttpClient:
    """Sends requests through the gate's ``connections``, each in its turn of ``requests``.

    Responses in flight are tracked so that :meth:`close_responses` can end them.
    """

    def __init__(self, connections: AiohttpConnections, requests: Requests) -> None:
        self.connections = connections
        self.requests = requests
        self.session = connections.session
        self.resolve = connections.addresses  # made once: a call would make one each
        self.headers = headers = connections.headers
        self.owned = owned = connections.owned
        self.refuse_private = connections.refuse_private
        self.is_private = connections.is_private
        # Our headers for a user's session, made once (see _sending): handed over as the
        # call's, not set by a middleware, whose closure and coroutines would stay alive
        # across every page's wait.
        self._call_headers: CIMultiDict[str] | None = None if owned else CIMultiDict(headers)
        self._stamping: tuple[Middleware, ...] = (self._stamp,)
        self._open: set[aiohttp.ClientResponse] = set()
        self._followed = _Followed()
        self._body_unheard: bool | None = None  # known once the session is (body_unheard)
        self.closed = False

    # -- gate.fetch -----------------------------------------------------------------

    async def fetch(self, url: str, method: str, kwargs: dict[str, Any],
                    max_bytes: int | None = MAX_BODY,
                    call: FetchCall | None = None,
                    provenance: Provenance = INPUT) -> aiohttp.ClientResponse:
        """Send ``url`` and read its body, hop by hop through redirects: the core's
        exchange (:mod:`robotgate.politeness.exchange`) over a :class:`_FetchSender`.

        ``provenance``: who pointed at ``url`` (the user's own input, or a page's
        pointer, judged as a redirect hop is: see :mod:`robotgate.policy.hops`).
        A ``proxy=`` the call gives is the route robots.txt is asked by too.

        With ``call`` (``async with``) the last response is kept there for its
        exit; when it streams, the response is unread and its turn, still holding
        the server's slot, is kept there too.  A body longer than ``max_bytes``
        (not None) raises :class:`BodyTooLarge`.
        """
        stream = call is not None and call._stream
        follow = kwargs.pop("allow_redirects", True)
        max_redirects = kwargs.pop("max_redirects", 10)
        params = kwargs.pop("params", None)
        if params:
            url = _with_params(url, params)  # robots.txt judges the URL sent
        sender = _FetchSender(self, method, kwargs, max_bytes, call)
        try:
            done = await exchange(self.requests, sender, url, provenance,
                                  resolve=self.resolve, follow=follow,
                                  max_redirects=max_redirects,
                                  via=proxy_route(kwargs) if "proxy" in kwargs else None)
        except Disallowed as refused:
            raise _refusal(refused) from None
        except TooManyRedirects as many:
            last = sender.last
            assert last is not None
            raise AiohttpTooManyRedirects(many.url, many.limit, last.request_info,
                                          (*sender.hops, last)) from None
        except aiohttp.ClientError as exc:  # a user's session's request (see _FetchSender.send)
            self._raise_ours(exc, sender.url)
        resp, turn = done.response, done.turn
        if stream:
            # The response holds the server's slot: the caller reads it and lets go.
            assert call is not None
            call._resp, call._turn = resp, turn
            return resp
        try:
            # As sender.read, without its coroutine.
            await _read(resp, done.url, max_bytes, self.body_unheard())
        except BaseException as exc:
            sender.unread(resp, done.url, exc)
        finally:
            self._open.discard(resp)
            turn.release()
        if call is not None:
            call._resp = resp
        return resp

    def body_unheard(self) -> bool:
        """Whether no trace of the session hears a response's body read (aiohttp's
        ``on_response_chunk_received``, which its read of the stream sends)."""
        unheard = self._body_unheard
        if unheard is None:
            unheard = self._body_unheard = not any(
                trace.on_response_chunk_received for trace in self.session().trace_configs)
        return unheard

    def _raise_ours(self, exc: aiohttp.ClientError, url: str) -> NoReturn:
        """Raise the client's error ``exc`` sending ``url`` as the gate's, where it
        is the gate's doing (closed) or would show the URL (its password)."""
        if self.closed:
            raise _ours(exc, url, True) from exc
        if isinstance(exc, aiohttp.InvalidURL):
            raise _ours(exc, url, False) from None
        raise exc

    def _drop(self, resp: aiohttp.ClientResponse) -> None:
        """A response whose turn failed after it came: closed, no longer tracked."""
        resp.close()
        self._open.discard(resp)

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

    async def _stamp(self, req: aiohttp.ClientRequest,
                     handler: Handler) -> aiohttp.ClientResponse:
        req.headers.update(self.headers)  # ours win over the session's and the call's
        return await handler(req)

    def forget(self, resp: aiohttp.ClientResponse) -> None:
        """A streamed response was let go."""
        self._open.discard(resp)

    # -- gate.middleware ---------------------------------------------------------------

    def middleware_for(self, provenance: Provenance) -> Middleware:
        """:meth:`middleware` for a request of ``provenance`` (and its redirect hops)."""

        def middleware(req: aiohttp.ClientRequest,
                       handler: Handler) -> Awaitable[aiohttp.ClientResponse]:
            return self.middleware(req, handler, provenance)

        return middleware

    async def middleware(self, req: aiohttp.ClientRequest, handler: Handler,
                         provenance: Provenance = INPUT) -> aiohttp.ClientResponse:
        """Check and pace one request of the user's own session (each redirect hop too):
        its :class:`~robotgate.politeness.request_turn.RequestTurn`; ``provenance``:
        who pointed at the request aiohttp was asked for.

        aiohttp follows redirects itself, calling this once a request it sends: a
        request its call sends after a redirect this let through is that redirect's
        hop, a pointer of the URL redirected (see :class:`_Followed`)."""
        url = str(req.url)
        session = getattr(req, "session", None)
        followed = self._followed
        call = _call_of(req)
        what = A_POINTER
        redirect = followed.by(call)
        if redirect is not None:
            provenance, what = pointer_of(redirect.source), A_REDIRECT
            if redirect.credentials:
                req.headers.popall("Authorization", None)  # never credentials from a Location
        turn = self.requests.turn(
            url, provenance, None if provenance.is_input else _resolve_with(session), what=what)
        # robots.txt is asked through the user's session, and its proxy if any.
        turn.via = Route(session, req.proxy, req.proxy_auth, req.proxy_headers)

        try:
            resp = await sent_in_turn(turn, _Passed(req, handler, self.is_private))
        except Disallowed as refused:
            raise _refusal(refused) from None
        followed.answered(call, url, resp)
        return resp

    # -- the end -------------------------------------------------------------------

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
        route = request.via if isinstance(request.via, Route) else _DIRECT
        session = route.session
        if session is None or session.closed:
            session = client.session()
        # The resolver has no timer of its own.
        reach = await asyncio.wait_for(robots_reach(
            request, client.refuse_private, _resolve_with(session), client.is_private),
            _left(request))
        if isinstance(reach, RobotsResponse):
            return reach  # a hop refused: not sent
        guard = (_peer_guard(client.is_private, reach.what),) if reach.guard else ()
        try:
            return await self._send_guarded(request, guard, route)
        except Disallowed as no:  # the connection reached a private address: not sent
            return refused_answer(request, no.decision)

    async def _send_guarded(self, request: RobotsRequest, guard: tuple[Middleware, ...],
                            route: Route) -> RobotsResponse:
        client = self.client
        headers = self._headers(request)
        via = route.session
        if via is not None and not via.closed:
            try:
                return await _get(via, request, headers, guard, route)
            except aiohttp.ClientError:
                if not via.closed:
                    raise
                # The user closed that session meanwhile: not the site's failure.
        return await _get(client.session(), request, headers, guard, route)


async def _get(session: aiohttp.ClientSession, request: RobotsRequest,
               headers: dict[str, str], guard: tuple[Middleware, ...] = (),
               route: Route | None = None) -> RobotsResponse:
    # Our own middleware list: the session's (gate.middleware among them) stays out.
    left = _left(request)
    timeout = aiohttp.ClientTimeout(total=left) if left is not None else session.timeout
    proxy = route.proxy_kwargs() if route is not None and route.proxy is not None else {}
    # The raw bytes, decoded by the core as every adapter's are: aiohttp reads one
    # coding only (not "x-gzip", "gzip, br"...) and leaves the rest as they came.
    async with session.get(request.url, headers=headers, allow_redirects=False,
                           raise_for_status=False, middlewares=(_once(), *guard),
                           timeout=timeout, auto_decompress=False, **proxy) as resp:
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
    """Trace hook: a fleet slot's deadline is checked right before the first bytes go
    out; the slot is the request's ``trace_request_ctx`` (see ``_send``)."""
    slot = getattr(ctx, "trace_request_ctx", None)
    if isinstance(slot, Slot):
        slot.check(asyncio.get_running_loop().time())


def _peer_guard(private: IsPrivate, what: str = A_REDIRECT) -> Middleware:
    """A middleware that checks the address the request's connection reached before
    anything is sent on it (:func:`_check_peer`)."""

    async def middleware(req: aiohttp.ClientRequest, handler: Handler) -> aiohttp.ClientResponse:
        _check_peer(req, what, private)
        return await handler(req)

    return middleware


def _check_peer(req: aiohttp.ClientRequest, what: str, private: IsPrivate) -> None:
    """Make ``req`` refuse to be sent on a connection to a private address: the
    address judged is the socket's peer, whichever look-up (or pooled connection)
    gave it, so that a name answering public to the pointer check and private to
    the connector (DNS rebinding) is refused too.  The connection is closed, not
    pooled.  Through a proxy the proxy connects: the check's look-up judged.
    """
    if req.proxy is not None:
        return
    send = req.send
    host = req.url.host or ""

    async def send_checked(conn: aiohttp.connector.Connection) -> aiohttp.ClientResponse:
        transport = conn.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        address = str(peer[0]) if isinstance(peer, tuple) and peer else repr(peer)
        refused = judge_peer(host, address, private, what)
        if refused is not None:
            hop = parse_hop(str(req.url))
            raise Disallowed(hop.url if hop is not None else str(req.url), refused)
        return await send(conn)

    req.send = send_checked  # type: ignore[method-assign]


def _resolver_of(session: aiohttp.ClientSession) -> aiohttp.abc.AbstractResolver | None:
    """The resolver ``session``'s connections are made with (None: not a TCP connector).
    A TCP connector without it raises
    :class:`~robotgate.private_parts.PrivatePartMissing` (aiohttp has no public way to
    ask): every hop would be refused, and ``pace_by="ip"`` pace by name."""
    connector = session.connector
    if not isinstance(connector, aiohttp.TCPConnector):
        return None
    try:
        return connector._resolver
    except AttributeError:
        raise missing(CONNECTOR_RESOLVER) from None


def _resolve_with(session: aiohttp.ClientSession | None) -> Resolve:
    """Look-ups by ``session``'s connector, the resolver it connects with (none: a hop's
    target reaches nothing, and is refused)."""
    resolver = _resolver_of(session) if session is not None else None

    async def resolve(host: str) -> list[str]:
        if resolver is None:
            return []
        infos = await resolver.resolve(host, 0, socket.AF_UNSPEC)
        return [info["host"] for info in infos]

    return resolve


def _read(resp: aiohttp.ClientResponse, url: str, max_bytes: int | None,
          unheard: bool) -> Awaitable[object]:
    """Read the body, within ``max_bytes`` decoded bytes when not None.  A body already
    whole and within the limit (most pages: they come with their headers) is taken
    from the stream at once when ``unheard`` (no trace hears the read), not through
    aiohttp's read of the stream (coroutines a chunk); ``resp.read()`` then only ends
    the read as aiohttp does, and returns the body kept.  Any other is read in chunks."""
    content = resp.content
    if content.is_eof() and (max_bytes is None or content.total_bytes <= max_bytes):
        if unheard and _BODY_KEPT:
            resp._body = content.read_nowait()
        return resp.read()
    if max_bytes is None:
        return resp.read()
    return _read_within(resp, max_bytes, url)


def _closed_reading(url: str) -> GateClosed:
    return GateClosed(f"the gate was closed while reading {redact(url)}")


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


async def _without_scoped(req: aiohttp.ClientRequest,
                          handler: Handler) -> aiohttp.ClientResponse:
    """A middleware for a hop that left its origin: no Authorization,
    Proxy-Authorization or Cookie header of the session's defaults goes with it (the
    jar's cookies for the new origin go too then: stricter than aiohttp)."""
    for name in ORIGIN_SCOPED:
        req.headers.popall(name, None)
    return await handler(req)


def _left(request: RobotsRequest) -> float | None:
    """Seconds left until the request's deadline (None: no deadline)."""
    if request.deadline is None:
        return None
    return max(request.deadline - time.time(), 0.001)


def _heard(resp: aiohttp.ClientResponse) -> Answer:
    """The answer's status and the Retry-After of a 429/503."""
    retry_after = _retry_after(resp)
    return answer_of(resp.status) if retry_after is None else Answer(resp.status, retry_after,
                                                                     None)


class _Passed:
    """``gate.middleware``'s side of a request's turn: the request aiohttp is sending,
    passed on down the session's middlewares."""

    __slots__ = ("_handler", "_is_private", "_req")

    def __init__(self, req: aiohttp.ClientRequest, handler: Handler,
                 is_private: IsPrivate) -> None:
        self._req = req
        self._handler = handler
        self._is_private = is_private

    def send(self, turn: RequestTurn) -> Awaitable[aiohttp.ClientResponse]:
        req = self._req
        req.headers.update(turn.headers)  # each name's values replaced, as setting would
        if turn.guard:
            _check_peer(req, turn.what, self._is_private)
        return self._handler(req)

    answer = staticmethod(_heard)

    def drop(self, resp: aiohttp.ClientResponse) -> None:
        """Nothing: the response belongs to the user's aiohttp call."""


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
