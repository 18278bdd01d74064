"""What a site says about using what it serves: AI usage preferences (IETF AIPREF).

Two drafts of the IETF AI Preferences working group: the vocabulary
(``draft-ietf-aipref-vocab``: labels such as ``train-ai`` mapped to the
tokens ``y``/``n`` in a Structured Fields Dictionary, RFC 9651) and its
attachment (``draft-ietf-aipref-attach``: the ``Content-Usage`` HTTP header
and ``Content-Usage`` rules in robots.txt groups).  Cloudflare's
``Content-Signal`` line (``search=yes, ai-train=no``) is read beside them,
with its own labels; no mapping between the two is assumed.

A preference is ``True`` (allowed), ``False`` (disallowed) or unknown
(the label is absent from the mapping).

Pure and synchronous; imports only the standard library (and robotgate's
pure matching code).
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote_to_bytes

from ..decision import UsageRule
from ..error_root import Error
from ..urls import normalise_path, remove_dot_segments
from .patterns import RuleSet

__all__ = [
    "TIE_LIMIT",
    "VOCABULARY",
    "Date",
    "DisplayString",
    "StructuredFieldError",
    "Token",
    "UsageRules",
    "combine_usage",
    "content_signal_from_headers",
    "field_values",
    "parse_content_signal",
    "parse_dictionary",
    "parse_usage",
    "split_rule_value",
    "usage_from_headers",
]

#: The labels whose preferences are kept: draft-ietf-aipref-vocab-07's (6.1).  Any
#: other label, ``ai-use`` of its earlier revisions among them, is ignored (6.4: MUST).
VOCABULARY: tuple[str, ...] = ("train-ai", "search")

# -- RFC 9651 Structured Fields: the Dictionary, and all it may hold ----------


class Token(str):
    """An RFC 9651 Token (``y``), told apart from a String (``"y"``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Token({str(self)!r})"


class DisplayString(str):
    """An RFC 9651 Display String (``%"caf%c3%a9"``), decoded."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"DisplayString({str(self)!r})"


class Date(int):
    """An RFC 9651 Date (``@1659578233``): seconds since the epoch."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Date({int(self)})"


#: int, float (Decimal), str (String), Token, bytes (Byte Sequence), bool, Date, DisplayString.
BareItem = int | float | str | bytes | bool
Parameters = dict[str, BareItem]
Item = tuple[BareItem, Parameters]
#: A member's value is a bare item, or a tuple of items (an Inner List).
Member = tuple[BareItem | tuple[Item, ...], Parameters]

_KEY = re.compile(r"[a-z*][a-z0-9_.*-]*").match
_TOKEN = re.compile(r"[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*").match
_NUMBER = re.compile(r"-?([0-9]+)(?:\.([0-9]*))?").match
_STRING = re.compile(r'"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"').match
_UNESCAPE = re.compile(r"\\(.)").sub
_BYTES = re.compile(r":([A-Za-z0-9+/=]*):").match
# Base64 that decodes: whole quads, then a padded or unpadded last one.
_BASE64 = re.compile(
    r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?"
).fullmatch
_DISPLAY = re.compile(r'%"((?:[\x20\x21\x23\x24\x26-\x7e]|%[0-9a-f]{2})*)"').match
# The common member, ``key`` or ``key=token`` with no parameters, then what
# ends it (end of input, or whitespace and a comma); anything else takes the
# general path.
_SIMPLE = re.compile(
    r"([a-z*][a-z0-9_.*-]*)(?:=([A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*))?"
    r"(?=[ \t]*(?:,|\Z))"
).match
_OWS = " \t"


class StructuredFieldError(Error, ValueError):
    """A header value that is no RFC 9651 Structured Field."""


def parse_dictionary(value: str | bytes) -> dict[str, Member]:
    """Parse an RFC 9651 Dictionary; raise :class:`ValueError` if it does not parse.

    Each member is ``(value, parameters)``: a bare item (see :class:`Token`,
    :class:`Date`, :class:`DisplayString`; a Decimal is a ``float``, a Byte
    Sequence ``bytes``, a key without a value ``True``) or a tuple of
    ``(item, parameters)`` for an Inner List.  A repeated key keeps its last
    value (in its first position).

    >>> parse_dictionary("train-ai=n, search;p=1")
    {'train-ai': (Token('n'), {}), 'search': (True, {'p': 1})}
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("latin-1")
    if not value.isascii():
        raise StructuredFieldError("a Structured Field is ASCII")
    s = value.strip(" ")
    n = len(s)
    out: dict[str, Member] = {}
    i = 0
    while i < n:
        m = _SIMPLE(s, i)
        if m is not None:
            token = m[2]
            out[m[1]] = (True if token is None else Token(token), {})
            i = m.end()
        else:
            k = _KEY(s, i)
            if k is None:
                raise StructuredFieldError(f"a key expected at {i}")
            i = k.end()
            member: Member
            if i < n and s[i] == "=":
                member, i = _item_or_inner_list(s, i + 1)
            else:
                params, i = _parameters(s, i)
                member = (True, params)
            out[k[0]] = member
        while i < n and s[i] in _OWS:
            i += 1
        if i == n:
            break
        if s[i] != ",":
            raise StructuredFieldError(f"a comma expected at {i}")
        i += 1
        while i < n and s[i] in _OWS:
            i += 1
        if i == n:
            raise StructuredFieldError("a trailing comma")
    return out


def _item_or_inner_list(s: str, i: int) -> tuple[Member, int]:
    if s[i : i + 1] != "(":
        item, i = _bare_item(s, i)
        params, i = _parameters(s, i)
        return (item, params), i
    i += 1
    n = len(s)
    items: list[Item] = []
    while i < n:
        while i < n and s[i] == " ":
            i += 1
        if s[i : i + 1] == ")":
            params, i = _parameters(s, i + 1)
            return (tuple(items), params), i
        value, i = _bare_item(s, i)
        params, i = _parameters(s, i)
        items.append((value, params))
        if s[i : i + 1] not in (" ", ")"):
            raise StructuredFieldError(f"an inner list goes on with a space or ')' at {i}")
    raise StructuredFieldError("an inner list without its ')'")


def _parameters(s: str, i: int) -> tuple[Parameters, int]:
    params: Parameters = {}
    n = len(s)
    while i < n and s[i] == ";":
        i += 1
        while i < n and s[i] == " ":
            i += 1
        k = _KEY(s, i)
        if k is None:
            raise StructuredFieldError(f"a parameter key expected at {i}")
        i = k.end()
        value: BareItem = True
        if i < n and s[i] == "=":
            value, i = _bare_item(s, i + 1)
        params[k[0]] = value
    return params, i


def _bare_item(s: str, i: int) -> tuple[BareItem, int]:
    c = s[i : i + 1]
    if c.isalpha() or c == "*":
        m = _TOKEN(s, i)
        assert m is not None  # the first character is enough
        return Token(m[0]), m.end()
    if c == '"':
        m = _STRING(s, i)
        if m is None:
            raise StructuredFieldError(f"a bad string at {i}")
        return _UNESCAPE(r"\1", m[1]), m.end()
    if c == "-" or c.isdigit():
        return _number(s, i)
    if c == "?":
        flag = s[i + 1 : i + 2]
        if flag not in ("0", "1"):
            raise StructuredFieldError(f"a bad boolean at {i}")
        return flag == "1", i + 2
    if c == ":":
        m = _BYTES(s, i)
        if m is None:
            raise StructuredFieldError(f"a bad byte sequence at {i}")
        b64 = m[1]
        if _BASE64(b64) is None:
            raise StructuredFieldError(f"a byte sequence that is not base64 at {i}")
        # Padding may be left out (RFC 9651 4.2.7).
        return binascii.a2b_base64(b64 + "=" * (-len(b64) % 4)), m.end()
    if c == "@":
        date, j = _number(s, i + 1)
        if isinstance(date, float):
            raise StructuredFieldError(f"a date is an integer, at {i}")
        return Date(date), j
    if c == "%":
        m = _DISPLAY(s, i)
        if m is None:
            raise StructuredFieldError(f"a bad display string at {i}")
        try:
            return DisplayString(unquote_to_bytes(m[1]).decode("utf-8")), m.end()
        except UnicodeDecodeError:
            raise StructuredFieldError(f"a display string is UTF-8, at {i}") from None
    raise StructuredFieldError(f"an item expected at {i}")


def _number(s: str, i: int) -> tuple[int | float, int]:
    m = _NUMBER(s, i)
    if m is None:
        raise StructuredFieldError(f"a number expected at {i}")
    whole, fraction = m[1], m[2]
    if fraction is None:
        if len(whole) > 15:
            raise StructuredFieldError(f"an integer of more than 15 digits at {i}")
        return int(m[0]), m.end()
    if len(whole) > 12 or not 1 <= len(fraction) <= 3:
        raise StructuredFieldError(f"a bad decimal at {i}")
    return float(m[0]), m.end()


# -- the vocabulary -------------------------------------------------------------


# Real statements are a few dozen bytes: those are cached, by the hundred.
_CACHED_LEN = 1024


@lru_cache(maxsize=512)
def _usage(value: str | bytes) -> tuple[tuple[str, bool], ...]:
    try:
        members = parse_dictionary(value)
    except ValueError:
        return ()  # a statement that does not parse says nothing
    out = []
    for label in VOCABULARY:
        member = members.get(label)
        if member is not None:
            v = member[0]
            if isinstance(v, Token) and (v == "y" or v == "n"):
                out.append((label, v == "y"))
    return tuple(out)


def parse_usage(value: str | bytes) -> dict[str, bool]:
    """The preferences of one statement, ``Content-Usage`` syntax: label -> allowed.

    Labels outside :data:`VOCABULARY` and all parameters are ignored; a value
    that is not the token ``y`` or ``n`` leaves its label unknown (absent); a
    statement that is not a valid Dictionary (an uppercase key, a trailing
    comma, ...) leaves every label unknown.

    >>> parse_usage("train-ai=n, search=y;why=1, foo=n")
    {'train-ai': False, 'search': True}
    >>> parse_usage('train-ai="n"'), parse_usage("Train-AI=n")
    ({}, {})
    """
    if len(value) > _CACHED_LEN:
        return dict(_usage.__wrapped__(value))  # hostile sizes are not kept
    return dict(_usage(value))


def combine_usage(*usages: Mapping[str, bool]) -> dict[str, bool]:
    """Preferences from several statements, per label: the most restrictive wins.

    Any ``False`` gives ``False``, else any ``True`` gives ``True``, else the
    label stays unknown (draft-ietf-aipref-vocab, combining preferences).
    Works as well for ``Content-Signal`` labels.

    >>> combine_usage({"train-ai": True, "search": True}, {"train-ai": False}, {})
    {'train-ai': False, 'search': True}
    """
    out: dict[str, bool] = {}
    for usage in usages:
        for label, allowed in usage.items():
            out[label] = out.get(label, True) and allowed
    return out


def field_values(headers: Any, name: str) -> list[str]:
    """Every value of the field ``name`` in ``headers``, in order.

    ``headers`` may be a plain mapping (names in any case), a multi-dict
    (aiohttp's ``getall``, httpx's ``get_list``, Scrapy's ``getlist``, the
    standard library's ``get_all``), or an iterable of ``(name, value)`` pairs.
    """
    raw: Iterable[Any]
    if hasattr(headers, "getall"):
        raw = headers.getall(name, ())
    elif hasattr(headers, "get_list"):
        raw = headers.get_list(name)
    elif hasattr(headers, "getlist"):
        raw = headers.getlist(name)
    elif hasattr(headers, "get_all"):
        raw = headers.get_all(name) or ()
    else:
        pairs = headers.items() if isinstance(headers, Mapping) else headers
        lower = name.lower()
        raw = [v for k, v in pairs if _text(k).lower() == lower]
    return [_text(v) for v in raw]


def _text(v: str | bytes) -> str:
    return v.decode("latin-1") if isinstance(v, (bytes, bytearray)) else v


def usage_from_headers(headers: Any) -> dict[str, bool]:
    """The preferences of a response's ``Content-Usage`` header (see :func:`parse_usage`).

    Several ``Content-Usage`` lines are one field: joined with commas before
    parsing (RFC 9651 4.2), so one bad line makes the whole field unknown.
    Empty lines are skipped.  ``headers``: see :func:`field_values`.

    >>> usage_from_headers({"content-usage": "train-ai=n"})
    {'train-ai': False}
    """
    values = [v for v in field_values(headers, "Content-Usage") if v.strip(_OWS)]
    return parse_usage(", ".join(values)) if values else {}


def parse_content_signal(value: str) -> dict[str, bool]:
    """Cloudflare's ``Content-Signal`` value: label (lower-cased, as written) -> allowed.

    ``yes`` is ``True`` and ``no`` is ``False`` (in any case); a pair with any
    other value, or that is not ``key=value``, is ignored; a repeated label
    keeps its last ``yes``/``no``.

    >>> parse_content_signal("search=yes, ai-train=no, ai-input=maybe")
    {'search': True, 'ai-train': False}
    """
    out: dict[str, bool] = {}
    for part in value.split(","):
        key, eq, v = part.partition("=")
        key = key.strip(_OWS).lower()
        v = v.strip(_OWS).lower()
        if not eq or not key or " " in key or "\t" in key:
            continue
        if v == "yes":
            out[key] = True
        elif v == "no":
            out[key] = False
    return out


def content_signal_from_headers(headers: Any) -> dict[str, bool]:
    """The ``Content-Signal`` response header's labels (see :func:`parse_content_signal`).

    Several lines combine per label, the most restrictive winning.
    """
    return combine_usage(*map(parse_content_signal, field_values(headers, "Content-Signal")))


# -- Content-Usage rules in robots.txt ----------------------------------------


def split_rule_value(value: str) -> tuple[str, str]:
    """A ``Content-Usage`` rule value split into its path and its statement.

    Paths start with ``/``: a value that starts with anything else has no
    path, and all of it is the statement (draft-ietf-aipref-attach).  The
    path ends at the first space or tab.

    >>> split_rule_value("/ai-ok/ train-ai=y"), split_rule_value("train-ai=n")
    (('/ai-ok/', 'train-ai=y'), ('', 'train-ai=n'))
    """
    value = value.strip(_OWS)
    if value[:1] != "/":
        return "", value
    for j, c in enumerate(value):
        if c in _OWS:
            return value[:j], value[j:].strip(_OWS)
    return value, ""


def _normalise_pattern(path: str) -> str:
    """A rule's path as Allow/Disallow patterns are normalised."""
    if not path.isascii() or "%" in path:
        path = normalise_path(path)
    dollar = path.find("$")
    if 0 <= dollar < len(path) - 1:
        # Only a final "$" anchors; any other is a literal.
        path = path[:-1].replace("$", "%24") + path[-1]
    return path


_Found = tuple[Mapping[str, bool], tuple[UsageRule, ...]]
#: The most starred paths of one length :meth:`UsageRules.match` tries for a
#: tie with the longest match; real files have a handful, hostile ones thousands
#: (past it, :meth:`UsageRules.cautious` answers).
TIE_LIMIT = 64
_NONE: _Found = (MappingProxyType({}), ())


class UsageRules:
    """The ``Content-Usage`` (or ``Content-Signal``) rules of one group, compiled.

    :meth:`match` finds the rules whose path is the longest match for a path,
    with the same wildcards, ``$`` and percent-encoding as Allow/Disallow
    (RFC 9309 2.2.2); rules with identical paths, and different paths of the
    same length that both match, combine per label (:func:`combine_usage`;
    past :data:`TIE_LIMIT` paths with a wildcard and that length, every rule counts).
    Rules without a path match every path, below any rule with one.

    >>> rules = UsageRules([("train-ai=n", 3), ("/ai-ok/ train-ai=y", 4)])
    >>> usage, found = rules.match("/ai-ok/x")
    >>> dict(usage), [r.line for r in found]
    ({'train-ai': True}, [4])
    """

    __slots__ = ("_by_line", "_cautious", "_default", "_plain", "_ruleset", "_singles",
                 "_starred")

    def __init__(
        self,
        lines: Iterable[tuple[str, int]],
        key: str = "Content-Usage",
        parse: Callable[[str], Mapping[str, bool]] = parse_usage,
    ) -> None:
        """``lines``: each rule's value as written after the colon, and its line number."""
        by_pattern: dict[str, list[UsageRule]] = {}
        for value, line in lines:
            path, statement = split_rule_value(value)
            pattern = _normalise_pattern(path)
            by_pattern.setdefault(pattern, []).append(UsageRule(pattern, statement, line, key))

        def found(rules: list[UsageRule]) -> _Found:
            usage = combine_usage(*(parse(r.value) for r in rules))
            return MappingProxyType(usage), tuple(rules)

        default = by_pattern.pop("", None)
        self._default = found(default) if default else _NONE
        self._cautious: _Found | None = None  # the answer past the work bound, made once
        # A pattern is known to the rule set by the line of its first rule.
        self._by_line = {rules[0].line: found(rules) for rules in by_pattern.values()}
        self._ruleset = RuleSet([(True, p, rules[0].line) for p, rules in by_pattern.items()])
        # Two paths of one length both match only if one has a "*": a tie is
        # a starred path of the winner's length, or a plain one when the
        # winner is starred.  Starred paths are kept by length, plain ones by
        # path, so nothing grows with the square of the rule count.
        self._starred: dict[int, list[tuple[str, int]]] = {}
        self._plain: dict[str, int] = {}
        for p, rules in by_pattern.items():
            if "*" in p:
                self._starred.setdefault(len(p), []).append((p, rules[0].line))
            else:
                self._plain[p] = rules[0].line
        self._singles: dict[str, RuleSet] = {}

    def __bool__(self) -> bool:
        return bool(self._by_line) or bool(self._default[1])

    def match(self, path: str) -> tuple[Mapping[str, bool], tuple[UsageRule, ...]]:
        """The preferences for ``path`` (normalised, as for :meth:`RuleSet.match`), and the
        rules that gave them (none when no rule applies)."""
        return self.match_exact(path)[0]

    def match_exact(self, path: str) -> tuple[_Found, bool]:
        """As :meth:`match`, and whether the answer is exact.  ``False`` when a path
        too long for the work bound (see :data:`~robotgate.robots.patterns.MATCH_BUDGET`)
        leaves the winner undecided, or more than :data:`TIE_LIMIT` starred paths of
        its length might tie with it: then every rule counts, and a label is allowed
        only if every rule allows it (:meth:`cautious`)."""
        i, exact = self._ruleset.match_exact(path)
        if not exact:
            return self.cautious(), False
        if i < 0:
            return self._default, True
        rule = self._ruleset.rule(i)
        best = self._by_line[rule.line]
        pattern = rule.pattern
        starred = self._starred.get(len(pattern), ())
        if not starred and "*" not in pattern:
            return best, True  # a plain winner and no starred path of its length
        if len(starred) > TIE_LIMIT:
            # Each candidate costs a bounded match, so not all are tried; the first
            # few would make the answer depend on the rules' order, which has no
            # meaning (draft-ietf-aipref-attach 3.1).
            return self.cautious(), False
        if "/." in path:
            path = remove_dot_segments(path)  # as RuleSet.match reads it
        lines = [rule.line]
        if "*" in pattern:
            end = len(pattern)
            plain = path[:end] if len(path) >= end else path + "$" if len(path) + 1 == end else ""
            line = self._plain.get(plain)
            if line is not None:
                lines.append(line)
        for q, line in starred:
            if line != rule.line:
                j, exact = self._single(q, line).match_exact(path)
                if not exact:
                    return self.cautious(), False
                if j >= 0:
                    lines.append(line)
        if len(lines) == 1:
            return best, True
        lines.sort()
        tied = [self._by_line[line] for line in lines]
        usage = combine_usage(*(f[0] for f in tied))
        return (MappingProxyType(usage), tuple(r for f in tied for r in f[1])), True

    def cautious(self) -> _Found:
        """Every rule, and per label ``False`` if any says so, ``True`` only if all do."""
        if self._cautious is None:
            every = [f for f in (self._default, *self._by_line.values()) if f[1]]
            labels = {label for usage, _ in every for label in usage}
            usage = {}
            for label in sorted(labels):
                said = [u.get(label) for u, _ in every]
                if False in said:
                    usage[label] = False
                elif all(said):
                    usage[label] = True
            rules = tuple(sorted((r for _, found in every for r in found), key=lambda r: r.line))
            self._cautious = MappingProxyType(usage), rules
        return self._cautious

    def _single(self, pattern: str, line: int) -> RuleSet:
        single = self._singles.get(pattern)
        if single is None:
            single = self._singles[pattern] = RuleSet([(True, pattern, line)])
        return single
