"""Pure robots.txt parsing and matching: the RFC 9309 dialect and the classic one.

Standard library only, no I/O.  :class:`RobotsTxt` (in :mod:`.rules`) is the
query interface; each dialect implements it in its own module, and this is
the one module that names them all and registers them.
"""

from __future__ import annotations

from .body import DEFAULT_MAX_BYTES, decode_body
from .classic import ClassicRobotsTxt, parse_classic
from .rfc9309 import MAX_LINE_LENGTH, Rfc9309Rules, parse_rfc9309
from .rules import (
    DEFAULT_DIALECT,
    AgentLeftOut,
    DelayLine,
    RequestRate,
    RobotsTxt,
    dialects,
    register_dialect,
)

__all__ = [
    "DEFAULT_DIALECT",
    "DEFAULT_MAX_BYTES",
    "DIALECTS",
    "MAX_LINE_LENGTH",
    "AgentLeftOut",
    "ClassicRobotsTxt",
    "DelayLine",
    "RequestRate",
    "Rfc9309Rules",
    "RobotsTxt",
    "decode_body",
    "dialects",
    "register_dialect",
]

register_dialect("rfc9309", parse_rfc9309, Rfc9309Rules)
register_dialect("classic", parse_classic, ClassicRobotsTxt)

#: The dialect names ``RobotsTxt.parse(body, dialect=...)`` accepts.
DIALECTS: tuple[str, ...] = dialects()
