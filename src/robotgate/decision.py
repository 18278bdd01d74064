"""What robotgate answers when asked about a URL: a verdict that explains itself."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .redaction import redact_text

if TYPE_CHECKING:
    from .policy.tdm import TdmVerdict

__all__ = ["Decision", "Rule", "UsageRule"]


class _Nothing(Mapping[str, bool]):
    """The usage and signals of a decision without any: empty, read-only, shared.

    Hashable, so it can be a plain dataclass default (a factory would cost
    every decision a call).
    """

    __slots__ = ()

    def __getitem__(self, key: str) -> bool:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"


_NOTHING: Mapping[str, bool] = _Nothing()
# Reasons as said (redacted), by reason as made: bounded, emptied when full.
_SAID: dict[str, str] = {}
_SAID_MAX = 4096


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
class UsageRule:
    """One ``Content-Usage`` (or ``Content-Signal``) line of a robots.txt.

    ``pattern`` is the path as matched (percent-encoding normalised), ``""``
    when the line gives no path (then it applies to every path, below any
    rule with one); ``value`` is the statement of preference as written;
    ``line`` is its 1-based line number; ``key`` the line's key.

    >>> str(UsageRule("/ai-ok/", "train-ai=y", 5))
    'Content-Usage: /ai-ok/ train-ai=y (line 5)'
    """

    pattern: str
    value: str
    line: int
    key: str = "Content-Usage"

    @property
    def text(self) -> str:
        """The line as matched, without its line number."""
        path = f"{self.pattern} " if self.pattern else ""
        return f"{self.key}: {path}{self.value}"

    def __str__(self) -> str:
        return f"{self.text} (line {self.line})"


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether a URL may be fetched, and why; and what the site says about using it.

    ``rule`` is the rule that decided (``None`` when no rule matched);
    ``group`` names the user-agent group that was consulted (``("*",)`` for
    the catch-all group, ``None`` when no group applied); ``outcome`` is set
    when the verdict comes from how fetching robots.txt went (for example
    ``"unreachable"``) rather than from a rule.  ``reason`` and ``error`` never hold
    a password, a query's or fragment's value or a header's
    (:func:`robotgate.redaction.redact_text` as the decision is made); the robots.txt
    rule quoted stays whole, the site's public text.  :attr:`unreachable` tells a site
    that could not be asked (a dead host, a DNS failure, a 5xx: disallowed, as
    RFC 9309 says) from one whose rules refuse; ``error`` then says what went wrong.

    ``usage`` maps AI-preference labels (``"train-ai"``, ...) to ``True``
    (allowed) or ``False`` (disallowed), from the group's ``Content-Usage``
    rules in ``usage_rules``; a label that is absent is unknown.  ``signals``
    holds the ``Content-Signal`` labels the same way, from ``signal_rules``.
    Both are empty for a URL that may not be crawled.  ``tdm`` says whether
    text-and-data-mining rights are reserved for an allowed URL, by its origin's
    ``/.well-known/tdmrep.json`` (from a gate with ``tdmrep=True``, else ``None``).

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
    # Mappings cannot be hashed; equal decisions still hash alike without them.
    usage: Mapping[str, bool] = field(default=_NOTHING, hash=False)
    signals: Mapping[str, bool] = field(default=_NOTHING, hash=False)
    usage_rules: tuple[UsageRule, ...] = ()
    signal_rules: tuple[UsageRule, ...] = ()
    # A gate with tdmrep=True: whether TDM rights are reserved (W3C TDMRep).
    tdm: TdmVerdict | None = field(default=None, compare=False)
    # Why robots.txt could not be fetched ("unreachable"): the error, or the status answered.
    error: str | None = None

    def __post_init__(self) -> None:
        # The one constructor of every decision: its texts, which may quote a foreign
        # exception or a URL, leave without a secret (robotgate.redaction).
        reason = _SAID.get(self.reason)
        if reason is None:  # the parser makes a few reasons over and over: each said once
            rule = self.rule
            if rule is not None and "//" in self.reason:
                # The rule it quotes is the site's public text, not a URL of the caller's.
                quoted = repr(f"{'Allow' if rule.allow else 'Disallow'}: {rule.pattern}")
                reason = redact_text(self.reason, public=quoted)
            else:
                reason = redact_text(self.reason)
            if len(_SAID) >= _SAID_MAX:
                _SAID.clear()
            _SAID[self.reason] = reason
        if reason is not self.reason:
            object.__setattr__(self, "reason", reason)
        if self.error is not None:
            error = redact_text(self.error)
            if error is not self.error:
                object.__setattr__(self, "error", error)

    @property
    def unreachable(self) -> bool:
        """Whether robots.txt was unreachable (the site could not be asked), not a
        rule or the site's answer: the URL is disallowed all the same.

        >>> Decision(False, "...", outcome="unreachable", error="connection refused").unreachable
        True
        """
        return self.outcome == "unreachable"

    @property
    def line(self) -> int | None:
        """Line number of the deciding rule, if a rule decided."""
        return self.rule.line if self.rule is not None else None

    @property
    def usage_reason(self) -> str | None:
        """Which ``Content-Usage``/``Content-Signal`` lines gave :attr:`usage` and
        :attr:`signals`, or ``None`` when none applies.

        >>> d = Decision(True, "allowed", usage={"train-ai": False},
        ...              usage_rules=(UsageRule("", "train-ai=n", 4),))
        >>> d.usage_reason
        "usage train-ai=n by 'Content-Usage: train-ai=n' (line 4)"
        """
        parts = []
        if self.usage_rules:
            parts.append(_explain("usage", self.usage, self.usage_rules, "y", "n"))
        if self.signal_rules:
            parts.append(_explain("signals", self.signals, self.signal_rules, "yes", "no"))
        return "; ".join(parts) if parts else None

    def __str__(self) -> str:
        if not (self.usage_rules or self.signal_rules):
            return self.reason
        return f"{self.reason}; {self.usage_reason}"


def _explain(
    what: str, values: Mapping[str, bool], rules: tuple[UsageRule, ...], yes: str, no: str
) -> str:
    said = ", ".join(f"{k}={yes if v else no}" for k, v in values.items()) or "unknown"
    by = " and ".join(f"{r.text!r} (line {r.line})" for r in rules)
    return f"{what} {said} by {by}"
