"""What the gate raises at its callers."""

from __future__ import annotations

from .decision import Decision
from .urls import redact

__all__ = ["Disallowed", "GateClosed"]


class Disallowed(Exception):
    """robots.txt forbids this URL; ``decision`` says which rule or fetch outcome.

    LWP::RobotUA answered such requests with "403 Forbidden by robots.txt".
    The URL is shown and kept without its password.
    """

    def __init__(self, url: str, decision: Decision) -> None:
        url = redact(url)
        super().__init__(f"{url}: {decision.reason}")
        self.url = url
        self.decision = decision


class GateClosed(RuntimeError):
    """The gate was closed while a task was still asking it something."""
