"""``gate.middleware``'s path: one request of the user's own aiohttp session at a
time, a redirect's hop told by the aiohttp call that got the redirect.  (The aiohttp
adapter's modules: :mod:`robotgate.gate.aiohttp_client`.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, NamedTuple

import aiohttp
from yarl import URL

from ..policy.fetch_flow import REDIRECTS
from ..policy.hops import IsPrivate, redirect_location
from ..policy.redirect_hop import leaves_origin
from ..politeness.exchange import Answer, answer_of
from ..politeness.request_turn import RequestTurn
from ..private_parts import REQUEST_TRACES, missing
from .aiohttp_fetch import LastLook
from .aiohttp_peers import Handler, _check_peer

__all__: list[str] = []  # the adapter's own: see aiohttp_client


def without_foreign_credentials(req: aiohttp.ClientRequest, source: str,
                                location_credentials: bool) -> None:
    """A redirect's hop ``req`` from ``source`` as aiohttp built it, without the
    Authorization the hop may not carry: none named by a Location, and none on a hop to
    another origin (aiohttp drops the call's, but adds its session's ``auth=`` again)."""
    if location_credentials or leaves_origin(source, str(req.url)):
        req.headers.popall("Authorization", None)


class _Redirect(NamedTuple):
    """A redirect the middleware let through: the aiohttp call that got it (see
    :meth:`_Followed.hop_of`; held, so that its identity stays its own), the URL redirected,
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

    def hop_of(self, req: aiohttp.ClientRequest) -> tuple[object, _Redirect | None]:
        """The aiohttp call ``req`` belongs to, and the redirect whose hop ``req`` is
        (None: it follows none).

        The call is the list of traces aiohttp makes once a call and hands to every
        request it sends for it (its redirect hops, its resends).  An aiohttp without
        it raises :class:`~robotgate.private_parts.PrivatePartMissing`, every request
        alike: a hop would be taken for the caller's input."""
        try:
            call = req._traces
        except AttributeError:
            raise missing(REQUEST_TRACES) from None
        by_task = self._by_task
        if not by_task:  # no redirect anywhere: every request's case but a hop's
            return call, None
        calls = by_task.get(_task())
        redirect = calls.get(id(call)) if calls is not None else None
        return call, redirect if redirect is not None and redirect.call is call else None

    def answered(self, call: object, url: str, resp: aiohttp.ClientResponse) -> None:
        """``call``'s request to ``url`` got ``resp``: a redirect aiohttp may follow next.
        Told of a hop's answer (its redirect, followed, goes) and of every redirect; no
        other answer changes anything here: a request that is no hop has no redirect
        kept for its call (one kept holds its call, whose id no other call can share)."""
        by_task = self._by_task
        task = _task()
        calls = by_task.get(task)
        if calls is not None:
            calls.pop(id(call), None)
        location = redirect_location(resp.headers) if resp.status in REDIRECTS else None
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


def _carries_credentials(resp: aiohttp.ClientResponse, location: str) -> bool:
    """Whether the redirect to ``location`` names credentials (one that cannot be read
    counts as naming them: none are sent)."""
    try:
        target = resp.url.join(URL(location))
    except ValueError:
        return True
    return target.raw_user is not None or target.raw_password is not None


def _heard(resp: aiohttp.ClientResponse) -> Answer:
    """The answer's status and the Retry-After of a 429/503 (the only answers whose
    wait it sets)."""
    status = resp.status
    if status == 429 or status == 503:
        retry_after = resp.headers.get("Retry-After")
        if retry_after is not None:
            return Answer(status, retry_after, None)
    return answer_of(status)


class _Passed(tuple[aiohttp.ClientRequest, Handler, IsPrivate]):
    """``gate.middleware``'s side of a request's turn: the request aiohttp is sending,
    passed on down the session's middlewares (its handler), and the private-address
    rule its connection is held to.  A tuple: made once a request, with no frame of
    its own."""

    __slots__ = ()

    def send(self, turn: RequestTurn) -> Awaitable[aiohttp.ClientResponse]:
        req, handler, is_private = self
        req.headers.update(turn.headers)  # each name's values replaced, as setting would
        if turn.guard:
            _check_peer(req, turn.what, is_private)
        slot = turn.slot
        if slot is not None:  # a fleet's slot, looked at last as the headers go
            return LastLook(slot)(req, handler)
        return handler(req)

    answer = staticmethod(_heard)

    def drop(self, resp: aiohttp.ClientResponse) -> None:
        """Nothing: the response belongs to the user's aiohttp call."""
