"""Every server's state and what its answers teach.

:class:`Servers` is the only writer of the scheduler's state: it makes a server's
pacing group (from the store when it is new, with its host setting's cap), starts
a request's turn on it (returning the fleet slot the request leaves in, if any),
and hears the answers: back-off, ``Retry-After``, and the copy the store keeps.
It also answers the gate's queries about a server (how long until its turn, and
why).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..events import BackoffEased, BackoffStarted
from ..policy.host_settings import HostTable
from ..policy.site import CachedSite, SiteRules
from ..records import HostState
from ..redaction import logger
from ..store.base import AnswersAtOnce, Fleet, Store
from .emitter import Emitter
from .fleet_slots import FleetSlots, Slot
from .grouping import PaceKeys
from .robots_cache import RobotsCache
from .scheduler import Group, Scheduler

__all__ = ["Servers", "Started"]

log = logger("robotgate.pacing")

#: A request's started turn: its server's group, and the fleet slot it holds
#: (None: paced here).
Started = tuple[Group, "Slot | None"]


class Servers:
    """The servers one robot asks: their groups in ``scheduler``, their copy in ``store``.

    ``robots(servers)`` makes the robots.txt cache of these servers, once their own
    state is in place: its fetches are requests to them, paced and counted by them.
    ``fleet``: the fleet slots, where the store hands them out; ``shared``: the store's
    fleet part (None: one process uses it), which hears the pauses every process
    keeps; ``at_once``: its answers without an await (None: they are awaited).
    ``hosts``: the per-host settings (None: the gate's own for every server);
    ``events``: who hears the back-offs (None: nobody listens, and no event is built).
    """

    def __init__(self, keys: PaceKeys, scheduler: Scheduler, store: Store,
                 fleet: FleetSlots | None = None, *,
                 robots: Callable[[Servers], RobotsCache],
                 shared: Fleet | None = None, at_once: AnswersAtOnce | None = None,
                 hosts: HostTable | None = None, events: Emitter | None = None) -> None:
        self.keys = keys
        self.scheduler = scheduler
        self.store = store
        self.fleet = fleet
        self.shared = shared
        self._mem = at_once  # a store that answers without an await, if it is one
        self._groups = scheduler.groups_by_key
        #: True once closed: no request starts.
        self.closed = False
        self.events = events
        self.hosts = hosts
        #: robots.txt's rules of each origin, and the record binding it to its server.
        self.cache = robots(self)

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

    def known_group(self, origin: str) -> Group | None:
        key = self.keys.cached(origin)
        return self.scheduler.get(key) if key is not None else None

    # -- the gate's queries ------------------------------------------------------------

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

    def server_wait(self, origin: str) -> tuple[float, str, float]:
        """As :meth:`host_wait`, with why the request waits (:meth:`Scheduler.why_wait`)
        and the interval ``origin``'s server is owed."""
        scheduler = self.scheduler
        group = self.known_group(origin)
        site = self.cache.peek(origin)
        if group is not None:
            interval = site.interval if site is not None else max(
                scheduler.policy.delay, group.interval)
            wait, reason = scheduler.why_wait(group, interval, self.delay_of(origin, group.key))
            return wait, reason, interval
        interval = site.interval if site is not None else scheduler.policy.delay
        held = self.cache.known(origin)
        host = held.host if held is not None else None
        wait = max(0.0, scheduler.stored_wait(host)) if host is not None else 0.0
        return wait, "stored" if wait > 0 else "", interval

    # -- a request's start -------------------------------------------------------------

    def start_now(self, held: CachedSite) -> Group | None:
        """The started group of the cached site ``held``'s server when it is known, due
        now and under every cap (no coroutine); None when the request must wait."""
        key = held.key  # the group found as _bound finds it, without its call (the hot path)
        group = self._groups.get(key) if key is not None else None
        if group is None or group.state is not held.host:
            group = self._bound(held)
            if group is None:
                return None
        return group if self.scheduler.try_start(group, held.site.interval) else None

    def start_unpaced_now(self, held: CachedSite) -> Group | None:
        """As :meth:`start_now` for an unpaced request (a browser's subresource): the
        started group when the server is known, does not rest and is under every cap."""
        group = self._bound(held)
        if group is None:
            return None
        return group if self.scheduler.try_start_unpaced(group) else None

    def _bound(self, held: CachedSite) -> Group | None:
        """The group of the cached site ``held``'s server, bound to it (None: unknown here)."""
        key = held.key
        group = self._groups.get(key) if key is not None else None
        if group is None or group.state is not held.host:
            origin = held.site.entry.origin
            group = self.known_group(origin)
            if group is None:
                return None
            self.cache.bind(origin, group.state, group.key)
        return group

    async def server_of(self, origin: str) -> Group:
        """``origin``'s server's group, bound to its cached site."""
        group = self.group_now(origin) or await self.group(origin)
        self.cache.bind(origin, group.state, group.key)
        return group

    def start_at_once(self, group: Group, site: SiteRules) -> bool:
        """Start ``group``'s turn now if it is due and under every cap (no fleet)."""
        return self.scheduler.try_start(group, site.interval)

    async def start(self, group: Group, site: SiteRules) -> Slot | None:
        """Wait for ``group``'s turn (under its caps, and in a fleet for its slot) and
        start it: the fleet slot the request leaves in (None: paced here)."""
        fleet = self.fleet
        return await self.scheduler.start(group, site.interval,
                                          fleet.reserve if fleet is not None else None)

    def start_unpaced_at_once(self, group: Group) -> bool:
        """Start an unpaced request on ``group`` now if its server does not rest and
        it is under every cap."""
        return self.scheduler.try_start_unpaced(group)

    async def start_unpaced(self, group: Group) -> None:
        """Wait until ``group``'s server does not rest and a cap slot is free, and start
        an unpaced request: not held to the interval, no fleet slot, no visit."""
        await self.scheduler.start_unpaced(group)

    def unpaced_wait_reason(self, group: Group) -> str:
        """Why an unpaced request that cannot start now waits."""
        scheduler = self.scheduler
        now = scheduler.now()
        if scheduler.rests_until(group) > now:
            return scheduler.why_wait(group, 0.0, 0.0)[1] or "back-off"
        if group.free <= 0 or group.waiters:
            return "host-cap"
        return "global-cap"

    def wait_reason(self, group: Group, origin: str, interval: float) -> str:
        """Why a request that cannot start now waits (see :data:`robotgate.events.WAIT_REASONS`)."""
        if self.fleet is not None:
            return "fleet-slot"
        wait, reason = self.scheduler.why_wait(group, interval, self.delay_of(origin, group.key))
        if wait > 0:
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

    # -- what answers teach --------------------------------------------------------------

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
        if mem is None or (until is not None and self.shared is not None):
            return self._tell_store(group, until)
        mem.put_host(group.state)
        return None

    async def _tell_store(self, group: Group, until: float | None) -> None:
        shared = self.shared
        try:
            if self._mem is None:
                await self.store.save_host(group.state)
            else:
                self._mem.put_host(group.state)
            if until is not None and shared is not None:
                # After the save: a shared store may send the state's back-off with it.
                await shared.pause(group.key, until)
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

    def done(self, group: Group, holder: asyncio.Task[Any] | None = None) -> None:
        """A request (of the task ``holder``, if it held the slot as one) let go of
        ``group``'s slot."""
        self.scheduler.done(group, holder)

    def close(self) -> None:
        """No request starts from now on: the waits for a turn end with GateClosed."""
        self.closed = True
        self.scheduler.close()
