"""The request path every client adapter shares: check, wait for the turn, learn.

An adapter (aiohttp, httpx, Scrapy) makes a :class:`~.request_turn.RequestTurn`
(:meth:`Admission.turn`) for each request it sends; the turn calls, in order:

1. :meth:`Admission.admit` — robots.txt verdict (:class:`~robotgate.errors.Disallowed`
   if forbidden), then the server's turn; returns the started :class:`Group`,
   or an awaitable of it and the fleet slot the request holds (None: paced
   here) when the request must wait;
2. :meth:`Admission.answered` when the response headers arrive (the server
   learns from them; the turn tells of its own answer);
3. :meth:`Admission.done` when the request no longer holds its slots.

A request that is cached, allowed and due costs no coroutine at all.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Coroutine, Mapping
from typing import Protocol

from ..decision import Decision
from ..errors import Disallowed, GateClosed
from ..events import BackoffEased, BackoffStarted, TurnWaited, UrlSkipped
from ..policy.fetch_flow import RobotsRequest, RobotsResponse
from ..policy.hops import IsPrivate, Resolve, is_private
from ..policy.host_settings import HostTable
from ..policy.site import CachedSite, SiteRules
from ..records import HostState
from ..store.base import Store
from ..store.memory import immediate
from ..urls import as_sent, match_prefix, remove_dot_segments, split_origin, text_url
from .crawl_results import CrawlSummary
from .emitter import Emitter
from .fleet_slots import FleetSlots, Slot
from .grouping import PaceKeys
from .request_turn import RequestTurn
from .robots_cache import CacheClosed, RobotsCache
from .scheduler import Group, Scheduler

__all__ = ["Admission", "Started"]

log = logging.getLogger("robotgate.pacing")

#: A request's started turn: its server's group, and the fleet slot it holds
#: (None: paced here).
Started = tuple[Group, "Slot | None"]


class Crawl(Protocol):
    """A crawl as :meth:`Admission.run_crawl` runs it and :meth:`Admission.close` ends it."""

    async def run(self) -> CrawlSummary: ...

    def halt(self, failure: BaseException | None = None) -> None: ...


class Admission:
    """Wires the robots.txt cache, the politeness keys and the scheduler for one robot."""

    def __init__(self, cache: RobotsCache, keys: PaceKeys, scheduler: Scheduler, store: Store,
                 agent: str, fleet: FleetSlots | None = None, *,
                 headers: Mapping[str, str] | None = None, refuse_private: bool = True,
                 private: IsPrivate = is_private) -> None:
        self.cache = cache
        self.keys = keys
        self.scheduler = scheduler
        self.store = store
        self.agent = agent
        self.fleet = fleet
        #: What every request sends (User-Agent, From), over the client's and the caller's.
        self.headers: Mapping[str, str] = dict(headers or {})
        #: Whether a redirect from a public site into a private address is refused,
        #: and which addresses are private.
        self.refuse_private = refuse_private
        self.is_private = private
        self._mem = immediate(store)  # a store that answers without an await, if it is one
        self.disallowed = 0
        self.closed = False
        self._crawls: set[Crawl] = set()  # running crawls, ended by close()
        # "scheme://authority" as a URL spells it -> its origin (see _learn): a pure
        # function remembered, never stale, so that a cached page is not split.
        self._origins: dict[str, str] = {}
        self._origins_max = 2 * cache.max_origins
        self._records = cache.records
        self._recheck_visits = cache.recheck_visits
        self._groups = scheduler.groups_by_key
        #: Who hears the events (None: nobody listens, and no event is built).
        self.events: Emitter | None = None
        #: Per-host settings (None: the gate's own for every server).
        self.hosts: HostTable | None = None

    # -- robots.txt ------------------------------------------------------------------

    async def site(self, origin: str) -> SiteRules:
        """The origin's rules (fetching robots.txt once if needed)."""
        closed = ""
        try:
            return self.cache.cached(origin) or await self.cache.fetched(origin)
        except CacheClosed as exc:
            closed = str(exc)
        raise GateClosed(closed)  # not within the except: the CacheClosed is no cause

    def refuse(self, url: str, path: str, site: SiteRules, key: str | None = None) -> Disallowed:
        self.disallowed += 1
        decision = site.decide(path, self.agent)
        refused = Disallowed(url, decision)
        log.debug("skipped %s", refused)
        events = self.events
        if events is not None:
            origin = site.entry.origin
            events.emit(UrlSkipped(time.time(), origin, key or events.key_of(origin), url,
                                   decision.reason, decision.outcome or "rules"))
        return refused

    # -- groups --------------------------------------------------------------------

    def host_state(self, origin: str) -> HostState | Awaitable[HostState]:
        """The HostState of ``origin``'s politeness group (loaded from the store if new);
        an awaitable of it only when that needs I/O."""
        group = self.group_now(origin)
        return group.state if group is not None else self._host_state(origin)

    async def _host_state(self, origin: str) -> HostState:
        return (await self.group(origin)).state

    def group_now(self, origin: str) -> Group | None:
        """The politeness group of ``origin``'s server if known, or made without I/O."""
        key = self.keys.cached(origin)
        if key is None:
            return None
        group = self.scheduler.get(key)
        mem = self._mem
        if group is None and mem is not None:
            state = mem.get_host(key) or HostState(key)
            group = self._capped(self.scheduler.add(key, state), origin)
        return group

    async def group(self, origin: str) -> Group:
        """The politeness group of ``origin``'s server (created, from the store, if new)."""
        group = self.group_now(origin)
        if group is not None:
            return group
        key = await self.keys.key(origin)
        group = self.scheduler.get(key)
        if group is None:
            store = self.store
            state = await store.load_host(key) or HostState(key)
            group = self.scheduler.get(key) or self._capped(self.scheduler.add(
                key, state, self._unrecorded_last(store.unrecorded_until)), origin)
        return group

    def _capped(self, group: Group, origin: str) -> Group:
        """A new group, with its host setting's cap if one applies."""
        hosts = self.hosts
        if hosts is not None and group.idle() and group.free == group.size:
            setting = hosts.match(origin, group.key)
            if setting is not None and setting.max_per_host is not None:
                self.scheduler.set_cap(group, setting.max_per_host)
        return group

    def _unrecorded_last(self, unrecorded_until: float) -> float:
        """Loop time of a request that may have gone out unrecorded (see
        :attr:`Store.unrecorded_until`), or -inf when none may have."""
        if not unrecorded_until:
            return -float("inf")
        scheduler = self.scheduler
        return scheduler.now() - max(0.0, time.time() - unrecorded_until)

    def robots_turn(self, origin: str) -> RobotsTurn:
        """A robots.txt request is a request to the server: paced and capped like a page."""
        return RobotsTurn(self, origin)

    def known_group(self, origin: str) -> Group | None:
        key = self.keys.cached(origin)
        return self.scheduler.get(key) if key is not None else None

    def known_host(self, origin: str) -> HostState | None:
        """The HostState of ``origin``'s server if this process knows it (no I/O)."""
        group = self.known_group(origin)
        if group is not None:
            return group.state
        held = self.cache.known(origin)
        return held.host if held is not None else None

    def host_wait(self, origin: str) -> float:
        """Seconds until the next request to ``origin``'s server may start (0 if now)."""
        group = self.known_group(origin)
        site = self.cache.peek(origin)
        if group is not None:
            return self.scheduler.wait_seconds(group, site.interval if site else None)
        # No request yet in this process: the stored next allowed time still holds.
        held = self.cache.known(origin)
        host = held.host if held is not None else None
        return max(0.0, self.scheduler.stored_wait(host)) if host is not None else 0.0

    def host_turn(self, origin: str) -> tuple[float, str, float]:
        """As :meth:`host_wait`, with why the request waits (:meth:`Scheduler.turn`)
        and the interval ``origin``'s server is owed."""
        scheduler = self.scheduler
        group = self.known_group(origin)
        site = self.cache.peek(origin)
        if group is not None:
            interval = site.interval if site is not None else max(
                scheduler.policy.delay, group.interval)
            wait, reason = scheduler.turn(group, interval)
            return wait, reason, interval
        interval = site.interval if site is not None else scheduler.policy.delay
        held = self.cache.known(origin)
        host = held.host if held is not None else None
        wait = max(0.0, scheduler.stored_wait(host)) if host is not None else 0.0
        return wait, "stored" if wait > 0 else "", interval

    # -- requests ------------------------------------------------------------------

    def cached(self, url: str) -> tuple[CachedSite, str] | None:
        """The cache's record of ``url`` (as sent: see :func:`~robotgate.urls.as_sent`)'s
        origin and the path its rules judge, if cached, fresh and not due for a recheck.

        The origin of the URL's "scheme://authority" is found with one look-up (see
        :meth:`_learn`); a URL of an authority not seen yet is split.
        """
        cut = url.find("/", 8)
        origin = self._origins.get(url[:cut] if cut > 0 else url)
        if origin is not None:
            # The cache's record read here, its freshness asked of the record itself:
            # no call into the cache but to set its recently-used bit.
            held = self._records.get(origin)
            if held is None or not held.usable(time.time(), self._recheck_visits):
                return None
            if not held.used:
                self.cache.touch(held)
            return held, _path_of(url, cut)
        origin, rest = split_origin(url)
        held = self.cache.fresh(origin)
        if held is None:
            return None
        self._learn(url, origin)
        return held, url if rest[:2] == "//" else rest

    def check(self, url: object) -> Decision | None:
        """The verdict for ``url`` if its origin's rules are cached and fresh, else None:
        no I/O, no coroutine.  The gate's ``check`` is this very method:

        >>> d = gate.check(url) or await gate.decide(url)          # doctest: +SKIP
        """
        link = url if isinstance(url, str) else text_url(url)  # InvalidURL, not TypeError
        if "\t" in link or "\n" in link or "\r" in link:
            link = as_sent(link)  # judged as sent (yarl drops them)
        hit = self.cached(link)
        return hit[0].site.decide(hit[1], self.agent) if hit is not None else None

    def as_cached(self, url: str) -> Decision | None:
        """As :meth:`check`, but by the rules as cached even when due for a refresh
        (the rules a page just fetched was judged by); None if never fetched."""
        decision = self.check(url)
        if decision is not None:
            return decision
        url = as_sent(url)
        origin, rest = split_origin(url)
        site = self.cache.peek(origin)
        if site is None:
            return None
        return site.decide(url if rest[:2] == "//" else rest, self.agent)

    def turn(self, url: str, came_from: str | None = None,
             resolve: Resolve | None = None) -> RequestTurn:
        """The turn of one request to ``url`` as the client sends it; ``came_from``:
        the URL whose redirect it follows, its target looked up with ``resolve``."""
        return RequestTurn(self, url, came_from, resolve)

    def admit(self, url: str) -> Group | Awaitable[Started]:
        """Check ``url`` and take its turn: the started Group, or an awaitable of it
        and the fleet slot the request holds (None: paced here).

        Raises :class:`~robotgate.errors.Disallowed` (at once when robots.txt is
        cached) and :class:`~robotgate.urls.InvalidURL`.
        """
        if "\t" in url or "\n" in url or "\r" in url:
            url = as_sent(url)  # judged as sent (yarl drops them)
        if self.closed:
            raise GateClosed("the gate is closed")
        # With a fleet the rules are judged after the fleet's fetch lock (in _admit),
        # unless this worker leases the server in a shared crawl: no other asks it.
        fleet = self.fleet
        hit = self.cached(url) if fleet is None or fleet.leases else None
        if hit is not None and fleet is not None and not fleet.settled(
                hit[0].key or self.keys.cached(split_origin(url)[0])):
            hit = None
        if hit is None:
            return self._admit(url, None)
        held, path = hit
        site = held.site
        if not site.allowed(path, self.agent):
            raise self.refuse(url, path, site, held.key)
        if self.events is None:
            # Due now and under every cap: started without a coroutine.
            key = held.key
            group = self._groups.get(key) if key is not None else None
            if group is None or group.state is not held.host:
                origin = site.entry.origin
                group = self.known_group(origin)
                if group is not None:
                    self.cache.bind(origin, group.state, group.key)
            if group is not None and self.scheduler.try_start(group, site.interval):
                return group
        return self._admit(url, site)

    async def _admit(self, url: str, site: SiteRules | None) -> Started:
        """:meth:`admit` when the request must wait, or its site or server is new."""
        origin, rest = split_origin(url)
        if site is None:
            closed = ""
            try:
                site = await self.cache.fetched(origin)
            except CacheClosed as exc:
                closed = str(exc)
            if site is None:
                raise GateClosed(closed)
            path = url if rest[:2] == "//" else rest
            if not site.allowed(path, self.agent):
                raise self.refuse(url, path, site)
        group = self.group_now(origin) or await self.group(origin)
        self.cache.bind(origin, group.state, group.key)
        fleet = self.fleet
        events = self.events
        if fleet is None:
            self._learn(url, origin)
            if self.scheduler.try_start(group, site.interval):
                return group, None  # due now (often: robots.txt just came back)
        if events is None:
            slot = await self.scheduler.start(group, site.interval,
                                              fleet.reserve if fleet is not None else None)
            return group, slot
        reason = self._wait_reason(group, origin, site.interval)
        began = self.scheduler.now()
        slot = await self.scheduler.start(group, site.interval,
                                          fleet.reserve if fleet is not None else None)
        waited = self.scheduler.now() - began
        if waited > 0:
            events.emit(TurnWaited(time.time(), origin, group.key, url, waited, reason))
        return group, slot

    def _wait_reason(self, group: Group, origin: str, interval: float) -> str:
        """Why a request that cannot start now waits (see :data:`robotgate.events.WAIT_REASONS`)."""
        if self.fleet is not None:
            return "fleet-slot"
        scheduler = self.scheduler
        wait, reason = scheduler.turn(group, interval)
        if wait > 0:
            if reason == "delay" or reason == "crawl-delay":
                return "crawl-delay" if interval > self.delay_of(origin, group.key) else "delay"
            return reason
        if group.free <= 0 or group.waiters:
            return "host-cap"
        return "global-cap"

    def delay_of(self, origin: str, key: str | None) -> float:
        """The least interval of ``origin``'s server: its host setting's, else the gate's."""
        hosts = self.hosts
        setting = hosts.match(origin, key) if hosts is not None else None
        if setting is not None and setting.delay is not None:
            return setting.delay
        return self.scheduler.policy.delay

    def skipped(self, url: str, decision: Decision) -> None:
        """A crawl skips ``url`` for ``decision`` (its own check, not :meth:`admit`'s)."""
        events = self.events
        if events is not None:
            origin = split_origin(url)[0]
            events.emit(UrlSkipped(time.time(), origin, events.key_of(origin), url,
                                   decision.reason, decision.outcome or "rules"))

    def waited(self, url: str, seconds: float, reason: str) -> None:
        """A crawl held ``url`` back ``seconds`` for its server's turn (its own wait)."""
        events = self.events
        if events is not None and seconds > 0:
            origin = split_origin(url)[0]
            events.emit(TurnWaited(time.time(), origin, events.key_of(origin), url, seconds,
                                   reason))

    def _learn(self, url: str, origin: str) -> None:
        """Remember that ``url``'s "scheme://authority", as spelt, is ``origin``."""
        m = match_prefix(url)
        if m is None or "@" in m[0]:
            return  # no password is kept
        origins = self._origins
        if origins.get(m[0]) != origin:
            if len(origins) >= self._origins_max:
                origins.clear()  # rare and cheap: refilled by the next slow admits
            origins[m[0]] = origin

    async def slot_missed(self, group: Group, slot: Slot,
                          interval: float | None = None) -> Slot | None:
        """``slot`` went by before the request could leave: reserve the next one,
        wait until it starts, and return it (None: paced here from now on).
        ``interval``: the request's (default: the server's last page's)."""
        fleet = self.fleet
        assert fleet is not None
        fleet.missed(slot)
        gap = self.scheduler.gap(group, group.interval if interval is None else interval)
        again = await fleet.reserve(group.key, gap)
        if again is not None and again.wait > 0:
            await asyncio.sleep(again.wait)
        return again

    def answered(self, group: Group, status: int, retry_after: str | None,
                 sent_at: float | None = None, origin: str = "") -> Awaitable[None] | None:
        """The answer's headers arrived: the server learns from them (its back-off's
        events are told here; the request's own answer by its turn).  An awaitable
        when the store must hear of it.

        ``sent_at`` is when the request left, on the scheduler's clock (the turn's);
        ``origin``: the request's, which the back-off's events name.
        """
        events = self.events
        extra = group.backoff.extra
        until = self.scheduler.answered(group, status, retry_after, sent_at)
        if events is not None:
            self._heard(events, group, status, extra, until, origin)
        if until is not None:
            log.info("%s answered %d: next request in %.2fs", group.key, status,
                     self.scheduler.wait_seconds(group))
        elif group.backoff.extra < extra:  # eased: at INFO once it is over
            log.log(logging.DEBUG if group.backoff.extra else logging.INFO,
                    "%s back-off eased: %.2fs extra left", group.key, group.backoff.extra)
        # The store keeps a copy of the server's state (a group made again, after an
        # eviction or a restart, paces from it).
        mem = self._mem
        if mem is None or (until is not None and self.store.shared):
            return self._tell_store(group, until)
        mem.put_host(group.state)
        return None

    async def _tell_store(self, group: Group, until: float | None) -> None:
        store = self.store
        try:
            if self._mem is None:
                await store.save_host(group.state)
            else:
                self._mem.put_host(group.state)
            if until is not None and store.shared:
                # After the save: a shared store may send the state's back-off with it.
                await store.pause(group.key, until)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.cache.store_trouble("save host state", exc)

    def _heard(self, events: Emitter, group: Group, status: int, extra: float,
               until: float | None, origin: str) -> None:
        """Tell of the back-off an answer started or eased."""
        now = time.time()
        if until is not None:
            events.emit(BackoffStarted(now, origin, group.key, status, max(0.0, until - now)))
        elif group.backoff.extra < extra:
            events.emit(BackoffEased(now, origin, group.key, group.backoff.extra))

    def done(self, group: Group) -> None:
        self.scheduler.done(group)

    async def run_crawl(self, crawl: Crawl) -> CrawlSummary:
        """Run ``crawl``; :meth:`close` ends it with :class:`GateClosed` (at once if
        the gate is closed already: the crawl would first wait for a server's turn)."""
        if self.closed:
            raise GateClosed("the gate is closed")
        self._crawls.add(crawl)
        try:
            return await crawl.run()
        finally:
            self._crawls.discard(crawl)

    def close(self) -> None:
        """No request starts from now on: :meth:`admit`, the waits for a turn and
        running crawls end with :class:`GateClosed`.  Cached verdicts are still answered."""
        self.closed = True
        self.scheduler.close()
        for crawl in list(self._crawls):
            crawl.halt(GateClosed("the gate was closed during the crawl"))


class RobotsTurn:
    """``async with admission.robots_turn(origin)``: the server's turn for its robots.txt.

    Each answer paces its server as a page's would (a 429 or 503 pauses it); a
    redirect hop waits for its own server's turn, within this fetch's slot.
    A class, not a generator-based context manager: once per origin, on every
    cold start.
    """

    __slots__ = ("_admission", "_asked", "_group", "_hop", "_origin", "_pending", "_sent")

    def __init__(self, admission: Admission, origin: str) -> None:
        self._admission = admission
        self._origin = origin
        self._group: Group | None = None
        self._hop: Group | None = None
        self._asked: Group | None = None  # the server of the request awaiting its answer
        self._pending: list[Awaitable[None]] | None = None  # made only for a 429 or 503
        self._sent = 0.0  # when the request awaiting its answer left

    async def before_hop(self, url: str) -> float:
        self._hop = None
        try:
            origin = split_origin(url)[0]
        except ValueError:
            return 0.0  # the flow refuses it
        admission = self._admission
        group = admission.group_now(origin) or await admission.group(origin)
        scheduler = admission.scheduler
        start = scheduler.now()
        while (wait := scheduler.wait_seconds(
                group, max(scheduler.policy.delay, group.interval))) > 0:
            await asyncio.sleep(wait)  # again: another request may have gone meanwhile
        now = scheduler.paced_from_now(group)  # gone: the server's next request waits for it
        self._hop = self._asked = group
        self._sent = now
        return now - start

    def heard(self, request: RobotsRequest, response: RobotsResponse) -> None:
        group = self._group if request.previous is None else self._hop
        if group is None:
            return
        self._asked = None
        status = response.status
        if status != 429 and status != 503:
            admission = self._admission
            scheduler = admission.scheduler
            scheduler.paced_from_now(group)  # paced from the answer, as pages are
            if admission.fleet is not None and not admission.fleet.settled(group.key):
                # The fleet's slots count from their start, and this request may have
                # left late: the next slot is an interval after this answer.  (A server
                # this worker leases is paced here, from the answer, as above.)
                gap = scheduler.gap(group, max(scheduler.policy.delay, group.interval))
                self._later(self._hold_fleet(group.key, time.time() + gap))
            return
        try:
            retry_after = response.headers.get("Retry-After")
        except Exception:  # a hostile or broken mapping: no header
            retry_after = None
        pending = self._admission.answered(
            group, status, retry_after if isinstance(retry_after, str) else None, self._sent)
        if pending is not None:
            self._later(pending)

    async def _hold_fleet(self, key: str, until: float) -> None:
        try:
            await self._admission.store.pause(key, until)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._admission.cache.store_trouble("save host state", exc)

    def _later(self, pending: Awaitable[None]) -> None:
        """Await ``pending`` (the store hears of an answer) when the turn ends."""
        if self._pending is None:
            self._pending = []
        self._pending.append(pending)

    async def __aenter__(self) -> RobotsTurn:
        admission = self._admission
        group = admission.group_now(self._origin) or await admission.group(self._origin)
        scheduler = admission.scheduler
        # A refetch keeps to the interval the server's pages keep (its Crawl-delay).
        interval = max(scheduler.policy.delay, group.interval)
        fleet = admission.fleet
        if fleet is not None:
            # The fleet's slot, as for a page: another worker may have just asked the server.
            slot = await scheduler.start(group, interval, fleet.reserve, page=False)
            try:
                await _in_time(admission, group, slot, interval)
            except BaseException:
                scheduler.done(group)  # never a slot lost: the host would wait for it for good
                raise
        elif not scheduler.try_start(group, interval, page=False):
            await scheduler.start(group, interval, page=False)
        self._group = self._asked = group
        self._sent = scheduler.now()
        return self

    async def __aexit__(self, *exc: object) -> None:
        group = self._group
        assert group is not None
        scheduler = self._admission.scheduler
        try:
            if self._asked is not None:
                scheduler.paced_from_now(self._asked)  # no answer (a timeout)
            for pending in self._pending or ():
                await pending  # the store hears of the answers
        finally:
            scheduler.done(group)
            for pending in self._pending or ():
                if isinstance(pending, Coroutine):
                    pending.close()  # cut short (a cancel): no "never awaited" warning


async def _in_time(admission: Admission, group: Group, slot: Slot | None,
                   interval: float) -> None:
    """A robots.txt request leaves within its fleet slot, as a page does: a slot the
    loop is already past is given up and the next one awaited, however often."""
    fleet = admission.fleet
    assert fleet is not None
    loop = asyncio.get_running_loop()
    while slot is not None and loop.time() > slot.deadline:
        slot = await admission.slot_missed(group, slot, interval)
    if slot is not None:
        fleet.on_time()


def _path_of(url: str, cut: int) -> str:
    """What the rules judge of ``url`` whose authority ends at ``cut`` (-1: no path):
    the path as the client sends it, or the URL when its path starts with "//"."""
    if cut < 0:
        return ""
    rest = url[cut:]
    if "/." in rest or "/%2" in rest:
        rest = remove_dot_segments(rest)
    return url if rest[:2] == "//" else rest
