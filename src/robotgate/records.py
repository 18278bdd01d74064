"""The domain records: what is known of an origin's robots.txt and of a host's visits.

Pure data, standard library only; the stores persist them and the gate fills them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["HostState", "Outcome", "RobotsEntry"]


class Outcome:
    """How fetching an origin's robots.txt ended (RFC 9309 section 2.3.1)."""

    OK = "ok"  # 2xx: the body holds the rules
    UNAVAILABLE = "unavailable"  # 4xx, too many redirects: everything allowed
    FORBIDDEN = "forbidden"  # 401/403 under the classic convention: everything disallowed
    UNREACHABLE = "unreachable"  # 429, 5xx, network error: everything disallowed

    ALL = (OK, UNAVAILABLE, FORBIDDEN, UNREACHABLE)


#: Bodies up to this size stay in their entry, wherever it is kept (the cache's
#: site, the memory store): a copy without the body or compression saves little.
SMALL_BODY = 256


@dataclass(slots=True)
class RobotsEntry:
    """What is known of one origin's robots.txt.

    The raw body is kept (not the parsed rules) so that robots with different
    names can share one store.  When a refetch fails but an earlier good copy
    exists, ``outcome`` stays ``"ok"`` with that body and ``failures`` counts up.
    """

    origin: str
    outcome: str
    fetched_at: float
    fresh_until: float
    status: int | None = None
    body: bytes | None = None
    content_type: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    failures: int = 0
    final_url: str | None = None
    detail: str = ""
    # Unix time of the last successful fetch or revalidation of `body`.
    good_at: float | None = None

    def is_fresh(self, now: float) -> bool:
        return now < self.fresh_until

    def copy(self, **changes: object) -> RobotsEntry:
        """A copy with ``changes`` (field names) applied."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(slots=True)
class HostState:
    """Per-origin visit bookkeeping, as LWP::RobotUA kept it (and more)."""

    origin: str
    visits: int = 0
    last_visit: float | None = None
    # Unix time before which no request may start (pacing and Retry-After).
    next_allowed: float = 0.0
    # Visits since robots.txt was last (re)checked, for the recheck-after-N-visits policy.
    visits_since_check: int = 0
    # The adaptive back-off (AIMD) its 429/503 answers earned: seconds the interval is
    # raised to, and that back-off at its last widening (each success takes a
    # ``backoff_recovery``-th of it off).  Stored so that a restart, an evicted
    # group or another worker of the fleet starts from it, not from the plain interval.
    backoff: float = 0.0
    backoff_peak: float = 0.0
