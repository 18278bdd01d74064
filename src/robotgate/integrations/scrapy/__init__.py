"""robotgate for Scrapy.

- :class:`RobotgateRobotParser`: a ``ROBOTSTXT_PARSER`` for Scrapy's own
  ``RobotsTxtMiddleware`` (RFC 9309 matching only; imports no Scrapy);
- :class:`RobotGateMiddleware`: a downloader middleware that replaces
  ``RobotsTxtMiddleware`` and keeps all three of robotgate's promises
  (single-flight robots.txt with RFC 9309's status policy, no disallowed
  request, per-host pacing with Crawl-delay and Retry-After).

The middleware's module (and Scrapy) is imported only when it is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .parser import RobotgateRobotParser

if TYPE_CHECKING:
    from .middleware import RobotGateMiddleware, RobotsDisallowed

__all__ = ["RobotGateMiddleware", "RobotgateRobotParser", "RobotsDisallowed"]


def __getattr__(name: str) -> Any:
    if name in ("RobotGateMiddleware", "RobotsDisallowed"):
        from . import middleware

        return getattr(middleware, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
