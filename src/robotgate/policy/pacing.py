"""How far apart requests to one server must be: :class:`Pacing`, the gate's pacing
settings, and the arithmetic on them; pure, no clock of its own.

The scheduler asks this module three questions: what interval an origin's
robots.txt asks for (and whether that is more than the operator allows), how a
429/503 widens a server's interval, and how successes narrow it again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ..robots import RobotsTxt

__all__ = ["Backoff", "Pacing"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Pacing:
    """How the gate paces each server: ``RobotGate(pacing=Pacing(...))``.

    ``delay`` (seconds, default 1) is the least interval between two requests to one
    server; robots.txt's ``Crawl-delay`` and ``Request-rate`` raise it, unless
    ``respect_crawl_delay=False``.  An ask above ``max_crawl_delay`` (default 60 s) is
    never quietly shortened: with ``on_long_delay="skip"`` (the default) the origin is
    skipped with a decision that says why, with ``"honour"`` the whole delay is kept.

    Back-off is multiplicative increase, additive decrease: a 429, or a 503 without
    ``Retry-After``, raises the server's interval to twice the one that was too short
    (at least ``backoff_base`` s, default 0.5; at most ``max_backoff`` s, default 3600,
    which also caps ``Retry-After``); each success takes ``1/backoff_recovery`` of that
    peak off again (default 20 successes back to normal), so against a rate-limited
    server the interval settles just above its limit.  ``latency_factor`` (off by
    default) keeps the interval at least that many times the server's recent response
    time, as Heritrix's ``delayFactor`` does (its default is 5).  ``margin`` (seconds,
    default 0) is added to each interval: the allowance for queueing between the sender
    and the server (a fleet's workers).

    ``RobotGate``'s ``delay=``, ``max_crawl_delay=`` and ``latency_factor=`` keywords are
    shorthands for these fields.  A wrong value raises :class:`ValueError` naming the
    field when the object is made.

    >>> Pacing(delay=1.0).interval_for(5.0)
    5.0
    >>> Pacing(delay=1.0, max_crawl_delay=2.0).too_long(5.0)
    'Crawl-delay 5 s exceeds max_crawl_delay 2 s'
    >>> Pacing(delay=-1)
    Traceback (most recent call last):
    ...
    ValueError: Pacing delay must be a finite number of seconds >= 0, not -1
    """

    delay: float = 1.0
    max_crawl_delay: float = 60.0
    respect_crawl_delay: bool = True
    on_long_delay: Literal["skip", "honour"] = "skip"
    max_backoff: float = 3600.0
    backoff_base: float = 0.5
    backoff_recovery: int = 20
    latency_factor: float | None = None
    margin: float = 0.0

    def __post_init__(self) -> None:
        for name in ("delay", "max_crawl_delay", "max_backoff", "margin"):
            self._seconds(name, getattr(self, name))
        self._seconds("backoff_base", self.backoff_base, positive=True)
        if self.latency_factor is not None:  # 0, as None, is off
            self._seconds("latency_factor", self.latency_factor)
        if not isinstance(self.respect_crawl_delay, bool):
            raise ValueError(f"Pacing respect_crawl_delay must be True or False, "
                             f"not {self.respect_crawl_delay!r}")
        if self.on_long_delay not in ("skip", "honour"):
            raise ValueError(f"Pacing on_long_delay must be 'skip' or 'honour', "
                             f"not {self.on_long_delay!r}")
        recovery = self.backoff_recovery
        if not isinstance(recovery, int) or isinstance(recovery, bool) or recovery < 1:
            raise ValueError(f"Pacing backoff_recovery must be an int >= 1 (successes), "
                             f"not {recovery!r}")

    def _seconds(self, name: str, value: object, positive: bool = False) -> None:
        """Check a field of seconds (or the latency factor) and keep it as a float."""
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) \
            else math.nan
        if not (math.isfinite(number) and (number > 0 if positive else number >= 0)):
            least = "> 0" if positive else ">= 0"
            unit = "" if name == "latency_factor" else " of seconds"
            raise ValueError(f"Pacing {name} must be a finite number{unit} {least}, "
                             f"not {value!r}")
        object.__setattr__(self, name, float(number))  # frozen: set once, here

    def asked(self, rules: RobotsTxt | None, agent: str) -> float | None:
        """Seconds between requests that robots.txt asks of ``agent`` (None: no ask)."""
        if rules is None or not self.respect_crawl_delay:
            return None
        asked = rules.crawl_delay(agent)
        rate = rules.request_rate(agent)
        if rate is not None:
            asked = max(asked or 0.0, rate.delay)
        return asked

    def too_long(self, asked: float | None) -> str | None:
        """Why an origin is skipped for the interval it asks, or None."""
        if asked is None or asked <= self.max_crawl_delay or self.on_long_delay == "honour":
            return None
        return f"Crawl-delay {asked:g} s exceeds max_crawl_delay {self.max_crawl_delay:g} s"

    def interval_for(self, asked: float | None) -> float:
        """The interval of an origin: ``delay`` raised to what robots.txt asks."""
        return self.delay if asked is None else max(self.delay, asked)


class Backoff:
    """A group's adaptive extra interval (AIMD): widened by 429s, narrowed by successes.

    >>> b = Backoff()
    >>> pacing = Pacing(delay=0.1, backoff_base=0.5, backoff_recovery=4)
    >>> b.widen(pacing, 0.1), b.widen(pacing, 0.1)
    (0.5, 1.0)
    >>> for _ in range(2): b.narrow(pacing)
    >>> b.extra
    0.5
    """

    __slots__ = ("extra", "failures", "latency", "peak")

    def __init__(self, extra: float = 0.0, peak: float = 0.0) -> None:
        self.extra = extra  # seconds the group's interval is raised to, at least
        self.peak = peak  # extra at the last widening: the step of each narrowing
        self.failures = 0  # consecutive 429/503 answers
        self.latency = 0.0  # smoothed response time (s), for latency_factor

    @classmethod
    def stored(cls, extra: float, peak: float, pacing: Pacing) -> Backoff:
        """A back-off as a store kept it, within what ``pacing`` could ask (damage, or
        another gate's longer ``max_backoff``, is not waited out).

        >>> Backoff.stored(7200.0, float("nan"), Pacing()).extra
        3600.0
        """
        cap = pacing.max_backoff
        return cls(min(extra, cap) if extra > 0 else 0.0, min(peak, cap) if peak > 0 else 0.0)

    def widen(self, pacing: Pacing, interval: float) -> float:
        """A 429 or a 503 without Retry-After: twice the gap that was too short; return it."""
        self.failures += 1
        current = interval if interval > self.extra else self.extra
        self.extra = min(pacing.max_backoff, max(2.0 * current, pacing.backoff_base))
        self.peak = self.extra
        return self.extra

    def narrow(self, pacing: Pacing) -> None:
        """A success: take one step of the last peak off the extra interval."""
        self.failures = 0
        if self.extra:
            self.extra = max(0.0, self.extra - self.peak / pacing.backoff_recovery)
            if self.extra < 1e-9:
                self.extra = 0.0

    def observe(self, seconds: float) -> None:
        """A response took ``seconds`` from send to headers."""
        self.latency = seconds if not self.latency else 0.7 * self.latency + 0.3 * seconds

    def gap(self, pacing: Pacing, interval: float) -> float:
        """The interval a request must keep after the previous answer."""
        gap = interval if interval > self.extra else self.extra
        factor = pacing.latency_factor
        if factor and self.latency * factor > gap:
            gap = max(gap, min(self.latency * factor, pacing.max_backoff))
        return gap + pacing.margin if gap > 0 else 0.0
