"""Pure policy: what robots.txt fetch outcomes mean for an origin.

Standard library only, no I/O; the clock is always an argument.
"""

from __future__ import annotations

from .fetch import (
    FetchPolicy,
    entry_for_error,
    entry_for_not_modified,
    entry_for_redirect_failure,
    entry_for_response,
    outcome_decision,
    parse_retry_after,
)

__all__ = [
    "FetchPolicy",
    "entry_for_error",
    "entry_for_not_modified",
    "entry_for_redirect_failure",
    "entry_for_response",
    "outcome_decision",
    "parse_retry_after",
]
