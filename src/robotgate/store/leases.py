"""The servers this worker holds a lease on in a shared crawl, and until when.

A named crawl shared through Redis leases each server (politeness key) to one
worker at a time (:mod:`robotgate.store.redis.crawl`).  While this worker surely
holds a server's lease, no other worker asks that server, so its requests are
paced here (:class:`~robotgate.politeness.fleet_slots.FleetSlots` asks the store
for no slot), and fenced by it: a request leaves only before the lease's
deadline (:meth:`Leases.fence`), or goes back unsent (:class:`LapsedLease`).
Times are the event loop's; the crawl state is the only writer.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..error_root import Error

__all__ = ["LapsedLease", "Lease", "Leases"]


class LapsedLease(Error):
    """A request to a server this worker leased, which it no longer surely holds: the
    request must not go out; its URL goes back to the server's queue in the store."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the crawl's lease on {key} lapsed: the request was not sent")
        self.key = key


@dataclass(frozen=True, slots=True)
class Lease:
    """Held surely until ``until`` (the deadline: the lease's end as this worker can
    be sure of it, less a margin); the worker before may have asked the server as
    late as ``free_at`` (so the first request waits an interval from it)."""

    until: float
    free_at: float


class Leases:
    """Politeness key -> :class:`Lease`, for the keys this worker holds; and the keys
    it lost to another worker (until the store leases them to it again)."""

    def __init__(self) -> None:
        self._held: dict[str, Lease] = {}
        self._lost: set[str] = set()

    def hold(self, key: str, until: float, free_at: float | None = None) -> None:
        """``key`` is held until ``until``; ``free_at`` None keeps the one known."""
        known = self._held.get(key)
        if free_at is None:
            free_at = known.free_at if known is not None else float("-inf")
        self._held[key] = Lease(until, free_at)
        self._lost.discard(key)

    def drop(self, key: str) -> None:
        """``key`` was let go (or its crawl ended): no lease, nothing fenced."""
        self._held.pop(key, None)
        self._lost.discard(key)

    def lose(self, key: str) -> None:
        """Another worker took ``key`` over: requests paced under the lease must not go."""
        if self._held.pop(key, None) is not None:
            self._lost.add(key)

    def get(self, key: str, now: float) -> Lease | None:
        """``key``'s lease if it is surely held at ``now``."""
        lease = self._held.get(key)
        return lease if lease is not None and now < lease.until else None

    def lapsed(self, key: str, now: float) -> bool:
        """Whether ``key`` was leased to this worker and is not surely held at ``now``
        (its deadline passed unrenewed, or another worker took it): only the store
        can lease it again."""
        lease = self._held.get(key)
        return now >= lease.until if lease is not None else key in self._lost

    def known(self, key: str) -> bool:
        """Whether ``key`` is leased to this worker, or was until another took it."""
        return key in self._held or key in self._lost

    def fence(self, key: str, now: float) -> float:
        """The deadline of ``key``'s lease, which a request paced under it must leave
        before; :class:`LapsedLease` if it is not surely held at ``now``."""
        lease = self._held.get(key)
        if lease is None or now >= lease.until:
            raise LapsedLease(key)
        return lease.until

    def __len__(self) -> int:
        return len(self._held)

    def __bool__(self) -> bool:
        return bool(self._held)
