"""The servers this worker holds a lease on in a shared crawl, and until when.

A named crawl shared through Redis leases each server (politeness key) to one
worker at a time (:mod:`robotgate.store.redis.crawl`).  While this worker surely
holds a server's lease, no other worker asks that server, so its requests are
paced here (:class:`~robotgate.politeness.fleet_slots.FleetSlots` asks the store
for no slot).  Times are the event loop's; the crawl state is the only writer.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Lease", "Leases"]


@dataclass(frozen=True, slots=True)
class Lease:
    """Held surely until ``until``; the worker before may have asked the server as
    late as ``free_at`` (so the first request waits an interval from it)."""

    until: float
    free_at: float


class Leases:
    """Politeness key -> :class:`Lease`, for the keys this worker holds."""

    def __init__(self) -> None:
        self._held: dict[str, Lease] = {}

    def hold(self, key: str, until: float, free_at: float | None = None) -> None:
        """``key`` is held until ``until``; ``free_at`` None keeps the one known."""
        known = self._held.get(key)
        if free_at is None:
            free_at = known.free_at if known is not None else float("-inf")
        self._held[key] = Lease(until, free_at)

    def drop(self, key: str) -> None:
        self._held.pop(key, None)

    def get(self, key: str, now: float) -> Lease | None:
        """``key``'s lease if it is surely held at ``now``."""
        lease = self._held.get(key)
        return lease if lease is not None and now < lease.until else None

    def __len__(self) -> int:
        return len(self._held)

    def __bool__(self) -> bool:
        return bool(self._held)
