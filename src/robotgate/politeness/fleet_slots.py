"""Fleet-wide pacing: request slots handed out by a shared store (Redis).

The store spaces one key's slots ``gap + slack`` apart on its own clock.  A
request that leaves no later than ``slack`` after its slot's start is still
``gap`` from the next one, whichever worker holds that; a request that would
leave later is held back (:class:`LateSlot`) and asks again, with more slack.

This process only knows that the server granted the slot somewhere within the
round trip, so the slot starts no earlier than ``asked + wait``, and the
deadline counts from there: the slack covers the round trip as well as the
loop's own lateness.  The two are learnt apart.  The loop's lateness (measured
from the reply) shrinks slowly; the round-trip allowance grows only when a slow
reply cost a slot, at most doubling per miss, and shrinks with each quick
reply, so one Redis stall does not widen every later slot.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..store.base import SlotAhead, Slots, StoreError
from ..store.leases import LapsedLease, Leases
from .permits import LateSlot, Permit

__all__ = ["FleetSlots", "LateSlot", "LeaseFence", "Slot"]

_SLACK_MIN = 0.01
_SLACK_MAX = 5.0
# The time a request's first bytes may take from its last look to the server (loopback at
# load: about 0.1 ms): a request leaves this much before its slot ends, so that it
# reaches the server within it.
_ON_THE_WIRE = 0.001
# Per quick reply, the round-trip allowance keeps at least this share of itself
# (so a peak is remembered for a while), and never less than the reply took.
_TRIP_DECAY = 0.95
# Refusals of a slot beyond the store's horizon in a row, at most (each waits until the
# slot asked for was within it: only other workers taking slots first refuse it again).
_REFUSALS = 1000


class Slot(Permit):
    """A granted slot as this process sees it: how long to wait for it, and the loop
    time the request may not leave after.  The request's turn holds it."""

    __slots__ = ("deadline", "ready", "rtt", "slack", "trip", "wait")

    def __init__(self) -> None:
        #: Seconds from the store's reply until the slot starts.
        self.wait = 0.0
        self.deadline = float("inf")
        #: When the request could leave at the earliest (reply + wait).
        self.ready = float("inf")
        #: The slack asked for, and the round-trip allowance in it.
        self.slack = 0.0
        self.trip = 0.0
        #: How long the store took to grant it.
        self.rtt = 0.0

    def check(self, now: float) -> None:
        if now > self.deadline:
            raise LateSlot


class LeaseFence(Slot):
    """A request paced here under its server's crawl lease: it may leave until the
    lease's deadline (the lease surely held), and never after it."""

    __slots__ = ("key",)

    def __init__(self, key: str, deadline: float) -> None:
        super().__init__()
        self.key = key
        self.deadline = deadline

    def check(self, now: float) -> None:
        if now >= self.deadline:
            raise LapsedLease(self.key)


class FleetSlots:
    """Asks ``store``, a store's fleet slots, for slots and learns how much slack this
    process needs.

    :attr:`slack` follows the loop's lateness after a slot is ready, :attr:`trip`
    the store's round trips; each slot asks for both.  ``clock`` (default: the
    running loop's) is the time :meth:`Slot.check` is given.
    """

    def __init__(self, store: Slots, clock: Callable[[], float] | None = None,
                 leases: Leases | None = None) -> None:
        self.store = store
        #: Keys this worker holds a crawl lease on: paced here, no slot asked.
        self.leases = leases
        # Leased key -> the lease's free_at once its first request was paced from it.
        self._paced: dict[str, float] = {}
        self.slack = _SLACK_MIN
        self.trip = 0.0
        self.late = 0
        self._clock = clock

    def _now(self) -> float:
        clock = self._clock
        return clock() if clock is not None else asyncio.get_running_loop().time()

    def settled(self, key: str | None) -> bool:
        """Whether this worker surely holds ``key``'s lease and has paced its first
        request under it from the worker before: the rest go by the local schedule."""
        if key is None or self.leases is None:
            return False
        lease = self.leases.get(key, self._now())
        return lease is not None and self._paced.get(key) == lease.free_at

    async def reserve(self, key: str, gap: float) -> Slot | None:
        """Claim ``key``'s next slot and return it (its :attr:`Slot.wait` is how long
        to wait for it); None: paced here, by the caller's own schedule, as a leased
        key is."""
        leases = self.leases
        if leases is not None:
            if leases.lapsed(key, self._now()):
                # No slot instead: the worker that took the server over asks none.
                raise LapsedLease(key)
            lease = leases.get(key, self._now()) if gap > 0 else None
            if lease is not None:
                # The worker before may have asked as late as free_at.
                first = lease.free_at + gap - self._now()
                if first > 0:
                    await asyncio.sleep(first)
                if len(self._paced) > 100_000:
                    self._paced.clear()
                self._paced[key] = lease.free_at
                return None
        slot = Slot()
        trip = self.trip if gap > 0 else 0.0
        slack = self.slack + trip if gap > 0 else 0.0
        for _ in range(_REFUSALS):
            asked = self._now()
            try:
                wait = await self.store.reserve(key, gap + slack if gap > 0 else 0.0, slack)
                break
            except SlotAhead as refused:
                # The store grants no slot beyond its horizon: asked again once within.
                await asyncio.sleep(max(_SLACK_MIN, refused.retry_in))
        else:
            raise StoreError(f"the store refused {key}'s slot {_REFUSALS} times in a row:"
                             " its slots are taken further ahead than its horizon")
        replied = self._now()
        slot.slack, slot.trip, slot.rtt = slack, trip, replied - asked
        # Quick replies bring the allowance down; only a missed slot raises it.
        self.trip = max(self.trip * _TRIP_DECAY, min(self.trip, slot.rtt))
        slot.wait = ahead = max(0.0, wait)
        if gap > 0:
            # The server may have granted it as early as `asked`: counting from the
            # reply would let a slow reply carry the request past `start + slack`,
            # closer than `gap` to the next slot (another worker's).
            slot.deadline = asked + ahead + slack - _ON_THE_WIRE
            slot.ready = replied + ahead
        return slot

    def fence(self, key: str) -> LeaseFence | None:
        """A request paced here (no slot) is leaving: the fence of ``key``'s lease it
        leaves within (:class:`~robotgate.store.leases.LapsedLease` if the lease is
        not surely held now); None when this worker never leased ``key`` (the store
        does not pace it)."""
        leases = self.leases
        if leases is None or not leases.known(key):
            return None
        return LeaseFence(key, leases.fence(key, self._now()))

    def on_time(self) -> None:
        """A slot was used in time: the slack shrinks slowly."""
        self.slack = max(_SLACK_MIN, self.slack * 0.999)

    def missed(self, slot: Slot) -> None:
        """A slot was missed: grow the slack by how late it was (not compounded).

        The loop's part counts from the reply, not from the request: a slow round
        trip is the store's, and raises :attr:`trip` by one step only, so that a
        stall (all replies slow at once) costs its slots, not the crawl's pace.
        A lease's fence is not asked again: :class:`LapsedLease`.
        """
        if isinstance(slot, LeaseFence):
            raise LapsedLease(slot.key)
        self.late += 1
        late = self._now() - slot.ready
        self.slack = min(_SLACK_MAX, max(self.slack, late))
        if slot.rtt > slot.trip:
            step = min(slot.rtt, 2.0 * slot.trip + _SLACK_MIN)
            self.trip = min(_SLACK_MAX, max(self.trip, step))
