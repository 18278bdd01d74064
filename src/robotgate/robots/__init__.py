"""Pure robots.txt parsing and matching: the RFC 9309 dialect and the classic one.

Standard library only, no I/O.
"""

from __future__ import annotations

from .rfc9309 import DEFAULT_MAX_BYTES, MAX_LINE_LENGTH, RequestRate, RobotsTxt

__all__ = ["DEFAULT_MAX_BYTES", "MAX_LINE_LENGTH", "RequestRate", "RobotsTxt"]
