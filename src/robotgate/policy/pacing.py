"""How far apart requests to one server must be: pure arithmetic, no clock of its own.

The scheduler asks this module three questions: what interval an origin's
robots.txt asks for (and whether that is more than the operator allows), how a
429/503 widens a group's interval, and how successes narrow it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ..robots import RobotsTxt

__all__ = ["Backoff", "PacingPolicy"]


@dataclass(frozen=True, slots=True)
class PacingPolicy:
    """Knobs of the scheduler.

    ``delay`` is the least interval between two requests to one server;
    robots.txt's ``Crawl-delay``/``Request-rate`` raise it.  An ask above
    ``max_crawl_delay`` is never quietly shortened: with ``on_long_delay="skip"``
    (the default) the origin is skipped with a decision that says why, with
    ``"honour"`` the whole delay is kept.

    Back-off is multiplicative increase, additive decrease: a 429, or a 503
    without ``Retry-After``, raises the group's interval to twice the one that
    was too short (at least ``backoff_base`` s, at most ``max_backoff``); each
    success takes ``1/backoff_recovery`` of that peak off again, so against a
    rate-limited server the interval settles just above its limit.  ``latency_factor`` (off by
    default) keeps the interval at least that many times the server's recent
    response time, as Heritrix's ``delayFactor`` does.

    >>> PacingPolicy(delay=1.0).interval_for(5.0)
    5.0
    >>> PacingPolicy(delay=1.0, max_crawl_delay=2.0).too_long(5.0)
    'Crawl-delay 5 s exceeds max_crawl_delay 2 s'
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
    >>> p = PacingPolicy(delay=0.1, backoff_base=0.5, backoff_recovery=4)
    >>> b.widen(p, 0.1), b.widen(p, 0.1)
    (0.5, 1.0)
    >>> for _ in range(2): b.narrow(p)
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
    def stored(cls, extra: float, peak: float, policy: PacingPolicy) -> Backoff:
        """A back-off as a store kept it, within what ``policy`` could ask (damage, or
        another policy's longer ``max_backoff``, is not waited out).

        >>> Backoff.stored(7200.0, float("nan"), PacingPolicy()).extra
        3600.0
        """
        cap = policy.max_backoff
        return cls(min(extra, cap) if extra > 0 else 0.0, min(peak, cap) if peak > 0 else 0.0)

    def widen(self, policy: PacingPolicy, interval: float) -> float:
        """A 429 or a 503 without Retry-After: twice the gap that was too short; return it."""
        self.failures += 1
        current = interval if interval > self.extra else self.extra
        self.extra = min(policy.max_backoff, max(2.0 * current, policy.backoff_base))
        self.peak = self.extra
        return self.extra

    def narrow(self, policy: PacingPolicy) -> None:
        """A success: take one step of the last peak off the extra interval."""
        self.failures = 0
        if self.extra:
            self.extra = max(0.0, self.extra - self.peak / policy.backoff_recovery)
            if self.extra < 1e-9:
                self.extra = 0.0

    def observe(self, seconds: float) -> None:
        """A response took ``seconds`` from send to headers."""
        self.latency = seconds if not self.latency else 0.7 * self.latency + 0.3 * seconds

    def gap(self, policy: PacingPolicy, interval: float) -> float:
        """The interval a request must keep after the previous answer."""
        gap = interval if interval > self.extra else self.extra
        factor = policy.latency_factor
        if factor and self.latency * factor > gap:
            gap = max(gap, min(self.latency * factor, policy.max_backoff))
        return gap + policy.margin if gap > 0 else 0.0
