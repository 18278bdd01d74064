"""The gate's option objects: ``pacing=Pacing(...)`` (defined in the pure
:mod:`robotgate.policy.pacing`) and ``network=Network(...)``, and how the pacing
shorthands ``delay=``, ``max_crawl_delay=`` and ``latency_factor=`` apply to a Pacing."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..policy.pacing import Pacing
from ..politeness.robots_fetcher import RobotsTransport

__all__ = ["Network", "Pacing", "pacing_of"]

_DEFAULTS = Pacing()


def pacing_of(pacing: object, *, delay: float | None = None,
              max_crawl_delay: float | None = None,
              latency_factor: float | None = None) -> Pacing:
    """The gate's :class:`Pacing`: ``pacing`` (default ``Pacing()``) with the keywords
    given (not None) in place of its fields.

    A keyword is a shorthand for the field of the same name.  Given both, the keyword
    applies to a field the Pacing leaves at its default; a field the Pacing sets to
    another value is a conflict, refused with a :class:`ValueError` naming it.

    >>> pacing_of(Pacing(max_backoff=60), delay=2.0).delay
    2.0
    >>> pacing_of(Pacing(delay=3.0), delay=2.0)
    Traceback (most recent call last):
    ...
    ValueError: delay=2.0 and pacing=Pacing(delay=3.0) disagree: give the delay once
    """
    if pacing is None:
        pacing = _DEFAULTS
    elif not isinstance(pacing, Pacing):
        raise TypeError(f"pacing must be a robotgate.Pacing, not {type(pacing).__name__}")
    given = {name: value for name, value in (("delay", delay),
                                             ("max_crawl_delay", max_crawl_delay),
                                             ("latency_factor", latency_factor))
             if value is not None}
    for name, value in given.items():
        field = getattr(pacing, name)
        if field != getattr(_DEFAULTS, name) and field != value:
            raise ValueError(f"{name}={value!r} and pacing=Pacing({name}={field!r}) "
                             f"disagree: give the {name} once")
    if not given:
        return pacing
    return dataclasses.replace(
        pacing, delay=pacing.delay if delay is None else delay,
        max_crawl_delay=pacing.max_crawl_delay if max_crawl_delay is None else max_crawl_delay,
        latency_factor=pacing.latency_factor if latency_factor is None else latency_factor)


@dataclass(frozen=True, slots=True)
class Network:
    """Where the gate's requests may go, how robots.txt is fetched, and how much it keeps.

    A redirect from a public site into a loopback, private or link-local address is
    refused unless ``allow_private_redirects``.  ``robots_transport`` fetches robots.txt
    (default: the gate's aiohttp session).  ``max_origins`` bounds the gate's tables
    (robots.txt rules, servers, keys) and the default memory store.

    ``max_connections`` bounds the sockets the gate's own session holds open, in use
    and idle (the least recently used idle ones are closed first), and the requests
    in flight with them (a request waits for one before its server's turn begins).
    None (the default): three quarters of the process's open-file limit
    (``ulimit -n``), keeping at least 32 and at most 1024 descriptors for the rest.
    A session of the caller's (``session=``) keeps its own connector's limits.

    >>> RobotGate("MyBot/1.0", network=Network(max_origins=10_000))  # doctest: +SKIP
    """

    allow_private_redirects: bool = False
    robots_transport: RobotsTransport | None = None
    max_origins: int = 100_000
    max_connections: int | None = None

    def __post_init__(self) -> None:
        if self.max_origins < 1:
            raise ValueError(f"max_origins must be at least 1, not {self.max_origins!r}")
        if self.max_connections is not None and self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1 (or None), "
                             f"not {self.max_connections!r}")
