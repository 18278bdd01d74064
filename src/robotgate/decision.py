"""What robotgate answers when asked about a URL: a verdict that explains itself."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``Allow``/``Disallow`` line of a robots.txt.

    ``pattern`` is the value as matched (percent-encoding normalised);
    ``line`` is its 1-based line number in the original text.
    """

    allow: bool
    pattern: str
    line: int

    def __str__(self) -> str:
        return f"{'Allow' if self.allow else 'Disallow'}: {self.pattern} (line {self.line})"


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether a URL may be fetched, and why.

    ``rule`` is the rule that decided (``None`` when no rule matched);
    ``group`` names the user-agent group that was consulted (``("*",)`` for
    the catch-all group, ``None`` when no group applied); ``outcome`` is set
    when the verdict comes from how fetching robots.txt went (for example
    ``"unreachable"``) rather than from a rule.

    >>> from robotgate import RobotsTxt
    >>> d = RobotsTxt.parse("User-agent: *\\nDisallow: /private\\n").decide("/private/x", "MyBot")
    >>> d.allowed, d.rule.line
    (False, 2)
    >>> print(d)
    disallowed by 'Disallow: /private' (line 2) in the group for '*' (no group names this agent)
    """

    allowed: bool
    reason: str
    rule: Rule | None = None
    group: tuple[str, ...] | None = None
    outcome: str | None = None

    @property
    def line(self) -> int | None:
        """Line number of the deciding rule, if a rule decided."""
        return self.rule.line if self.rule is not None else None

    def __str__(self) -> str:
        return self.reason
