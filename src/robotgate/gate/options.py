"""The rarer settings of :class:`~robotgate.RobotGate`, grouped: ``pacing=Pacing(...)`` and
``network=Network(...)``.  The common ones (``delay``, ``max_crawl_delay``,
``latency_factor``, ...) stay plain keywords of the gate; no field is in both places."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..politeness.robots_fetcher import RobotsTransport

__all__ = ["Network", "Pacing"]


@dataclass(frozen=True, slots=True)
class Pacing:
    """How the gate paces a server beyond ``delay`` and ``max_crawl_delay``.

    ``respect_crawl_delay=False`` ignores robots.txt's ``Crawl-delay`` and
    ``Request-rate``.  An ask above ``max_crawl_delay`` skips the origin
    (``on_long_delay="skip"``) or is kept in full (``"honour"``); it is never quietly
    shortened.  A 429, or a 503 without ``Retry-After``, backs the server off for at
    most ``max_backoff`` seconds.  ``margin`` (seconds) is added to each interval: the
    allowance for queueing between the sender and the server (a fleet's workers).

    >>> RobotGate("MyBot/1.0", pacing=Pacing(on_long_delay="honour"))  # doctest: +SKIP
    """

    respect_crawl_delay: bool = True
    on_long_delay: Literal["skip", "honour"] = "skip"
    max_backoff: float = 3600.0
    margin: float = 0.0

    def __post_init__(self) -> None:
        if self.on_long_delay not in ("skip", "honour"):
            raise ValueError(f"on_long_delay must be 'skip' or 'honour', "
                             f"not {self.on_long_delay!r}")
        if not 0 <= self.max_backoff < math.inf:
            raise ValueError(f"max_backoff must be a number of seconds >= 0, "
                             f"not {self.max_backoff!r}")
        if not 0 <= self.margin < math.inf:
            raise ValueError(f"margin must be a number of seconds >= 0, not {self.margin!r}")


@dataclass(frozen=True, slots=True)
class Network:
    """Where the gate's requests may go, how robots.txt is fetched, and how much it keeps.

    A redirect from a public site into a loopback, private or link-local address is
    refused unless ``allow_private_redirects``.  ``robots_transport`` fetches robots.txt
    (default: the gate's aiohttp session).  ``max_origins`` bounds the gate's tables
    (robots.txt rules, servers, keys) and the default memory store.

    >>> RobotGate("MyBot/1.0", network=Network(max_origins=10_000))  # doctest: +SKIP
    """

    allow_private_redirects: bool = False
    robots_transport: RobotsTransport | None = None
    max_origins: int = 100_000

    def __post_init__(self) -> None:
        if self.max_origins < 1:
            raise ValueError(f"max_origins must be at least 1, not {self.max_origins!r}")
