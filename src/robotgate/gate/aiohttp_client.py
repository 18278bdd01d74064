"""The aiohttp adapter: ``gate.fetch``, ``gate.middleware`` and the robots.txt transport.

Everything here is about aiohttp objects; the decisions come from
:class:`~robotgate.politeness.request_turn.Requests`.  This module holds what the
jobs share (:class:`AiohttpConnections`, :class:`AiohttpClient`, the errors); each job
has a module of its own: :mod:`~robotgate.gate.aiohttp_fetch` (``gate.fetch``'s
request), :mod:`~robotgate.gate.aiohttp_middleware` (``gate.middleware``'s path),
:mod:`~robotgate.gate.aiohttp_robots` (the robots.txt transport),
:mod:`~robotgate.gate.aiohttp_bodies` (reading bodies) and
:mod:`~robotgate.gate.aiohttp_peers` (the peer guard and look-ups).
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn
from urllib.parse import urljoin, urlsplit

import aiohttp
from multidict import CIMultiDict

from ..errors import Disallowed, GateClosed, TooManyRedirects, WaitsOnItself
from ..policy.fetch import LocalFailure, local_failure
from ..policy.fetch_flow import REDIRECTS
from ..policy.hops import A_POINTER, A_REDIRECT, REFUSED, IsPrivate, is_private
from ..policy.provenance import INPUT, Provenance, pointer_of
from ..politeness.exchange import exchange
from ..politeness.request_turn import Requests, answered_in_turn
from ..politeness.robots_fetcher import open_file_limit
from ..urls import InvalidURL, redact
from .aiohttp_bodies import MAX_BODY, _read, read_body
from .aiohttp_fetch import (
    FetchCall,
    _FetchSender,
    _with_params,
    check_slot,
    for_aiohttp,
    resends_off,
    without_resends,
    yarl_form,
)
from .aiohttp_middleware import _Followed, _Passed, without_foreign_credentials
from .aiohttp_peers import Handler, Middleware, _resolve_with, _resolver_of
from .aiohttp_robots import AiohttpRobotsTransport, Route, proxy_route

__all__ = [
    "MAX_BODY",
    "REFUSED",
    "AiohttpClient",
    "AiohttpConnections",
    "AiohttpDisallowed",
    "AiohttpInvalidURL",
    "AiohttpLocalFailure",
    "AiohttpNonHttpRedirect",
    "AiohttpNonHttpURL",
    "AiohttpRobotsTransport",
    "AiohttpTooManyRedirects",
    "AiohttpWaitsOnItself",
    "FetchCall",
    "Handler",
    "Middleware",
    "Route",
    "check_slot",
    "for_aiohttp",
    "proxy_route",
    "read_body",
    "resends_off",
    "without_resends",
    "yarl_form",
]


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
        # aiohttp's args are its request_info and history (the URL whole, the request's
        # Authorization): what pickling and error trackers read is the message instead.
        self.args = (str(self),)

    def __repr__(self) -> str:
        # aiohttp's repr shows its request's URL whole: said as its message says it.
        return f"{type(self).__name__}({str(self)!r})"


class AiohttpWaitsOnItself(WaitsOnItself, aiohttp.ClientError):
    """:class:`~robotgate.WaitsOnItself` as ``gate.fetch`` and ``gate.middleware`` raise
    it: also an ``aiohttp.ClientError``.  Nothing was sent."""


def _self_wait(waits: WaitsOnItself) -> AiohttpWaitsOnItself:
    """The core's refusal of a request that would wait on itself, as aiohttp's caller
    gets it."""
    if isinstance(waits, AiohttpWaitsOnItself):
        return waits
    return AiohttpWaitsOnItself(waits.url, waits.key).with_traceback(waits.__traceback__)


class AiohttpLocalFailure(LocalFailure, aiohttp.ClientOSError):
    """:class:`~robotgate.LocalFailure` as ``gate.fetch`` and ``gate.middleware`` raise
    it: also the ``aiohttp.ClientOSError`` (the base of the ``ClientConnectorError``
    plain aiohttp raises out of descriptors), so that ``except aiohttp.ClientError``
    catches it; put ``except robotgate.LocalFailure`` first to keep the page."""


def _local(short: LocalFailure) -> AiohttpLocalFailure:
    if isinstance(short, AiohttpLocalFailure):
        return short
    return AiohttpLocalFailure(short.what, short.resource, short.remedy, short.errno)


class AiohttpInvalidURL(InvalidURL, aiohttp.InvalidUrlClientError):
    """A URL ``gate.fetch`` or ``gate.middleware`` cannot send: robotgate's
    :class:`~robotgate.urls.InvalidURL` (a ``ValueError``; the message and ``url``
    without the password) and the ``aiohttp.InvalidUrlClientError`` plain aiohttp
    raises, so that ``except aiohttp.InvalidURL`` or ``except aiohttp.ClientError``
    catches it."""

    def __init__(self, url: object, why: str) -> None:
        InvalidURL.__init__(self, url, why)
        self._description = self.why

    @property  # aiohttp's is read-only; robotgate's InvalidURL sets it
    def url(self) -> Any:
        return self._url

    @url.setter
    def url(self, url: Any) -> None:
        self._url = url

    def __str__(self) -> str:
        return Exception.__str__(self)  # robotgate's message, not aiohttp's "url - why"


class AiohttpNonHttpURL(AiohttpInvalidURL, aiohttp.NonHttpUrlClientError):
    """:class:`AiohttpInvalidURL` for a URL that is not http(s): the
    ``aiohttp.NonHttpUrlClientError`` plain aiohttp raises for it."""


class AiohttpNonHttpRedirect(AiohttpNonHttpURL, aiohttp.NonHttpUrlRedirectClientError):
    """A redirect ``gate.fetch`` follows whose ``Location`` is not http(s) (``ftp:``,
    ``mailto:``): the ``aiohttp.NonHttpUrlRedirectClientError`` plain aiohttp raises
    for it, and robotgate's :class:`~robotgate.urls.InvalidURL`; ``url``: the Location
    (the message without its password).  Nothing was sent to it; the 3xx is closed."""


def non_http_location(url: str, resp: aiohttp.ClientResponse) -> str | None:
    """The Location of a redirect ``resp`` (the answer to ``url``) that aiohttp would
    refuse to follow as not http(s) (None: no redirect, or one to http(s))."""
    if resp.status not in REDIRECTS:
        return None
    location = resp.headers.get("Location")
    if not location:
        return None
    try:
        scheme = urlsplit(urljoin(url, location.strip())).scheme.lower()
    except ValueError:
        return None  # aiohttp's other error, for a Location that is no URL: not this one
    return location if scheme not in ("", "http", "https") else None


def client_invalid_url(bad: InvalidURL) -> AiohttpInvalidURL:
    """robotgate's :class:`~robotgate.urls.InvalidURL` as aiohttp's caller gets it."""
    if isinstance(bad, AiohttpInvalidURL):
        return bad
    url = bad.url
    kind = AiohttpInvalidURL
    if isinstance(url, str) and not url.lower().startswith(("http://", "https://")):
        kind = AiohttpNonHttpURL
    return kind(url, bad.why).with_traceback(bad.__traceback__)


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
    return client_invalid_url(InvalidURL(url, "the HTTP client refuses it"))


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
        invalid: AiohttpInvalidURL | None = None  # raised out of the handlers: no context
        try:
            if params:
                url = _with_params(url, params)  # robots.txt judges the URL sent
        except InvalidURL as bad:
            invalid = client_invalid_url(bad)
        if invalid is not None:
            raise invalid
        sender = _FetchSender(self, method, kwargs, max_bytes, call)
        try:
            done = await exchange(self.requests, sender, url, provenance,
                                  resolve=self.resolve, follow=follow,
                                  max_redirects=max_redirects,
                                  via=self.route_of(kwargs))
        except Disallowed as refused:
            raise _refusal(refused) from None
        except WaitsOnItself as waits:
            raise _self_wait(waits) from None
        except InvalidURL as bad:
            invalid = client_invalid_url(bad)
        except TooManyRedirects as many:
            last = sender.last
            assert last is not None
            raise AiohttpTooManyRedirects(many.url, many.limit, last.request_info,
                                          (*sender.hops, last)) from None
        except aiohttp.ClientError as exc:  # a user's session's request (see _FetchSender.send)
            self._raise_ours(exc, sender.url)
        if invalid is not None:
            raise invalid
        resp, turn = done.response, done.turn
        foreign = non_http_location(done.url, resp) if follow else None
        if foreign is not None:  # aiohttp alone raises for it; the core returned the 3xx
            resp.close()
            self._open.discard(resp)
            turn.release()
            raise AiohttpNonHttpRedirect(foreign, "a redirect to a URL that is not http(s)")
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

    @staticmethod
    def route_of(kwargs: dict[str, Any]) -> Route | None:
        """The route a ``gate.fetch`` call's aiohttp arguments send it by (its proxy),
        which its origin's robots.txt is asked by too (None: the session's own)."""
        return proxy_route(kwargs) if "proxy" in kwargs else None

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
        is the gate's doing (closed) or would show the URL (its password), and as
        :class:`~robotgate.LocalFailure` where this machine could not send it."""
        if self.closed:
            raise _ours(exc, url, True) from exc
        if isinstance(exc, aiohttp.InvalidURL):
            raise _ours(exc, url, False) from None
        shortage = local_failure(exc, redact(url), open_file_limit())
        if shortage is not None:  # never sent: this machine's failure, not the site's
            raise _local(shortage) from exc
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
        followed = self._followed
        call, redirect = followed.hop_of(req)
        what = A_POINTER
        if redirect is not None:
            provenance, what = pointer_of(redirect.source), A_REDIRECT
            without_foreign_credentials(req, redirect.source, redirect.credentials)
        # A pointer's target is looked up as the session connects (the input's never is).
        resolve = None if provenance is INPUT else _resolve_with(getattr(req, "session", None))
        # robots.txt is asked through the user's session, and its proxy if any: the
        # request is its route, read when its origin's robots.txt is asked (aiohttp_robots).
        # Positional: a keyword call into the compiled core costs more than the turn.
        turn = self.requests.turn(url, provenance, resolve, True, what, req)
        invalid: AiohttpInvalidURL | None = None  # raised out of the handlers: no context
        try:
            resp, _ = await answered_in_turn(turn, _Passed((req, handler, self.is_private)))
        except Disallowed as refused:
            raise _refusal(refused) from None
        except WaitsOnItself as waits:
            raise _self_wait(waits) from None
        except InvalidURL as bad:
            invalid = client_invalid_url(bad)
        except LocalFailure as short:  # robots.txt's, asked for the request
            raise _local(short) from short
        except aiohttp.ClientError as exc:
            shortage = local_failure(exc, redact(url), open_file_limit())
            if shortage is None:
                raise
            raise _local(shortage) from exc  # never sent: this machine's failure
        if invalid is not None:
            raise invalid
        turn.release()  # answered: the response is the user's call's now
        if redirect is not None or resp.status in REDIRECTS:  # a hop's answer, or a redirect
            followed.answered(call, url, resp)
        return resp

    # -- the end -------------------------------------------------------------------

    def close_responses(self) -> None:
        """End every response still being read: its reader gets :class:`GateClosed`."""
        self.closed = True
        for resp in list(self._open):
            resp.close()
        self._open.clear()
