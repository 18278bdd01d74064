"""What entitles a request to leave now, looked at once more as its first bytes go.

A request's turn holds a :class:`Permit`: a fleet slot
(:class:`~robotgate.politeness.fleet_slots.Slot`), a crawl lease's fence, or, paced
here, its server's own interval (:class:`~robotgate.politeness.scheduler.PacedHere`).
Every client adapter calls :meth:`Permit.check` as close to the request's first bytes
as its client lets it (docs/fleet.md, *The last look*); a permit that no longer holds
raises :class:`LateSlot` (or its :class:`TooSoon`) and nothing is sent: the turn waits
for the next and sends then.
"""

from __future__ import annotations

from ..error_root import Error

__all__ = ["LateSlot", "Permit", "TooSoon"]


class LateSlot(Error):
    """The request would leave after its slot's deadline: it must not go out."""


class TooSoon(LateSlot):
    """Another request to the server left less than an interval before this one would:
    it must not go out yet (its turn waits until the interval is over)."""


class Permit:
    """What entitles one request to leave; :meth:`check` is its last look."""

    __slots__ = ()

    def check(self, now: float) -> None:
        """The request leaves at ``now`` (the running loop's time) unless this raises
        :class:`LateSlot`."""
        raise NotImplementedError
