"""One request's exchange, redirects and all, over a client's :class:`Sender`: the
seam every client adapter plugs into.

The exchange is written once here, in the client-free core; an adapter implements
the small :class:`Sender` interface in its client's terms (send one request, say what
an answer says, follow or let go of a response) and calls :func:`exchange`.  The
exchange keeps, for every adapter alike:

- **one turn per request sent** (:class:`~robotgate.politeness.request_turn.RequestTurn`,
  driven through its steps by
  :func:`~robotgate.politeness.request_turn.answered_in_turn`): each redirect hop,
  and each time a client would send the same request again;
- **provenance**: the first request carries the caller's
  :class:`~robotgate.policy.provenance.Provenance` (input, or a page's pointer); each
  redirect's next hop is a pointer of the URL redirected, judged by the
  private-network rule (:mod:`robotgate.policy.hops`) with the client's resolver before
  anything is sent, its connection checked by the sender where it connects
  (:attr:`RequestTurn.guard`);
- **the redirect limit**: past ``max_redirects`` hops, :class:`~robotgate.errors.TooManyRedirects`;
- **one hop rule**: the request a redirect is followed with (method, body, the headers
  that stay on their origin) is :func:`~robotgate.policy.redirect_hop.next_hop`'s,
  handed to :meth:`Sender.redirected`; no adapter restates it;
- **no silent resend**: a client that would send a request again on its own (aiohttp
  after a kept-alive connection dropped under it) raises :class:`Resend` from
  :meth:`Sender.send` instead; the exchange sends it again in a new turn (held to its
  server's interval), at most :data:`RESENDS` times, then raises the client's error;
- **a challenge's answer is a request of its own**: a sender whose client answers a
  response by sending the same request again (a ``401`` Basic challenge answered with
  credentials, as Chromium answers it) says so in its :class:`Answer` (``again``) and
  adds the answer (its Authorization) to the next :meth:`Sender.send`; the exchange
  closes the response (:meth:`Sender.drop`) and sends the request again in a new turn
  (judged again, held to its server's interval, a request to that server), at most
  :data:`ANSWERS` times a hop.

A new client adapter (the docs' "a new client" recipe, docs/integrations.md)::

    class MySender:                       # one per call: it holds the request being sent
        method = "GET"                    # the method of the request being sent
        def prepare(self, url): ...       # the URL as the client sends it
        async def send(self, turn): ...   # send turn.url now, turn.headers over the
                                          # request's; if turn.guard, refuse (Disallowed)
                                          # a connection whose peer is_private; let
                                          # turn.slot.check() raise LateSlot at the last
                                          # look, Resend if the client would resend
        def answer(self, response): ...  # Answer(status, retry_after, location, again)
        async def redirected(self, response, hop): ...
                                          # done with a redirect's response; the next
                                          # request is hop (a NextHop: its URL, method,
                                          # whether the body goes, the headers dropped)
        def drop(self, response): ...     # close a response not handed on (its turn
                                          # failed, or it is answered again)

    done = await exchange(gate.requests, MySender(...), url, provenance,
                          resolve=my_resolver, max_redirects=20)
    try:
        ...read done.response...
    finally:
        done.turn.release()               # the server's slot, once the body is read

robots.txt requests take the same route with :func:`robots_reach`: what a robots.txt
(or tdmrep.json) request may reach before its adapter sends it.

Two adapters drive the turn
(:meth:`~robotgate.politeness.request_turn.Requests.turn`) once a request instead, because
their clients follow redirects where no exchange can stand:

- ``gate.middleware`` (aiohttp's client middleware): aiohttp follows a redirect inside
  its call and gives the middleware one request at a time, without the call's
  ``allow_redirects`` or ``max_redirects``; it sets the final response's ``history``
  from its own list and stores the cookies of the response the middleware returns
  only.  A middleware that followed the redirect itself would follow what the caller
  asked not to, past the caller's limit, with an empty ``history`` and the redirects'
  cookies lost.  It tells a hop by the aiohttp call that got the redirect.
- Scrapy: its ``RedirectMiddleware`` makes each hop a new ``Request`` through the
  scheduler, and the download ends in Scrapy's downloader after the middleware let
  the request go; a hop's provenance is read from the request (``redirect_urls``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from ..errors import Error, TooManyRedirects
from ..policy.fetch_flow import REDIRECTS, RobotsRequest, RobotsResponse
from ..policy.hops import A_POINTER, A_REDIRECT, Address, IsPrivate, Resolve, is_private
from ..policy.provenance import Provenance, pointer_of
from ..policy.redirect_hop import NextHop, next_hop
from .redirects import refused_answer, robots_hop
from .request_turn import (
    Answer,
    Requests,
    RequestTurn,
    TurnSender,
    answer_of,
    answered_in_turn,
    redirect_target,
)

__all__ = ["ANSWERS", "RESENDS", "Answer", "Exchanged", "NextHop", "Reach", "Resend", "Sender",
           "answer_of", "exchange", "first_reach", "robots_reach"]

#: What a client's send returns (its response).
R = TypeVar("R")

#: How often one request is sent again after its client found the connection dropped
#: under it (each time in a turn of its own).
RESENDS = 1

#: How often one hop is sent again because its client answers the response with the
#: same request (a ``401`` challenge's credentials; Chromium answers once).
ANSWERS = 1


class Resend(Error):
    """Raised by :meth:`Sender.send` when its client would send the request again on its
    own (the connection dropped after the request went out): that second send did not
    happen.  ``error``: the client's error, raised when the request is not sent again."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class Sender(TurnSender[R], Protocol[R]):
    """A client adapter's side of the exchange: sends one request at a time, holding
    the request being sent (method, body, headers) from one hop to the next."""

    @property
    def method(self) -> str:
        """The method of the request being sent (the redirect rule reads it)."""
        ...

    def prepare(self, url: str) -> str:
        """``url`` as the client will send it, which is what robots.txt judges (a client
        that rewrites URLs rewrites it here); raise
        :class:`~robotgate.urls.InvalidURL` for one the client cannot send."""
        ...

    def send(self, turn: RequestTurn) -> Awaitable[R]:
        """Send the request to ``turn.url`` now, with ``turn.headers`` over its own.
        When ``turn.guard``, a connection that reaches a private address (its peer, by
        the gate's ``is_private``) is refused (raise
        :class:`~robotgate.errors.Disallowed`, nothing sent), or the request is sent to
        one of ``turn.checked``.  Raise
        :class:`~robotgate.politeness.permits.LateSlot` (nothing sent) when the
        last look finds ``turn.slot`` no longer holding, and :class:`Resend` when the
        client would send the request a second time."""
        ...

    def answer(self, response: R) -> Answer:
        """What ``response`` says (its headers are in); ``location`` is read for a
        redirect's status only (:data:`~robotgate.policy.fetch_flow.REDIRECTS`);
        ``again`` True: the client answers ``response`` with the same request, which
        the next :meth:`send` sends with that answer."""
        ...

    def redirected(self, response: R, hop: NextHop) -> Awaitable[None]:
        """``response`` redirects to ``hop.url`` and is followed: be done with it (read
        or closed; its turn is released after), and make the next request ``hop``: its
        method, the body only if ``hop.keeps_body``, without the headers in
        ``hop.dropped`` (:meth:`NextHop.headers
        <robotgate.policy.redirect_hop.NextHop.headers>` filters a mapping)."""
        ...

    def drop(self, response: R) -> Awaitable[None] | None:
        """``response`` is not handed on (its turn failed after it came, or it is
        answered by sending the request again): close it."""
        ...


class Exchanged(Generic[R]):
    """The answer an exchange ends with: not a redirect, a redirect not followed, or
    one to no http(s) URL.  ``turn`` still holds the server's slot: release it once the
    response is read or closed.  ``hops``: the redirect responses followed, in order."""

    __slots__ = ("hops", "response", "turn", "url")

    def __init__(self, response: R, turn: RequestTurn, url: str,
                 hops: tuple[R, ...] = ()) -> None:
        self.response = response
        self.turn = turn
        self.url = url
        self.hops = hops


async def exchange(requests: Requests, sender: Sender[R], url: str, provenance: Provenance,
                   *, resolve: Resolve | None = None, follow: bool = True,
                   max_redirects: int = 10, paced: bool = True,
                   via: object = None) -> Exchanged[R]:
    """Send ``url`` (a request of ``provenance``) through ``sender``, following redirects
    hop by hop when ``follow``, each in its own turn (see the module).

    ``resolve``: the client's resolver, for the private-network rule's look-ups;
    ``via``: the route the requests take (a proxy, in the adapter's terms), which a
    robots.txt request their turns make takes too (the adapter's robots.txt transport
    reads it from :attr:`RobotsRequest.via <robotgate.policy.fetch_flow.RobotsRequest.via>`).
    Raises :class:`~robotgate.errors.Disallowed` (robots.txt, or the rule),
    :class:`~robotgate.errors.TooManyRedirects`, and whatever the sender raises.
    """
    what = A_POINTER
    hops: tuple[R, ...] = ()
    resends = answers = 0
    unsent: BaseException | None
    while True:
        url = sender.prepare(url)
        turn = RequestTurn(requests, url, provenance, resolve, what, via, paced)
        try:
            response, answer = await answered_in_turn(turn, sender)
        except Resend as again:  # answered_in_turn released the turn
            if resends < RESENDS:
                # Nothing was sent this time: the request again, in a new turn, at most
                # RESENDS times.
                resends += 1
                continue
            unsent = again.error
        else:
            unsent = None
        if unsent is not None:
            raise unsent  # the client's own error, raised here: not chained to the Resend
        if answer.again and answers < ANSWERS:
            # The client answers the response with the same request (a challenge's
            # credentials): a request of its own, in a new turn, never inside this one.
            answers += 1
            try:
                dropped = sender.drop(response)
                if dropped is not None:
                    await dropped
            finally:
                turn.release()
            continue
        # Kept: released below once followed, or by the caller once read.
        status = answer.status
        target = redirect_target(url, status, answer.location) \
            if follow and status in REDIRECTS else None
        if target is None:
            return Exchanged(response, turn, url, hops)
        try:
            if len(hops) >= max_redirects:
                dropped = sender.drop(response)
                if dropped is not None:
                    await dropped
                raise TooManyRedirects(url, max_redirects)
            await sender.redirected(response, next_hop(status, sender.method, url, target))
        finally:
            turn.release()
        hops += (response,)
        url, provenance, what, resends, answers = target, pointer_of(url), A_REDIRECT, 0, 0


@dataclass(frozen=True, slots=True)
class Reach:
    """Where a robots.txt (or tdmrep.json) request may connect: ``guard`` True, only to a
    public address (the adapter checks its connection's peer, or sends to one of
    ``checked``, the addresses the pointer check found public); ``what`` names the
    pointer in a refusal."""

    guard: bool = False
    checked: tuple[Address, ...] = ()
    what: str = A_POINTER


async def robots_reach(request: RobotsRequest, refuse_private: bool, resolve: Resolve,
                       private: IsPrivate = is_private) -> Reach | RobotsResponse:
    """Where ``request`` may connect, or the answer for a hop that must not be sent.

    A redirect hop of the flow is a pointer of the site that redirected, judged with
    the client's ``resolve``; the first request of an origin a public page pointed to
    (``request.guard``) must reach a public address too, whatever the look-up found.
    Every robots.txt transport asks this before it sends."""
    if request.previous is None:
        return first_reach(request)
    verdict = await robots_hop(request, refuse_private, resolve, private)
    if verdict.refused is not None:
        return refused_answer(request, verdict.refused)
    return Reach(verdict.guard, verdict.addresses, A_REDIRECT)


def first_reach(request: RobotsRequest) -> Reach:
    """:func:`robots_reach` of a flow's first request (``request.previous`` None):
    judged at once, nothing looked up, so a transport needs no coroutine for it."""
    if request.guard:
        return Reach(True, request.checked, A_POINTER)
    return _UNGUARDED


_UNGUARDED = Reach()
