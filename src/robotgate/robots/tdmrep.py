"""A site's ``/.well-known/tdmrep.json``: the W3C TDM Reservation Protocol's site-wide file.

The file is a JSON array of rules ``{"location": PATTERN, "tdm-reservation": 0|1,
"tdm-policy": URL}``.  A path takes the first rule whose location matches it
("the most specific match is the first in sequence"); locations match as
robots.txt paths do (``*``, a final ``$``, percent-encoding normalised).  No
matching rule: the reservation is unset.

A page's own ``tdm-reservation`` header or meta tag supersedes the file;
:mod:`robotgate.robots.directives` reads those, and :mod:`robotgate.policy.tdm`
combines the two.  Pure and synchronous; bad input gets an empty answer saying why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from ..urls import normalise_path, path_of, request_path
from .patterns import RuleSet

__all__ = [
    "MAX_RULES",
    "TdmRep",
    "TdmRepRule",
    "parse_tdmrep_json",
]

#: Rules read from one file; the rest are left out (and the file's problem says so).
MAX_RULES = 1000
# Characters of a location or policy kept; a longer one is a bad rule.
_MAX_LOCATION = 2048
_MAX_POLICY = 2048
_PROBLEMS_SHOWN = 3


@dataclass(frozen=True)
class TdmRepRule:
    """One rule of the file: the paths ``location`` matches are reserved or not."""

    location: str
    reserved: bool
    policy: str | None = None


@dataclass(frozen=True)
class TdmRep:
    """A parsed ``tdmrep.json``; ``problem`` says what was wrong with the file, if anything.

    >>> rep = parse_tdmrep_json(b'[{"location": "/", "tdm-reservation": 1}]')
    >>> rep.for_path("/any/page")
    TdmRepRule(location='/', reserved=True, policy=None)
    """

    rules: tuple[TdmRepRule, ...] = ()
    problem: str | None = None

    def for_path(self, path: str) -> TdmRepRule | None:
        """The first rule whose location matches ``path`` (a path or a URL), or ``None``.

        A match too costly to decide (a hostile pattern against a long path) counts
        for a rule that reserves and not for one that does not: the answer
        never lifts a reservation the exact one would keep.
        """
        target = _path(path)
        for rule in self.rules:
            index, exact = _compiled(rule.location).match_exact(target)
            if index >= 0 if exact else rule.reserved:
                return rule
        return None


def parse_tdmrep_json(body: bytes, *, max_bytes: int = 512 * 1024) -> TdmRep:
    """The rules of a ``tdmrep.json`` body.  Never raises on bad input: a body that
    is not a JSON array of rules gives no rules and a ``problem``; a bad rule is
    left out, and the ``problem`` names it."""
    if len(body) > max_bytes:
        return TdmRep((), f"larger than {max_bytes} bytes: not read")
    try:
        data = json.loads(body.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return TdmRep((), "not UTF-8")
    except (ValueError, RecursionError) as exc:
        return TdmRep((), f"not JSON: {str(exc)[:200]}")
    if not isinstance(data, list):
        return TdmRep((), f"not a JSON array but {_kind(data)}")
    rules: list[TdmRepRule] = []
    problems: list[str] = []
    for n, item in enumerate(data[:MAX_RULES], 1):
        rule = _rule(item)
        if isinstance(rule, str):
            problems.append(f"rule {n}: {rule}, left out")
        else:
            rules.append(rule)
    if len(data) > MAX_RULES:
        problems.append(f"only the first {MAX_RULES} of {len(data)} rules are read")
    problem = None
    if problems:
        problem = "; ".join(problems[:_PROBLEMS_SHOWN])
        if len(problems) > _PROBLEMS_SHOWN:
            problem += f"; and {len(problems) - _PROBLEMS_SHOWN} more"
    return TdmRep(tuple(rules), problem)


def _rule(item: object) -> TdmRepRule | str:
    """A rule, or what is wrong with it."""
    if not isinstance(item, dict):
        return f"not an object but {_kind(item)}"
    location = item.get("location")
    if not isinstance(location, str) or not location or len(location) > _MAX_LOCATION:
        return "no location (a non-empty string)"
    value = item.get("tdm-reservation")
    if isinstance(value, bool) or value not in (0, 1, "0", "1"):
        return "tdm-reservation is not 0 or 1"
    policy = item.get("tdm-policy")
    if not isinstance(policy, str) or not policy.strip() or len(policy) > _MAX_POLICY:
        policy = None
    return TdmRepRule(location, value in (1, "1"), policy.strip() if policy else None)


def _kind(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")


def _path(path: str) -> str:
    """A path or URL as locations see it: path and query, normalised, ``*``/``$`` escaped."""
    raw = path if path.startswith("/") else path_of(path)
    clean = request_path(raw)
    return clean.replace("*", "%2A").replace("$", "%24")


@lru_cache(maxsize=1024)
def _compiled(location: str) -> RuleSet:
    """A location as a one-rule set, normalised as robots.txt patterns are."""
    pattern = location
    if not pattern.isascii() or "%" in pattern:
        pattern = normalise_path(pattern)
    dollar = pattern.find("$")
    if 0 <= dollar < len(pattern) - 1:
        # Only a final "$" anchors; any other is a literal, as in the path.
        pattern = pattern[:-1].replace("$", "%24") + pattern[-1]
    return RuleSet([(True, pattern, 1)])
