"""A robots.txt request is a request to its server: paced and capped like a page.

The robots.txt cache and the tdmrep.json cache fetch inside ``async with
RobotsPacing(servers, origin)``: the request waits for its server as a page does
(in a fleet, within its slot), and each answer paces the server as a page's would.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Coroutine

from ..policy.fetch import entry_for_response
from ..policy.fetch_flow import RobotsRequest, RobotsResponse
from ..policy.site import interpret
from ..store.base import Fleet
from ..urls import split_origin
from .fleet_slots import Slot
from .permits import Permit
from .scheduler import Group, PacedHere
from .servers import Servers

__all__ = ["RobotsPacing"]


class RobotsPacing:
    """``async with RobotsPacing(servers, origin)``: a robots.txt request paced as a page.

    Each answer paces its server as a page's would (a 429 or 503 pauses it); a
    redirect hop waits for its own server's turn, within this fetch's slot.
    A class, not a generator-based context manager: once per origin, on every
    cold start.
    """

    __slots__ = ("_asked", "_group", "_hop", "_interval", "_origin", "_pending", "_permit",
                 "_sent", "_servers")

    def __init__(self, servers: Servers, origin: str) -> None:
        self._servers = servers
        self._origin = origin
        self._group: Group | None = None
        self._hop: Group | None = None
        self._asked: Group | None = None  # the server of the request awaiting its answer
        self._pending: list[Awaitable[None]] | None = None  # made only for a 429 or 503
        self._sent = 0.0  # when the request awaiting its answer left
        self._interval = 0.0
        # The first request's fleet slot, or its interval from the server's last
        # request (with a crawl lease's fence), looked at as it goes out.
        self._permit: Permit | None = None

    async def before_hop(self, url: str) -> float:
        self._hop = None
        try:
            origin = split_origin(url)[0]
        except ValueError:
            return 0.0  # the flow refuses it
        servers = self._servers
        group = servers.group_now(origin) or await servers.group(origin)
        scheduler = servers.scheduler
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
            servers = self._servers
            scheduler = servers.scheduler
            scheduler.paced_from_now(group)  # paced from the answer, as pages are
            fleet, shared = servers.fleet, servers.shared
            if fleet is not None and shared is not None and not fleet.settled(group.key):
                # The fleet's slots count from their start, and this request may have
                # left late: the next slot is an interval after this answer, the one
                # this answer gives if longer (its Crawl-delay: the fleet's next slot
                # was spaced by the interval known before).  (A server this worker
                # leases is paced here, from the answer, as above.)
                interval = max(scheduler.policy.delay, group.interval,
                               self._interval_given(request, response))
                gap = scheduler.gap(group, interval)
                self._later(self._hold_fleet(shared, group.key, time.time() + gap))
            return
        try:
            retry_after = response.headers.get("Retry-After")
        except Exception:  # a hostile or broken mapping: no header
            retry_after = None
        pending = self._servers.answered(
            group, status, retry_after if isinstance(retry_after, str) else None, self._sent)
        if pending is not None:
            self._later(pending)

    def permit(self, request: RobotsRequest) -> Permit | None:
        # A redirect hop's server is paced here (before_hop), with no slot of its own.
        return self._permit if request.previous is None else None

    async def missed(self) -> float:
        servers = self._servers
        group, slot = self._group, self._permit
        assert group is not None and slot is not None
        loop = asyncio.get_running_loop()
        start = loop.time()
        if isinstance(slot, PacedHere):
            # Another request to the server went meanwhile: this one, an interval after it.
            wait = slot.due() - servers.scheduler.now()
            if wait > 0:
                await asyncio.sleep(wait)
            self._sent = servers.scheduler.now()
            return loop.time() - start
        assert isinstance(slot, Slot)
        self._permit = None  # given up, whatever happens to the next
        self._permit = await _permit(servers, group, await servers.slot_missed(
            group, slot, self._interval), self._interval)
        self._sent = servers.scheduler.now()
        return loop.time() - start

    def _interval_given(self, request: RobotsRequest, response: RobotsResponse) -> float:
        """The interval a robots.txt answer asks (0: none known from it).  Read here,
        before the cache installs the entry: the next slot must already keep it."""
        if request.name != "robots.txt" or not 200 <= response.status < 300:
            return 0.0
        how = self._servers.cache.how
        entry = entry_for_response(self._origin, response.status, response.headers,
                                   response.body, time.time(), how.fetch,
                                   final_url=request.url)
        return interpret(entry, how).interval

    async def _hold_fleet(self, shared: Fleet, key: str, until: float) -> None:
        try:
            await shared.pause(key, until)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._servers.cache.store_trouble("save host state", exc)

    def _later(self, pending: Awaitable[None]) -> None:
        """Await ``pending`` (the store hears of an answer) when the fetch ends."""
        if self._pending is None:
            self._pending = []
        self._pending.append(pending)

    async def __aenter__(self) -> RobotsPacing:
        servers = self._servers
        group = servers.group_now(self._origin) or await servers.group(self._origin)
        scheduler = servers.scheduler
        # A refetch keeps to the interval the server's pages keep (its Crawl-delay).
        interval = max(scheduler.policy.delay, group.interval)
        fleet = servers.fleet
        if fleet is not None:
            # The fleet's slot, as for a page: another worker may have just asked the server.
            slot = await scheduler.start(group, interval, fleet.reserve, page=False)
            try:
                self._permit = await _permit(servers, group, slot, interval)
            except BaseException:
                scheduler.done(group)  # never a slot lost: the host would wait for it for good
                raise
        else:
            if not scheduler.try_start(group, interval, page=False):
                await scheduler.start(group, interval, page=False)
            self._permit = scheduler.paced_here(group, interval)
        self._group = self._asked = group
        self._interval = interval
        self._sent = scheduler.now()
        return self

    async def __aexit__(self, *exc: object) -> None:
        group = self._group
        assert group is not None
        scheduler = self._servers.scheduler
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


async def _permit(servers: Servers, group: Group, slot: Slot | None,
                  interval: float) -> Permit | None:
    """What a robots.txt request leaves within, as a page does: its fleet slot (one the
    loop is already past is given up and the next one awaited, however often), or,
    paced here, its interval from the server's last request (under a crawl lease, with
    the lease's fence; see :meth:`~robotgate.politeness.scheduler.Scheduler.paced_here`)."""
    fleet = servers.fleet
    assert fleet is not None
    loop = asyncio.get_running_loop()
    while slot is not None and loop.time() > slot.deadline:
        slot = await servers.slot_missed(group, slot, interval)
    if slot is None:
        return servers.scheduler.paced_here(group, interval, fleet.fence(group.key))
    fleet.on_time()
    return slot
