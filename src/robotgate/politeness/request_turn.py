"""One page request's turn: everything the gate does for it, whatever client sends it.

Every client adapter (``gate.fetch``, ``gate.middleware``, the httpx transport, the
Scrapy middleware; ``gate.crawl`` rides on ``gate.fetch``) makes one
:class:`RequestTurn` per request it sends (each redirect hop is a request) and
drives it through the same steps:

1. :meth:`~RequestTurn.begin`: a page's pointer (a redirect hop, a link) judged by
   where it leads, robots.txt's verdict (:class:`~robotgate.errors.Disallowed`
   if forbidden), then the server's turn under its caps and, in a fleet, its slot.
   None when the request may go at once (a cached, allowed and due request costs
   no coroutine), else an awaitable.
2. :attr:`~RequestTurn.headers`: set on the request, over the client's and the caller's.
3. :meth:`~RequestTurn.leaving`, right before the client sends: a fleet slot already
   past is given up and another awaited (as often as the loop is late), and the
   send time is taken.  A request paced here takes its server's interval as its
   permit (:class:`~robotgate.politeness.scheduler.PacedHere`: the interval from the
   last request's first bytes), with its crawl lease's fence when paced under one
   (past it: :class:`~robotgate.store.leases.LapsedLease`, not sent).
   A client that looks at the permit (:attr:`~RequestTurn.slot`) again at the last
   moment (every adapter, as close to its first bytes as its client lets it: see
   docs/fleet.md, *The last look*) and finds it no longer holds calls
   :meth:`~RequestTurn.missed`, then leaves again; Scrapy, whose download runs outside
   the turn's driver, calls :meth:`~RequestTurn.gave_up` and sends the request again in
   a turn of its own.
4. :meth:`~RequestTurn.answered` with the answer's status and ``Retry-After``: the
   turn tells of its own answer (its URL, status and time); the server's pacing,
   back-off and store learn from it.
5. :meth:`~RequestTurn.release`, however the request ends; later calls do nothing.

Every turn carries its request's :class:`~robotgate.policy.provenance.Provenance`:
the caller's own input, or a page's pointer (a link, a subresource, a redirect's next
hop: :func:`redirect_target` of the answer, a pointer of the URL that was redirected),
judged by the private-network rule before anything else.  A browser's subresource takes an unpaced
turn (``paced=False``): judged and capped, held while its server rests, not to the
interval (see :class:`RequestTurn`).

:func:`answered_in_turn` drives steps 1 to 4 around a client's :class:`TurnSender`
(its send, how it hears an answer, its drop), for the exchange
(:mod:`robotgate.politeness.exchange`: ``gate.fetch``, the httpx transport and the
other :class:`~robotgate.politeness.exchange.Sender` adapters) and ``gate.middleware``
(which releases the turn once answered: aiohttp follows the redirects itself);
:func:`sent_in_turn` does both in one call.  The Scrapy middleware drives the steps
itself: its request and its response come in separate callbacks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Coroutine, Mapping
from functools import lru_cache
from typing import Any, NamedTuple, Protocol, TypeVar
from urllib.parse import urljoin

from ..errors import Disallowed, GateClosed, WaitsOnItself
from ..events import ResponseAnswered, TurnWaited
from ..policy.fetch_flow import REDIRECTS
from ..policy.hops import A_REDIRECT, REFUSED, Address, IsPrivate, Resolve, is_private, parse_hop
from ..policy.network import strip_credentials
from ..policy.provenance import Provenance
from ..policy.site import SiteRules
from ..urls import InvalidURL, as_sent, split_origin
from .emitter import Emitter
from .fleet_slots import Slot
from .permits import LateSlot, Permit
from .redirects import provenance_verdict
from .scheduler import Group, PacedHere
from .servers import Servers, Started
from .verdicts import Verdicts

__all__ = ["REFUSED", "Answer", "RequestTurn", "Requests", "TurnSender", "answer_of",
           "answered_in_turn", "redirect_target", "sent_in_turn"]

#: What a client's send returns (its response).
R = TypeVar("R")


class Requests:
    """What every request's turn shares: robots.txt's verdicts, the servers, the
    gate's headers and the redirect hop rule; :meth:`turn` makes one request's turn."""

    def __init__(self, verdicts: Verdicts, servers: Servers, *,
                 headers: Mapping[str, str] | None = None, refuse_private: bool = True,
                 private: IsPrivate = is_private, events: Emitter | None = None) -> None:
        self.verdicts = verdicts
        self.servers = servers
        #: What every request sends (User-Agent, From), over the client's and the caller's.
        self.headers: Mapping[str, str] = dict(headers or {})
        #: Whether a redirect from a public site into a private address is refused,
        #: and which addresses are private.
        self.refuse_private = refuse_private
        self.is_private = private
        #: Who hears of the requests (None: nobody listens, and no event is built).
        self.events = events

    def turn(self, url: str, provenance: Provenance, resolve: Resolve | None = None,
             paced: bool = True, what: str = A_REDIRECT, via: object = None) -> RequestTurn:
        """The turn of one request to ``url`` as the client sends it; ``provenance``:
        who pointed at it (a pointer's target looked up with ``resolve``, the client's
        own resolver; ``what`` names the pointer in a refusal); ``paced`` False: an
        unpaced request (see :class:`RequestTurn`); ``via``: its route
        (:attr:`RequestTurn.via`)."""
        return RequestTurn(self, url, provenance, resolve, what, via, paced)


class RequestTurn:
    """One request to one server, from its verdict to its release (see the module).

    An **unpaced** turn (``paced`` False: a browser's subresource, which a page needs
    in order to load) takes robots.txt's verdict and the hop rule as a page's does,
    holds one of its server's cap slots (``max_per_host``, ``max_concurrency``) while
    in flight, and waits while the server rests after a 429 or 503 (its pause, its
    back-off); it is not held to the interval, takes no fleet slot, is no visit and
    leaves the server's pacing alone: the next page's interval counts from the last
    page.  Its 429 or 503 teaches the back-off as a page's does; its other answers
    teach nothing (the pages' answers ease the back-off and feed ``latency_factor``).
    """

    __slots__ = ("_heard", "_holder", "_judged", "_requests", "_resolve", "_waiting", "checked",
                 "group", "guard", "interval", "paced", "provenance", "sent_at", "slot", "url",
                 "via", "what")

    def __init__(self, requests: Requests, url: str, provenance: Provenance,
                 resolve: Resolve | None = None, what: str = A_REDIRECT,
                 via: object = None, paced: bool = True) -> None:
        self._requests = requests
        #: False: an unpaced request (see the class).
        self.paced = paced
        #: The URL as the client sends it (what robots.txt judges).
        self.url = url
        #: Who pointed at the request: the caller's input, or a page's pointer.
        self.provenance = provenance
        # Whether the private-network rule judges the request (a pointer of a page not
        # known to be private), before anything else; the caller's input never is.
        self._judged = provenance.page is not None and provenance.from_url is not None
        self._resolve = resolve  # the client's resolver, for a pointer's target
        #: What pointed here, as a refusal names it (a redirect, a pointer).
        self.what = what
        #: The route the request takes (an adapter's value: aiohttp's proxy); a
        #: robots.txt request its turn makes takes it too.
        self.via = via
        #: True once begun for a pointer of a public page: the connection must reach a
        #: public address, which the adapter checks where it connects.
        self.guard = False
        #: The target's addresses the pointer check found (all public when guarded).
        self.checked: tuple[Address, ...] = ()
        #: The server's pacing group while the turn holds its slot (None: not, or no more).
        self.group: Group | None = None
        #: When the request left, on the scheduler's clock (``latency_factor`` learns from it).
        self.sent_at: float | None = None
        self._heard = False  # its answer came (answered)
        #: What entitles the request to leave, looked at as its bytes go (None: not
        #: leaving yet, or unpaced): its fleet slot (the one its server's turn was
        #: started with, or the next one after a miss), or, paced here, its interval
        #: from the server's last request (:class:`PacedHere`, made as it leaves).
        self.slot: Permit | None = None
        #: The interval its site asks (paced here: held from the last request's bytes).
        self.interval = 0.0
        self._waiting: Awaitable[Started] | None = None  # the wait begin() gave
        # The task the turn holds its server's slot for (a request it makes to that
        # server meanwhile would wait on itself: refused, see _wait).
        self._holder: asyncio.Task[Any] | None = None

    @property
    def headers(self) -> Mapping[str, str]:
        """The gate's headers (User-Agent, From): they win over the client's and the caller's."""
        return self._requests.headers

    def begin(self) -> Awaitable[None] | None:
        """The hop's, then the URL's verdict, then the server's turn: None when the
        request may go at once, else an awaitable of that.

        Raises :class:`~robotgate.errors.Disallowed` (for a redirect's target, or by
        robots.txt), :class:`~robotgate.errors.GateClosed` and
        :class:`~robotgate.urls.InvalidURL`, at once when nothing needs waiting for.
        """
        if self._judged:
            return self._begin_hop()
        got = self._admit()
        if isinstance(got, Group):
            self._held(got)
            return None
        self._waiting = got
        return self._started(got)

    def _held(self, group: Group) -> None:
        """The turn holds a slot of ``group``, for the task it runs in."""
        self.group = group
        task = self._holder = asyncio.current_task()
        if task is not None:
            self._requests.servers.scheduler.hold(group, task)

    def _admit(self) -> Group | Awaitable[Started]:
        """The verdict, then the server's turn: the started Group when the request is
        cached, allowed and due (no coroutine), else an awaitable of it and its slot."""
        url = self.url
        if "\t" in url or "\n" in url or "\r" in url:
            url = as_sent(url)  # judged as sent (yarl drops them)
        requests = self._requests
        servers = requests.servers
        if servers.closed:
            raise GateClosed("the gate is closed")
        verdicts = requests.verdicts
        hit = verdicts.cached(url) if servers.fleet is None else verdicts.settled(url)
        if hit is None:
            return self._wait(url, None)
        held, path = hit
        site = held.site
        if not site.allowed(path, verdicts.agent):
            raise verdicts.refuse(url, path, site, held.key)
        self.interval = site.interval
        if requests.events is None:
            group = servers.start_now(held) if self.paced else servers.start_unpaced_now(held)
            if group is not None:
                return group
        return self._wait(url, site)

    async def _wait(self, url: str, site: SiteRules | None) -> Started:
        """:meth:`_admit` when the request must wait, or its site or server is new."""
        requests = self._requests
        verdicts, servers = requests.verdicts, requests.servers
        origin, rest = split_origin(url)
        # Before any wait (robots.txt's fetch is a request to the server too).
        self._not_on_itself(url, servers.group_now(origin))
        if site is None:
            # A pointer's origin: its robots.txt request must reach a public address too.
            site = await verdicts.fetched(origin, self.guard, self.checked, self.via)
            path = url if rest[:2] == "//" else rest
            if not site.allowed(path, verdicts.agent):
                raise verdicts.refuse(url, path, site)
            self.interval = site.interval
        group = await servers.server_of(origin)
        self._not_on_itself(url, group)
        if not self.paced:
            return await self._wait_unpaced(url, origin, group)
        if servers.fleet is None:
            verdicts.learn(url, origin)
            if servers.start_at_once(group, site):
                return group, None  # due now (often: robots.txt just came back)
        events = requests.events
        if events is None:
            return group, await servers.start(group, site)
        reason = servers.wait_reason(group, origin, site.interval)
        scheduler = servers.scheduler
        began = scheduler.now()
        slot = await servers.start(group, site)
        waited = scheduler.now() - began
        if waited > 0:
            events.emit(TurnWaited(time.time(), origin, group.key, url, waited, reason))
        return group, slot

    def _not_on_itself(self, url: str, group: Group | None) -> None:
        """Raise :class:`~robotgate.errors.WaitsOnItself` when this task's own requests
        hold every slot of ``group``: the wait for it could never end."""
        if group is not None and group.holders is not None and \
                self._requests.servers.scheduler.waits_on_itself(group, asyncio.current_task()):
            raise WaitsOnItself(url, group.key)

    async def _wait_unpaced(self, url: str, origin: str, group: Group) -> Started:
        """An unpaced request's start: while its server rests, and for a cap slot."""
        servers = self._requests.servers
        scheduler = servers.scheduler
        if servers.fleet is None:
            self._requests.verdicts.learn(url, origin)
        if servers.start_unpaced_at_once(group):
            return group, None
        events = self._requests.events
        if events is None:
            await servers.start_unpaced(group)
            return group, None
        reason = servers.unpaced_wait_reason(group)
        began = scheduler.now()
        await servers.start_unpaced(group)
        waited = scheduler.now() - began
        if waited > 0:
            events.emit(TurnWaited(time.time(), origin, group.key, url, waited, reason))
        return group, None

    async def _started(self, turn: Awaitable[Started]) -> None:
        self._waiting = None
        group, self.slot = await turn
        self._held(group)

    async def _begin_hop(self) -> None:
        requests = self._requests
        self._judged = False
        verdict = None
        if requests.refuse_private:
            resolve = self._resolve if self._resolve is not None else _resolves_nothing
            verdict = await provenance_verdict(self.provenance, self.url, resolve,
                                               requests.is_private, self.what)
        if verdict is not None:
            if verdict.refused is not None:
                hop = parse_hop(self.url)
                raise Disallowed(hop.url if hop is not None else self.url, verdict.refused)
            self.guard, self.checked = verdict.guard, verdict.addresses
        got = self._admit()
        if isinstance(got, Group):
            self._held(got)
        else:
            group, self.slot = await got
            self._held(group)

    def abandon(self, pending: Awaitable[None]) -> None:
        """The request will not wait for the turn :meth:`begin` gave as ``pending``
        after all: it was never awaited, so nothing was taken."""
        for awaitable in (pending, self._waiting):
            if isinstance(awaitable, Coroutine):
                awaitable.close()
        self._waiting = None

    def leaving(self) -> Awaitable[None] | None:
        """The request goes out now: the send time is taken, and its permit
        (:attr:`slot`) made; in a fleet a slot already past is given up and the next
        one awaited first (an awaitable then)."""
        servers = self._requests.servers
        if not self.paced:
            self.sent_at = servers.scheduler.now()
            return None
        if servers.fleet is None:
            scheduler = servers.scheduler
            group = self.group
            if group is not None:
                self.slot = scheduler.paced_here(group, self.interval)
            self.sent_at = scheduler.now()
            return None
        return self._on_time()

    async def _on_time(self) -> None:
        servers = self._requests.servers
        fleet = servers.fleet
        assert fleet is not None
        loop = asyncio.get_running_loop()
        # However often the loop is late (the wait for a slot may end late too),
        # the request leaves only within a slot.
        while isinstance(slot := self.slot, Slot) and loop.time() > slot.deadline:
            await self._ask_again(slot)
        group = self.group
        if isinstance(slot, Slot):
            fleet.on_time()
        elif group is not None:
            # No slot in a fleet: paced here (under a crawl lease, so held to its
            # deadline too: LapsedLease, not sent), at the client's last look as well.
            self.slot = servers.scheduler.paced_here(group, self.interval,
                                                     fleet.fence(group.key))
        self.sent_at = servers.scheduler.now()

    async def missed(self) -> None:
        """The client found :attr:`slot` no longer holding as the request was about to
        go (it did not): the next fleet slot is reserved, held and awaited, or, paced
        here, the end of the interval awaited; then :meth:`leaving` again."""
        slot = self.slot
        if isinstance(slot, PacedHere):
            wait = slot.due() - self._requests.servers.scheduler.now()
            if wait > 0:
                await asyncio.sleep(wait)
        elif isinstance(slot, Slot):
            await self._ask_again(slot)

    def gave_up(self) -> None:
        """The client found :attr:`slot` no longer holding as the request was about to
        go (it did not), and sends it again in a turn of its own (Scrapy, whose
        download runs outside the turn's driver): a fleet slot's miss is counted and
        the slack grows, as for :meth:`missed`; no slot is reserved for this turn (paced
        here, the server's next turn is already after the interval)."""
        slot, self.slot = self.slot, None
        fleet = self._requests.servers.fleet
        if isinstance(slot, Slot) and fleet is not None:
            fleet.missed(slot)

    async def _ask_again(self, slot: Slot) -> None:
        group = self.group
        assert group is not None
        self.slot = None  # given up, whatever happens to the next
        self.slot = await self._requests.servers.slot_missed(group, slot)

    def answered(self, status: int, retry_after: str | None) -> Awaitable[None] | None:
        """The answer's headers arrived: the turn tells of it (:class:`ResponseAnswered`,
        naming this request), and its server learns from it (an awaitable when the
        store must hear of it too).  ``retry_after``: the answer's ``Retry-After``
        header, if any."""
        group = self.group
        if group is None:
            return None
        self.slot = None
        self._heard = True
        requests = self._requests
        servers = requests.servers
        events = requests.events
        if not self.paced:
            if status != 429 and status != 503:
                return None
            # No latency observed (sent_at None), and the server's events name the origin.
            return servers.answered(group, status, retry_after, None,
                                    self._origin() if events is not None else "")
        if events is None:
            return servers.answered(group, status, retry_after, self.sent_at)
        sent_at = self.sent_at
        seconds = servers.scheduler.now() - sent_at if sent_at is not None else 0.0
        origin = self._origin()
        events.emit(ResponseAnswered(time.time(), origin, group.key, self.url, status, seconds))
        return servers.answered(group, status, retry_after, sent_at, origin)

    def _origin(self) -> str:
        try:
            return split_origin(self.url)[0]
        except ValueError:
            return ""

    def release(self) -> None:
        """The request no longer holds its server's slot (answered, failed, dropped
        or cancelled); only the first call counts."""
        group, self.group = self.group, None
        self.slot = None
        if group is not None:
            holder, self._holder = self._holder, None
            servers = self._requests.servers
            if self.paced and self.sent_at is not None and not self._heard:
                # It left and no answer came: its bytes may have gone late, so the next
                # turn counts from now, as from an answer.
                servers.scheduler.paced_from_now(group)
            servers.done(group, holder)


class Answer(NamedTuple):
    """What an answer says to its turn (and to the exchange): its status, its
    ``Retry-After`` (None: none), where a redirect leads (``Location``, or whatever
    header the client follows; None: none) and whether the client answers it by
    sending the same request again (``again``: a ``401`` challenge answered with
    credentials), which the exchange does once, in a turn of its own."""

    status: int
    retry_after: str | None
    location: str | None
    again: bool = False


@lru_cache(maxsize=1024)
def answer_of(status: int) -> Answer:
    """The answer of a response that says only its ``status`` (no ``Retry-After``, no
    redirect): one value a status, made once (most answers are these)."""
    return Answer(status, None, None)


class TurnSender(Protocol[R]):
    """A client's side of one request's turn (:func:`answered_in_turn`)."""

    def send(self, turn: RequestTurn) -> Awaitable[R]:
        """Send the request to ``turn.url`` now, with ``turn.headers`` over its own."""
        ...

    def answer(self, response: R) -> Answer:
        """What ``response`` says."""
        ...

    def drop(self, response: R) -> Awaitable[None] | None:
        """``response``'s turn failed after it came: close it."""
        ...


async def answered_in_turn(turn: RequestTurn, sender: TurnSender[R]) -> tuple[R, Answer]:
    """Send one request in ``turn``: begun (its wait awaited), left (a fleet slot
    already past given up for the next, however often), sent with
    ``sender.send(turn)``, and answered with what ``sender.answer(response)`` says;
    the response and its answer are returned, the turn still held (the caller
    releases it when the response no longer holds the server: read, streamed,
    closed, followed).

    ``sender.send`` sets :attr:`RequestTurn.headers` on the request; it raises
    :class:`~robotgate.politeness.permits.LateSlot` (sending nothing) when its
    last look finds :attr:`RequestTurn.slot` no longer holding, and is called again
    once the turn holds the next (a fleet slot, or the end of the interval).  The turn
    is released if anything fails (``sender.drop(response)`` first, once there is
    one).
    """
    ready = turn.begin()
    if ready is not None:
        await ready
    try:
        while True:
            leaving = turn.leaving()
            if leaving is not None:
                await leaving
            try:
                response = await sender.send(turn)
                break
            except LateSlot:
                await turn.missed()  # nothing was sent: the turn holds the next slot
        try:
            answer = sender.answer(response)
            learnt = turn.answered(answer.status, answer.retry_after)
            if learnt is not None:
                await learnt
        except BaseException:
            dropped = sender.drop(response)
            if dropped is not None:
                await dropped
            raise
    except BaseException:
        turn.release()
        raise
    return response, answer


async def sent_in_turn(turn: RequestTurn, sender: TurnSender[R], *, keep: bool = False) -> R:
    """:func:`answered_in_turn`, the response alone, and the turn released once
    answered unless ``keep`` (then the caller releases it)."""
    response, _ = await answered_in_turn(turn, sender)
    if not keep:
        turn.release()
    return response


async def _resolves_nothing(host: str) -> list[str]:
    return []  # a client whose resolver is unknown: the hop's target reaches nothing


def redirect_target(url: str, status: int, location: str | None) -> str | None:
    """Where the answer to ``url`` sends the client, without credentials (None: it is
    no redirect, or to no usable http(s) URL)."""
    if status not in REDIRECTS or not location:
        return None
    try:
        target = strip_credentials(urljoin(url, location.strip()))
        split_origin(target)
    except (ValueError, InvalidURL):
        return None
    return target
