"""Fleet-wide pacing: request slots handed out by a shared store (Redis).

The store spaces one key's slots ``gap + slack`` apart on its own clock.  A
request that leaves no later than ``slack`` after its slot's start is still
``gap`` from the next one, whichever worker holds that; a request that would
leave later is held back (:class:`LateSlot`) and asks again, with more slack.
"""

from __future__ import annotations

import asyncio
import contextvars

from ..store.base import Store

__all__ = ["FleetSlots", "LateSlot", "Slot"]

_SLACK_MIN = 0.01
_SLACK_MAX = 5.0

#: The slot of the request being sent, checked by the client adapter at the last
#: moment before its first bytes go out.
CURRENT: contextvars.ContextVar[Slot | None] = contextvars.ContextVar("robotgate_slot",
                                                                      default=None)


class LateSlot(Exception):
    """The request would leave after its slot's deadline: it must not go out."""


class Slot:
    """A granted slot as this process sees it: the loop time it may not leave after."""

    __slots__ = ("deadline", "slack")

    def __init__(self) -> None:
        self.deadline = float("inf")
        self.slack = 0.0

    def check(self, now: float) -> None:
        if now > self.deadline:
            raise LateSlot


class FleetSlots:
    """Asks ``store.reserve`` for slots and learns how much slack this process needs."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.slack = _SLACK_MIN
        self.late = 0

    async def reserve(self, key: str, gap: float) -> float | None:
        """Claim ``key``'s next slot; sets :data:`CURRENT`; returns seconds to wait."""
        loop = asyncio.get_running_loop()
        slot = Slot()
        slack = self.slack if gap > 0 else 0.0
        asked = loop.time()
        wait = await self.store.reserve(key, gap + slack if gap > 0 else 0.0)
        slot.slack = slack
        if wait is not None and gap > 0:
            # The slot starts no earlier than `asked + wait`, whatever the clocks say.
            slot.deadline = asked + max(0.0, wait) + slack
        CURRENT.set(slot)
        return wait

    def on_time(self) -> None:
        """A slot was used in time: the slack shrinks slowly."""
        self.slack = max(_SLACK_MIN, self.slack * 0.999)

    def missed(self, slot: Slot) -> None:
        """A slot was missed: grow the slack by how late it was (not compounded)."""
        self.late += 1
        late = asyncio.get_running_loop().time() - (slot.deadline - slot.slack)
        self.slack = min(_SLACK_MAX, max(self.slack, late))
