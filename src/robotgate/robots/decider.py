"""What an RFC 9309 file keeps per User-Agent to explain its verdicts cheaply.

Pure and synchronous; imports only the standard library.
"""

from __future__ import annotations

from typing import Protocol

from ..decision import Decision, Rule
from .patterns import RuleSet
from .usage import UsageRules

__all__ = ["ROBOTS_ALLOWED", "Decider", "is_robots_path"]

ROBOTS_ALLOWED = Decision(True, "/robots.txt is always allowed (RFC 9309 2.2.2)")
_NO_TABLE: dict[int, Decision] = {}  # shared, never written


def is_robots_path(path: str) -> bool:
    """Is ``path`` (normalised, with query) the robots.txt file itself?"""
    return path[:11] == "/robots.txt" and path[11:12] in ("", "?")


class Group(Protocol):
    """The parts of a parsed group a :class:`Decider` reads."""

    @property
    def usage(self) -> object: ...

    def names(self) -> tuple[str, ...]: ...

    def ruleset(self) -> RuleSet: ...

    def usage_rules(self) -> tuple[UsageRules, UsageRules] | None: ...


class Decider:
    """The group one User-Agent reads, and each rule's explanation, built the
    first time that rule decides.

    ``direct`` holds, by rule index (-1: no rule matched), the decision
    ``decide()`` returns as it is, or ``None`` when the path must still be
    looked at (usage rules, or a Disallow that could match /robots.txt):
    then ``table`` holds the explanation.
    """

    __slots__ = ("direct", "fallback", "group", "rules", "table", "usage")

    def __init__(self, group: Group, fallback: bool) -> None:
        self.group = group
        self.fallback = fallback  # the '*' group stands in: no group names the agent
        self.rules = group.ruleset()
        self.direct: dict[int, Decision | None] = {}
        self.table: dict[int, Decision] = _NO_TABLE  # most groups never need one
        self.usage = bool(group.usage)

    def learn(self, i: int) -> Decision | None:
        """Explain rule ``i`` once; its ``direct`` entry."""
        decision = self.explain(i)
        if decision.allowed:
            final = not self.usage  # usage applies to what may be crawled
        else:
            # A literal prefix can match "/robots.txt[?...]" only as a prefix of
            # "/robots.txt" or by starting with "/robots.txt?"; a wildcard may.
            assert decision.rule is not None
            prefix = decision.rule.pattern.rstrip("*")
            final = not ("*" in prefix or prefix[-1:] == "$" or "/robots.txt".startswith(prefix)
                         or prefix.startswith("/robots.txt?"))
        if final:
            self.direct[i] = decision
            return decision
        if self.table is _NO_TABLE:
            self.table = {}
        self.table[i] = decision
        self.direct[i] = None
        return None

    def explain(self, i: int, exact: bool = True) -> Decision:
        """The decision of rule ``i`` (-1: no rule matched), with its reason."""
        agents = self.group.names()
        names = ", ".join(repr(a) for a in agents)
        where = f"the group for {names}" + (
            " (no group names this agent)" if self.fallback else "")
        bound = "" if exact else (
            " (the path is too long to check exactly against this group's wildcard rules "
            "within robotgate's work bound; undecided Disallow rules count as matching)")
        if i < 0:
            return Decision(True, f"allowed: no rule matches in {where}{bound}", None, agents)
        rule: Rule = self.rules.rule(i)
        verb = "allowed" if rule.allow else "disallowed"
        pattern = f"{'Allow' if rule.allow else 'Disallow'}: {rule.pattern}"
        return Decision(rule.allow, f"{verb} by {pattern!r} (line {rule.line}) in {where}{bound}",
                        rule, agents)

    def usage_of(self, decision: Decision, path: str) -> Decision:
        """``decision``, an allowed one, with what the group's usage rules say of
        ``path`` (usage applies only to what may be crawled: draft-ietf-aipref-attach)."""
        compiled = self.group.usage_rules()
        if compiled is None:
            return decision
        (usage, usage_rules), exact = compiled[0].match_exact(path)
        (signals, signal_rules), exact_signals = compiled[1].match_exact(path)
        if not (usage_rules or signal_rules):
            return decision
        reason = decision.reason
        if not (exact and exact_signals):
            reason += ("; usage: the path is too long, or the rules of its length too "
                       "many, to match exactly within robotgate's work bound, so every "
                       "usage rule counts and a label is allowed only if all of them allow it")
        return Decision(decision.allowed, reason, decision.rule, decision.group,
                        decision.outcome, usage, signals, usage_rules, signal_rules)
