"""robotgate for Scrapy.

- :class:`RobotgateRobotParser`: a ``ROBOTSTXT_PARSER`` for Scrapy's own
  ``RobotsTxtMiddleware`` (RFC 9309 matching only; imports no Scrapy);
- :class:`RobotGateMiddleware`: a downloader middleware that replaces
  ``RobotsTxtMiddleware`` and keeps all three of robotgate's promises
  (single-flight robots.txt with RFC 9309's status policy, no disallowed
  request, per-host pacing with Crawl-delay and Retry-After);
- :class:`RobotGatePointersMiddleware`: a spider middleware that makes each request a
  callback yields from a response a pointer of that page (judged under the
  private-network rule).

The middleware's module (and Scrapy) is imported only when it is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .parser import RobotgateRobotParser

if TYPE_CHECKING:
    from .middleware import RobotGateMiddleware, RobotsDisallowed
    from .pointers import RobotGatePointersMiddleware

__all__ = ["RobotGateMiddleware", "RobotGatePointersMiddleware", "RobotgateRobotParser",
           "RobotsDisallowed"]


def __getattr__(name: str) -> Any:
    if name in ("RobotGateMiddleware", "RobotsDisallowed"):
        from . import middleware

        return getattr(middleware, name)
    if name == "RobotGatePointersMiddleware":
        from . import pointers

        return pointers.RobotGatePointersMiddleware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
