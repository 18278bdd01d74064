"""robots.txt entries as a successful fetch leaves them, for tests of stores and policies."""

from __future__ import annotations

import time

from robotgate.records import Outcome, RobotsEntry

RULES = b"User-agent: *\nDisallow: /x\n"


def ok_entry(origin: str = "https://example.com", body: bytes | None = RULES, *,
             now: float | None = None, fresh_for: float = 3600.0,
             **changes: object) -> RobotsEntry:
    """A 200 robots.txt of ``body`` fetched at ``now`` (the clock unless told), fresh for
    ``fresh_for`` s; ``changes`` set any other field."""
    at = time.time() if now is None else now
    entry = RobotsEntry(origin, Outcome.OK, at, at + fresh_for, status=200, body=body,
                        content_type="text/plain", good_at=at)
    return entry.copy(**changes) if changes else entry
