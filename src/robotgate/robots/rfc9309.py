"""robots.txt parsing and matching (RFC 9309, Google's reference where it is silent).

Pure and synchronous; imports only the standard library.
"""

from __future__ import annotations

import re
import sys
from array import array
from collections.abc import Collection, Sequence
from itertools import compress

from ..agents import product_token
from ..decision import Decision
from ..urls import normalise_path, path_of, remove_dot_segments, request_path
from .body import DEFAULT_MAX_BYTES, ESCAPE_INVALID, cut_utf8
from .decider import ROBOTS_ALLOWED, Decider, is_robots_path
from .patterns import RuleSet, allows_uncompiled, best_ranked, packed_fast_length
from .pause import PAUSE_OVER, pause
from .rules import AgentLeftOut, DelayLine, RequestRate, RobotsTxt
from .usage import UsageRules, parse_content_signal, split_rule_value

__all__ = ["DEFAULT_MAX_BYTES", "MAX_LINE_LENGTH", "Rfc9309Rules", "parse_rfc9309"]

#: Google's reference ignores the characters of a line past 2083 * 8 - 1.
MAX_LINE_LENGTH = 2083 * 8 - 1

_UA, _ALLOW, _DISALLOW, _SITEMAP, _CRAWL_DELAY, _REQUEST_RATE, _OTHER = range(7)
# AI usage preferences (draft-ietf-aipref-attach) and Cloudflare's signals.
_CONTENT_USAGE, _CONTENT_SIGNAL = 7, 8

# Keys as written (also with other case or blanks around, added as met) to
# their kind, including the typos Google's parser accepts.
_KEYS = {
    "user-agent": _UA,
    "useragent": _UA,
    "user agent": _UA,
    "allow": _ALLOW,
    "disallow": _DISALLOW,
    "dissallow": _DISALLOW,
    "dissalow": _DISALLOW,
    "disalow": _DISALLOW,
    "diasllow": _DISALLOW,
    "disallaw": _DISALLOW,
    "sitemap": _SITEMAP,
    "site-map": _SITEMAP,
    "crawl-delay": _CRAWL_DELAY,
    "crawldelay": _CRAWL_DELAY,
    "crawl delay": _CRAWL_DELAY,
    "request-rate": _REQUEST_RATE,
    "requestrate": _REQUEST_RATE,
    "request rate": _REQUEST_RATE,
    "content-usage": _CONTENT_USAGE,
    "content-signal": _CONTENT_SIGNAL,
}
# Google matches keys by prefix ("disallowed" is a disallow); order matters.
_KEY_PREFIXES = (
    ("user-agent", _UA),
    ("useragent", _UA),
    ("user agent", _UA),
    ("allow", _ALLOW),
    ("disallow", _DISALLOW),
    ("dissallow", _DISALLOW),
    ("dissalow", _DISALLOW),
    ("disalow", _DISALLOW),
    ("diasllow", _DISALLOW),
    ("disallaw", _DISALLOW),
    ("sitemap", _SITEMAP),
    ("site-map", _SITEMAP),
    ("crawl-delay", _CRAWL_DELAY),
    ("request-rate", _REQUEST_RATE),
)
_PREFIX_KINDS = dict(_KEY_PREFIXES)
# One C call tries the prefixes in order.
_KEY_PREFIX = re.compile("|".join(re.escape(p) for p, _ in _KEY_PREFIXES)).match
_WS = " \t\n\v\f\r"
# Every key above starts with one of these letters once blanks are stripped and it is
# lower-cased (no other character lower-cases to one of them).
_KEY_START = re.compile(r"[ \t\n\v\f\r]*[uadscrUADSCR]").match
# The scheme and authority of an http(s) URL, up to the path's first "/".
_URL_PREFIX = re.compile(r"(?i:https?)://[^/?#;]*/").match
# At most this many User-Agent strings are remembered per file.
_MEMO_MAX = 8
# A file's first this many allowed() questions are answered from its packed rules,
# the group compiled only after them: compiling costs a group's rules about as many
# scans as this (a cold origin is asked a few times), and its tables hold a string
# and a few slots a rule where the packed rules hold a character and two bytes.
_UNCOMPILED_QUESTIONS = 32
_AFTER_NUL = re.compile(r"\x00[^\n]*").sub
# Lines of at most this many characters are within MAX_LINE_LENGTH octets.
_MAX_LINE_CHARS = MAX_LINE_LENGTH // 4
# Keys longer than this are not worth remembering in _KEYS.
_MAX_CACHED_KEY = 32
# Values are read in full: a number whose tail is not read ("1e9" as 1,
# "1/-5" as 1/1) would ask for less than the site wrote.  Each way to match is
# unique, so a value that does not match fails in linear time.
_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_DELAY_RE = re.compile(rf"\+?({_NUMBER})(?:\s*(?:s|secs?|seconds?))?", re.IGNORECASE)
# requests "/" [amount] [unit], and an optional time window ("0600-0845"), which
# is not honoured: the rate applies at all hours.
_RATE_RE = re.compile(
    rf"([0-9]+)\s*/\s*({_NUMBER})?"
    r"(?:\s*(s|secs?|seconds?|m|mins?|minutes?|h|hours?|d|days?))?"
    r"(?:\s+[0-9]{4}\s*-\s*[0-9]{4})?",
    re.IGNORECASE,
)
_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
# A number too large for a float asks for longer than any finite delay.
_LONGEST = sys.float_info.max
_NOT_A_DELAY = "not a number of seconds"
_NOT_A_RATE = "not a rate such as 1/10s"


def _classify(key: str) -> int:
    """The kind of a key as written (blanks around it, any case)."""
    if _KEY_START(key) is None:
        return _OTHER  # most often a line of HTML
    key = key.strip(_WS).lower()
    kind = _KEYS.get(key)
    if kind is None:
        m = _KEY_PREFIX(key)
        kind = _PREFIX_KINDS[m[0]] if m else _OTHER
    return kind


def _without_comments(text: str) -> str:
    """``text`` without its comments, each from a "#" to the end of its line (looked
    for with str.find, which finds a character faster than a regular expression)."""
    kept: list[str] = []
    start = 0
    comment = text.find("#")
    while comment >= 0:  # each turn moves past a line's end
        kept.append(text[start:comment])
        start = text.find("\n", comment)
        if start < 0:
            return "".join(kept)
        comment = text.find("#", start)
    kept.append(text[start:])
    return "".join(kept)


def _cut_line(line: str) -> str:
    """A line cut at Google's limit, which counts octets."""
    if len(line) > _MAX_LINE_CHARS and (len(line) > MAX_LINE_LENGTH or not line.isascii()):
        return cut_utf8(line[:MAX_LINE_LENGTH], MAX_LINE_LENGTH)
    return line


def _cut_lines(lines: list[str]) -> tuple[list[str], set[int]]:
    """The lines cut at Google's limit, and the numbers of those that were."""
    out = [_cut_line(line) for line in lines]
    return out, {n for n, (a, b) in enumerate(zip(lines, out, strict=True), 1) if a is not b}


#: What a Content-Usage statement cut at the line limit is read as: no label.
_CUT_STATEMENT = "(cut at the line limit)"


def _still_stated(kind: int, value: str) -> str:
    """What a usage line cut at the line limit still says.  Its statement would
    read as something the site never wrote: a Content-Usage statement (one
    Dictionary) says nothing, its path still matching; a Content-Signal keeps
    the pairs before the one that was cut."""
    if kind == _CONTENT_SIGNAL:
        return value.rpartition(",")[0]
    return f"{split_rule_value(value)[0]} {_CUT_STATEMENT}".lstrip()


def _unblanked(value: str) -> str:
    """A value without blanks around it, a stray BOM counted as one."""
    return value.strip().strip("\ufeff").strip()


def _read_delay(value: str, line: int) -> DelayLine:
    """A ``Crawl-delay`` line as read: its seconds, or why it is ignored."""
    m = _DELAY_RE.fullmatch(_unblanked(value))
    if m is None:
        return DelayLine(line, "Crawl-delay", value, None, None, _NOT_A_DELAY)
    return DelayLine(line, "Crawl-delay", value, min(float(m.group(1)), _LONGEST))


def _read_rate(value: str, line: int) -> DelayLine:
    """A ``Request-rate`` line as read: its rate, or why it is ignored."""
    m = _RATE_RE.fullmatch(_unblanked(value))
    if m is None or (m.group(2) is None and m.group(3) is None):
        return DelayLine(line, "Request-rate", value, None, None, _NOT_A_RATE)
    digits = m.group(1).lstrip("0")
    if not digits:
        return DelayLine(line, "Request-rate", value, None, None, "no requests at all")
    if len(digits) > 15:
        # As good as no limit, and int() refuses strings of more than 4300 digits.
        return DelayLine(line, "Request-rate", value, None, None, "too many requests to count")
    amount = float(m.group(2)) if m.group(2) is not None else 1.0
    seconds = min(amount * _UNIT_SECONDS[(m.group(3) or "s")[0].lower()], _LONGEST)
    if seconds <= 0:
        return DelayLine(line, "Request-rate", value, None, None, "no time to make them in")
    rate = RequestRate(int(digits), seconds)
    return DelayLine(line, "Request-rate", value, rate.delay, rate)


def _agent_of_line(value: str) -> str:
    # Google: "*" followed by nothing or whitespace is the global agent.
    if value[:1] == "*" and (len(value) == 1 or value[1] in _WS):
        return "*"
    return product_token(value)


class _Draft:
    """A group as the file is read: its lines, appended to."""

    __slots__ = ("agents", "line", "meta", "pace", "patterns", "usage")

    def __init__(self, line: int) -> None:
        self.line = line
        self.agents: list[str] = []
        # Allow and Disallow values, and each one's ``line << 1 | allow``.
        self.patterns: list[str] = []
        self.meta: list[int] = []
        # Crawl-delay and Request-rate lines, (kind, value, line, agents): each
        # belongs to the User-agent lines it follows, not to the whole group.
        self.pace: list[tuple[int, str, int, frozenset[str]]] | None = None
        # Content-Usage and Content-Signal lines, (kind, value, line).
        self.usage: list[tuple[int, str, int]] | None = None

    def group(self) -> _Group:
        patterns = self.patterns
        if not patterns:
            return _Group(self.line, tuple(self.agents), "", _NO_META, self.pace, self.usage)
        # Values hold no newline (the file was split at them): one string holds them all.
        return _Group(self.line, tuple(self.agents), "\n".join(patterns),
                      _small_ints(self.meta), self.pace, self.usage)


def _small_ints(values: list[int]) -> array[int]:
    """``values`` (not negative) in an array of 2-byte items if they fit, else 8-byte ones."""
    try:
        return array("H", values)
    except OverflowError:  # a line past 32,767
        return array("q", values)


class _Group:
    """The lines of one group, packed: its Allow and Disallow values joined into
    one string, their lines and kinds in one array of small integers.

    Rules are compiled into a :class:`RuleSet` on first use, so parsing a
    file costs only the groups that are actually asked about.
    """

    __slots__ = ("_compiled", "agents", "line", "meta", "pace", "patterns", "usage")

    def __init__(
        self,
        line: int,
        agents: tuple[str, ...],
        patterns: str,
        meta: array[int],
        pace: list[tuple[int, str, int, frozenset[str]]] | None,
        usage: list[tuple[int, str, int]] | None,
    ) -> None:
        self.line = line
        self.agents = agents
        # The values "\n"-joined, and each one's ``line << 1 | allow``: two objects
        # rather than a tuple, a string and an int per rule.
        self.patterns = patterns
        self.meta = meta
        self.pace = pace
        self._compiled: RuleSet | None = None
        # Content-Usage and Content-Signal lines until compiled by usage_rules();
        # one slot for both, as most groups have none.
        self.usage: list[tuple[int, str, int]] | tuple[UsageRules, UsageRules] | None = usage

    def names(self) -> tuple[str, ...]:
        """The product tokens this group names, in order, without duplicates."""
        return tuple(dict.fromkeys(a for a in self.agents if a))

    def has_rules(self) -> bool:
        """Whether the group has Allow or Disallow rules."""
        compiled = self._compiled
        return bool(compiled) if compiled is not None else any(self._packed()[1])

    def _packed(self) -> tuple[tuple[str, ...], tuple[array[int], ...]]:
        """The packed rules not compiled yet: the "\n"-joined values of each part,
        and their ``line << 1 | allow``."""
        return (self.patterns,), (self.meta,)

    def _sorted_out(self) -> tuple[tuple[str, ...], tuple[array[int], ...]]:
        """:meth:`_packed`, each part's rules sorted out for questions (see _sorted_out)."""
        if _needs_sorting(self.patterns):
            self.patterns, self.meta = _sorted_out(self.patterns, self.meta)
        return (self.patterns,), (self.meta,)

    def allows_packed(self, path: str) -> bool | None:
        """What the compiled rules would answer for ``path`` (normalised, see
        :meth:`RuleSet.match`), read from the packed rules; None once compiled, or
        when only the compiled rules' work bound can answer."""
        if self._compiled is not None:
            return None
        if "/." in path:
            path = remove_dot_segments(path)
        best = -1  # the rank (2 * length + allow) of the best rule matching; -1: none
        ranked_parts: list[tuple[list[str], Sequence[int], int, int]] = []
        odd: list[tuple[bool, str, int]] = []
        parts, metas = self._sorted_out()
        for patterns, meta in zip(parts, metas, strict=True):
            if not meta:
                continue
            values = patterns.split("\n")
            if _OTHERS not in patterns:  # literal prefixes only
                best = _best_prefix(values, meta, 0, len(values), path, best, 0)
                continue
            starred, ranked, others = _sections(values)
            best = _best_prefix(values, meta, 0, starred - 1, path, best, 0)
            best = _best_prefix(values, meta, starred, ranked - 1, path, best, 1)
            if ranked < others - 1:
                ranked_parts.append((values, meta, ranked, others - 1))
            if others < len(values):
                odd += _normalised(values[others:], meta[others:])
        if ranked_parts:
            # Every rule that is not a prefix counts towards the work bound, as compiled.
            rules = sum(end - start for *_, start, end in ranked_parts) + len(odd)
            chars = sum(map(len, parts))
            # Within the bound for as many stars as characters, the stars need no counting.
            if len(path) > packed_fast_length(rules, chars, chars):
                stars = sum(patterns.count("*") for patterns in parts)
                if len(path) > packed_fast_length(rules, stars, chars):
                    return None
            for ranked_values, ranked_meta, start, end in ranked_parts:
                best = best_ranked(ranked_values, ranked_meta, start, end, path, best)
        return allows_uncompiled(odd, path, best) if odd else best < 0 or (best & 1) == 1

    def ruleset(self) -> RuleSet:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = RuleSet(_paused(_unpacked(self.patterns, self.meta)))
            # The RuleSet holds them now; a merged group holds its own references.
            self.patterns, self.meta = "", _NO_META
        return compiled

    def usage_rules(self) -> tuple[UsageRules, UsageRules] | None:
        """The group's Content-Usage and Content-Signal rules, compiled on first use."""
        usage = self.usage
        if isinstance(usage, list):
            usage = self.usage = (
                UsageRules([(v, n) for k, v, n in usage if k == _CONTENT_USAGE]),
                UsageRules(
                    [(v, n) for k, v, n in usage if k == _CONTENT_SIGNAL],
                    "Content-Signal",
                    parse_content_signal,
                ),
            )
        return usage

    def delay_lines(self, agent: str) -> tuple[DelayLine, ...]:
        """The group's Crawl-delay and Request-rate lines that ``agent`` (a product
        token, or "*") follows, in file order, as read."""
        return tuple(
            _read_delay(value, line) if kind == _CRAWL_DELAY else _read_rate(value, line)
            for pace in self._pace_lists()
            for kind, value, line, agents in pace
            if agent in agents
        )

    def _pace_lists(self) -> tuple[list[tuple[int, str, int, frozenset[str]]], ...]:
        return (self.pace,) if self.pace is not None else ()


class _MergedGroup(_Group):
    """Several groups naming the same agent, merged: it holds its parts' packed
    rules, not a copy, and joins them when first asked about.

    It holds the parts' strings and arrays, not the parts: a part that is
    compiled for another agent drops its own references, not these.
    """

    __slots__ = ("_agent_lists", "_meta_parts", "_pace_of_parts", "_pattern_parts")

    def __init__(self, groups: list[_Group]) -> None:
        usage = [u for g in groups if isinstance(g.usage, list) for u in g.usage]
        super().__init__(groups[0].line, (), "", _NO_META, None, usage or None)
        self._agent_lists = tuple(g.agents for g in groups)
        self._pattern_parts = tuple(g.patterns for g in groups)
        self._meta_parts = tuple(g.meta for g in groups)
        self._pace_of_parts = tuple(g.pace for g in groups if g.pace is not None)

    def names(self) -> tuple[str, ...]:
        if self._agent_lists:
            self.agents = tuple(dict.fromkeys(a for lst in self._agent_lists for a in lst))
            self._agent_lists = ()
        return super().names()

    def _pace_lists(self) -> tuple[list[tuple[int, str, int, frozenset[str]]], ...]:
        return self._pace_of_parts

    def _packed(self) -> tuple[tuple[str, ...], tuple[array[int], ...]]:
        return self._pattern_parts, self._meta_parts

    def _sorted_out(self) -> tuple[tuple[str, ...], tuple[array[int], ...]]:
        if any(map(_needs_sorting, self._pattern_parts)):
            parts = [_sorted_out(p, m) if _needs_sorting(p) else (p, m)
                     for p, m in zip(self._pattern_parts, self._meta_parts, strict=True)]
            self._pattern_parts = tuple(p for p, _ in parts)
            self._meta_parts = tuple(m for _, m in parts)
        return self._pattern_parts, self._meta_parts

    def ruleset(self) -> RuleSet:
        compiled = self._compiled
        if compiled is None:
            parts = zip(self._pattern_parts, self._meta_parts, strict=True)
            rules = [r for p, m in parts for r in _unpacked(p, m)]
            compiled = self._compiled = RuleSet(_paused(rules))
            self._pattern_parts, self._meta_parts = (), ()
        return compiled


class Rfc9309Rules(RobotsTxt):
    """A robots.txt read as RFC 9309 says (Google's reference where it is silent).

    >>> rules = Rfc9309Rules.parse(b"User-agent: *\\nDisallow: /private\\nCrawl-delay: 2\\n")
    >>> rules.allowed("https://example.com/private/x", "MyBot/1.0")
    False
    >>> rules.crawl_delay("MyBot/1.0")
    2.0
    """

    __slots__ = ("_agent", "_agent_rules", "_agents", "_asked", "_cut", "_deciders",
                 "_kept_for", "_memo", "_named", "_prefix", "_sitemaps", "_star")

    DIALECT = "rfc9309"
    RESOLVES_DOT_SEGMENTS = True
    INVALID_BYTES = ESCAPE_INVALID  # Google escapes them: "/caf\xe9" matches "/caf%E9"
    ORIGIN_FREE = True  # parse_rfc9309 ignores the URL; query caches test their origin

    def __init__(
        self,
        agents: dict[str, _Group] | None = None,
        star: _Group | None = None,
        sitemaps: Sequence[str] | None = None,
    ) -> None:
        # Most files name no agent but "*" and list no sitemap: shared empties.
        self._agents: dict[str, _Group] = agents or _NO_AGENTS
        self._star = star
        self._sitemaps: tuple[str, ...] = tuple(sitemaps) if sitemaps else ()
        # Query caches: rules of the first User-Agent asked about (a robot has one), of
        # others, and the "scheme://host/" last asked about (most often the only one, but
        # origins that serve the same bytes may share one parse: see ORIGIN_FREE).  A
        # group not compiled yet is not remembered (see _UNCOMPILED_QUESTIONS).
        self._agent: str | None = None
        self._agent_rules: RuleSet | None = None
        self._memo: dict[str, RuleSet | None] = _NO_MEMO
        self._asked = 0  # allowed() questions answered without compiling
        # Made on the first decide(): most files are only asked allowed().
        self._deciders: dict[str, Decider | None] = _NO_DECIDERS
        self._prefix: str | None = None
        self._cut = 0  # len(self._prefix), kept so the hot path need not ask
        # Rules kept for one agent (kept_for): its token, and every agent the file
        # names, "\n" around each, so that one whose group was left out is known.
        self._kept_for: str | None = None
        self._named = ""

    # -- parsing -----------------------------------------------------------

    @classmethod
    def _build(cls, drafts: list[_Draft], sitemaps: list[str]) -> Rfc9309Rules:
        by_agent: dict[str, list[_Group]] = {}
        for draft in drafts:
            g = draft.group()
            for agent in g.agents:
                lst = by_agent.get(agent)
                if lst is None:
                    by_agent[agent] = [g]
                elif lst[-1] is not g:
                    lst.append(g)
        agents: dict[str, _Group] = {}
        star: _Group | None = None
        # One merged group per distinct list of groups: each holds references to
        # its parts' rules, so merging costs no copy of them (nor quadratic memory).
        merged: dict[tuple[int, ...], _Group] = {}
        for agent, found in by_agent.items():
            if len(found) == 1:
                group = found[0]
            else:
                key = tuple(map(id, found))
                same = merged.get(key)
                if same is None:
                    same = merged[key] = _MergedGroup(found)
                group = same
            if agent == "*":
                star = group
            elif agent:
                agents[agent] = group
        return cls(agents, star, sitemaps)

    def kept_for(self, user_agent: str) -> Rfc9309Rules:
        """These rules with only the groups ``user_agent`` reads: its own, and ``*``
        (which other agents read).  The other groups' rules are most of what a file
        holds, and a gate asks as one agent.

        >>> rules = RobotsTxt.parse("User-agent: a\\nDisallow: /a\\n\\n"
        ...                         "User-agent: *\\nDisallow: /\\n")
        >>> kept = rules.kept_for("OtherBot/1.0")
        >>> kept.allowed("/x", "OtherBot"), kept.allowed("/x", "ThirdBot"), kept.agents
        (False, False, ['a', '*'])
        >>> kept.allowed("/x", "a")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        robotgate.robots.rules.AgentLeftOut: ... kept for 'otherbot' only: the group naming 'a' ...
        """
        token = product_token(user_agent)
        agents = self._agents
        if not agents or list(agents) == [token] or self._kept_for is not None:
            return self  # nothing to leave out
        group = agents.get(token)
        kept = Rfc9309Rules({token: group} if group is not None else None, self._star,
                            self._sitemaps)
        kept._kept_for = sys.intern(token)
        kept._named = "\n" + "\n".join(agents) + "\n"
        return kept

    def _kept(self, token: str) -> None:
        """Raise :class:`AgentLeftOut` if ``token`` (named by no group kept) names a
        group that was left out."""
        if self._named and f"\n{token}\n" in self._named:
            raise AgentLeftOut(token, self._kept_for or "")

    # -- queries -----------------------------------------------------------

    def _group(self, user_agent: str) -> _Group | None:
        token = product_token(user_agent)
        group = self._agents.get(token)
        if group is None:
            self._kept(token)
            return self._star
        return group

    def allowed(self, url: str, user_agent: str) -> bool:
        """May ``user_agent`` fetch ``url`` (an absolute URL or a path with query)?"""
        if user_agent != self._agent:
            return self._allowed_otherwise(url, user_agent)
        rules = self._agent_rules
        if rules is None:
            return True  # no group, or one without rules
        prefix = self._prefix
        if prefix is not None and url.startswith(prefix):  # no slice made to compare
            path = url[self._cut - 1 :]
        elif url[:1] != "/" or url[1:2] == "/":
            path = self._path(url)
        else:
            path = url  # a path already
        if (not path.isascii() or "%" in path or "*" in path or "$" in path or "#" in path
                or "/." in path):
            path = _clean(path)
        # RFC 9309 2.2.2: /robots.txt is always allowed (is_robots_path, inlined).
        return rules.allows[rules.match(path)] or (
            path[:11] == "/robots.txt" and path[11:12] in ("", "?")
        )

    def _allowed_otherwise(self, url: str, user_agent: str) -> bool:
        """:meth:`allowed` for an agent whose compiled rules are not the first remembered:
        another agent, or a group not compiled yet (see _UNCOMPILED_QUESTIONS)."""
        rules = self._rules_for(user_agent)
        if rules is None:
            return True  # no group, or one without rules
        path = self._judged_path(url)
        if not isinstance(rules, RuleSet):  # a group not compiled yet
            allowed = rules.allows_packed(path) if self._asked < _UNCOMPILED_QUESTIONS else None
            if allowed is not None:
                self._asked += 1
                return allowed or is_robots_path(path)
            rules = rules.ruleset()
            self._remember(user_agent, rules)
        return rules.allows[rules.match(path)] or is_robots_path(path)

    def _rules_for(self, user_agent: str) -> RuleSet | _Group | None:
        """The agent's compiled rules, remembered; its group while not compiled."""
        memo = self._memo
        if user_agent in memo:
            return memo[user_agent]
        group = self._group(user_agent)
        if group is None or not group.has_rules():
            self._remember(user_agent, None)
            return None
        rules = group._compiled
        if rules is None:
            return group  # not remembered: its questions count until it is compiled
        self._remember(user_agent, rules)
        return rules

    def _remember(self, user_agent: str, rules: RuleSet | None) -> None:
        if self._agent is None:
            self._agent, self._agent_rules = user_agent, rules
        elif len(self._memo) < _MEMO_MAX and user_agent != self._agent:
            if self._memo is _NO_MEMO:
                self._memo = {}  # the shared empty one is never written
            self._memo[user_agent] = rules

    def _judged_path(self, url: str) -> str:
        """What the rules judge of ``url``: its path, normalised (as inlined in allowed())."""
        prefix = self._prefix
        if prefix is not None and url.startswith(prefix):
            path = url[self._cut - 1 :]
        elif url[:1] != "/" or url[1:2] == "/":
            path = self._path(url)
        else:
            path = url
        if (not path.isascii() or "%" in path or "*" in path or "$" in path or "#" in path
                or "/." in path):
            path = _clean(path)
        return path

    def _path(self, url: str) -> str:
        """The path of ``url``, not yet normalised; remembers its origin's prefix."""
        m = _URL_PREFIX(url)
        if m is None:
            return path_of(url)
        self._prefix = prefix = m[0]
        self._cut = cut = len(prefix)
        return url[cut - 1 :]

    def decide(self, url: str, user_agent: str) -> Decision:
        """Like :meth:`allowed`, with the reason: the rule and its line, or why none.

        >>> rules = RobotsTxt.parse("User-agent: mybot\\nAllow: /a\\nDisallow: /\\n")
        >>> str(rules.decide("/a/b", "MyBot/2.1"))
        "allowed by 'Allow: /a' (line 2) in the group for 'mybot'"
        """
        prefix = self._prefix
        if prefix is not None and url.startswith(prefix):  # no slice made to compare
            path = url[self._cut - 1 :]
        elif url[:1] != "/" or url[1:2] == "/":
            path = self._path(url)
        else:
            path = url
        if (not path.isascii() or "%" in path or "*" in path or "$" in path or "#" in path
                or "/." in path):
            path = _clean(path)
        try:
            decider = self._deciders[user_agent]
        except KeyError:
            decider = self._decider(user_agent)
        if decider is None:
            return _NO_GROUP
        rules = decider.rules
        if len(path) <= rules.exact_len:  # too short for the work bound to bite
            i = rules.match(path)
            # The explanation depends only on the group and the rule: built once.
            try:
                decision = decider.direct[i]
            except KeyError:
                decision = decider.learn(i)
            if decision is not None:
                return decision
            decision = decider.table[i]
        else:
            i, exact = rules.match_exact(path)
            decision = decider.explain(i, exact)
        if decision.allowed and not decider.usage:
            return decision
        # RFC 9309 2.2.2: /robots.txt is always allowed (a rule allowing it says so
        # too), and carries no usage of its own.
        if is_robots_path(path):
            return ROBOTS_ALLOWED
        return decider.usage_of(decision, path) if decision.allowed else decision

    def _decider(self, user_agent: str) -> Decider | None:
        token = product_token(user_agent)
        group = self._agents.get(token)
        fallback = False
        if group is None:
            self._kept(token)
            group = self._star
            fallback = token != "*"
        decider = Decider(group, fallback) if group is not None else None
        if not self._deciders:
            self._deciders = {}  # the shared empty one is never written
        if len(self._deciders) < _MEMO_MAX:
            self._deciders[user_agent] = decider
        return decider

    def delay_lines(self, user_agent: str) -> tuple[DelayLine, ...]:
        """The ``Crawl-delay`` and ``Request-rate`` lines of the agent's group that
        follow a ``User-agent`` line naming it (``*`` when the group is the ``*`` one),
        in file order, each with what it asks or why it is ignored."""
        token = product_token(user_agent)
        group = self._agents.get(token)
        if group is None:
            self._kept(token)
            group, token = self._star, "*"
        return group.delay_lines(token) if group is not None else ()

    def crawl_delay(self, user_agent: str) -> float | None:
        """The longest ``Crawl-delay`` (seconds) among those that apply to the agent."""
        found = self.delay_line(user_agent, "Crawl-delay")
        return found.delay if found is not None else None

    def request_rate(self, user_agent: str) -> RequestRate | None:
        """The slowest ``Request-rate`` among those that apply to the agent."""
        found = self.delay_line(user_agent, "Request-rate")
        return found.rate if found is not None else None

    @property
    def sitemaps(self) -> list[str]:
        """``Sitemap`` URLs, file-wide, in order, without duplicates."""
        return list(self._sitemaps)

    @property
    def agents(self) -> list[str]:
        """The product tokens named by the file's groups (``"*"`` included)."""
        names = self._named.split("\n")[1:-1] if self._named else list(self._agents)
        if self._star is not None:
            names.append("*")
        return names

    def __repr__(self) -> str:
        return f"<Rfc9309Rules groups for {self.agents!r}>"


def parse_rfc9309(text: str, url: str | None = None) -> Rfc9309Rules:
    """Parse decoded, size-capped robots.txt text as RFC 9309 says; never raises.

    ``url`` is not needed (rules are paths); it is accepted for the registry.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = _AFTER_NUL("", text)  # Google reads lines as C strings: a NUL ends one
    if "#" in text:
        text = _without_comments(text)
    lines = text.split("\n")
    long = len(lines) > PAUSE_OVER
    if long:
        pause()
    # Cutting after the comments are gone keeps the same text: only a line
    # whose key and value alone pass the limit is cut into.
    cut: Collection[int] = ()  # the numbers of the lines cut at the limit
    if len(text) > _MAX_LINE_CHARS and max(map(len, lines)) > _MAX_LINE_CHARS:
        lines, cut = _cut_lines(lines)
    drafts: list[_Draft] = []
    sitemaps: list[str] = []
    seen_sitemaps: set[str] = set()
    cur: _Draft | None = None
    cur_agents: list[str] = []
    in_rules = False
    # The latest run of User-agent lines, cur_agents[run_start:]; a Crawl-delay,
    # Request-rate or Content-Signal line ends it (the group goes on).  The lines
    # after it share one set of its agents.
    run_start = 0
    run_ended = False
    run_agents: frozenset[str] | None = None
    keys = _KEYS
    ws = _WS
    # The current group's rule lists, and the kinds, as locals: most lines are rules.
    patterns: list[str] = []
    meta: list[int] = []
    allow = _ALLOW
    disallow = _DISALLOW
    other = _OTHER
    n = 0  # the line's number
    for line in lines:
        n += 1
        if not line:
            continue
        key, colon, value = line.partition(":")
        if not colon:
            # Google accepts "key value" for exactly two words.
            if " " not in line and "\t" not in line:
                continue  # one word or none (most such lines): no need to split
            # Tabs are blanks between words (no word holds one): the first word, and
            # the rest, which is the second word unless a blank is left in it.
            key, _, value = line.strip(ws).replace("\t", " ").partition(" ")
            value = value.lstrip(" ")
            if not value or " " in value:
                continue  # one word (the blanks were around it), or three or more
        kind = keys.get(key)
        if kind is None:
            kind = _classify(key)
            if len(keys) < 4096 and len(key) <= _MAX_CACHED_KEY:
                keys[key] = kind
        if kind == other:
            continue  # a line of HTML, or a key no one reads: its value is not needed
        if colon:
            value = value.strip(ws)
        if kind == disallow or kind == allow:  # noqa: SIM109 (no tuple built a line)
            if cur is None:
                continue  # rules before any user-agent line apply to no one
            in_rules = True
            if value:
                patterns.append(value)
                meta.append((n << 1) | (kind == allow))
        elif kind == _UA:
            if cur is None or in_rules:
                cur = _Draft(n)
                cur_agents = cur.agents
                patterns = cur.patterns
                meta = cur.meta
                drafts.append(cur)
                in_rules = False
                run_start = 0
            elif run_ended:
                run_start = len(cur_agents)
            run_ended = False
            run_agents = None
            cur_agents.append(_agent_of_line(value))
        elif kind == _SITEMAP:
            if value and value not in seen_sitemaps and "://" in value:
                seen_sitemaps.add(value)
                sitemaps.append(value)
        elif cur is not None:
            # Other lines never end a group (RFC 9309 2.2.4).
            if kind in (_CRAWL_DELAY, _REQUEST_RATE):
                if cur.pace is None:
                    cur.pace = []
                if run_agents is None:
                    run_agents = frozenset(cur_agents[run_start:])
                cur.pace.append((kind, value, n, run_agents))
                run_ended = True
            elif kind in (_CONTENT_USAGE, _CONTENT_SIGNAL):
                run_ended = True
                # Content-Usage is a rule (draft-ietf-aipref-attach): like Allow,
                # it ends the group's user-agent lines; Content-Signal does not.
                if kind == _CONTENT_USAGE:
                    in_rules = True
                if n in cut:
                    value = _still_stated(kind, value)
                if value:
                    if cur.usage is None:
                        cur.usage = []
                    cur.usage.append((kind, value, n))
    if long:
        pause()
    return Rfc9309Rules._build(drafts, sitemaps)


_NO_GROUP = Decision(True, "allowed: no group names this agent and there is no '*' group")
_NO_DECIDERS: dict[str, Decider | None] = {}
_NO_MEMO: dict[str, RuleSet | None] = {}
#: Read only, shared by every file that names no agent but "*".
_NO_AGENTS: dict[str, _Group] = {}
#: The rules of a group without any, or compiled (they live in its RuleSet): never written.
_NO_META: array[int] = array("H")


#: Between the sections of a group's values once sorted out for questions asked
#: without compiling (see _sorted_out); no value holds a NUL.
_OTHERS = "\x00"


def _needs_sorting(patterns: str) -> bool:
    """Whether joined values hold some that are not literal prefixes, not yet sorted out."""
    return (not patterns.isascii() or "%" in patterns or "*" in patterns or "$" in patterns
            or "/index.htm" in patterns) and _OTHERS not in patterns


def _sorted_out(patterns: str, meta: array[int]) -> tuple[str, array[int]]:
    """A group's joined values and their ``meta``, sorted out once for the questions
    asked without compiling, in four sections :data:`_OTHERS` apart (see _sections):
    the literal prefixes (those literal once normalised, normalised); the prefixes
    written with one star after them, without it; the other rules normalised
    (Google's added ones included), highest rank first; and the values whose
    normalised form holds a newline, as written."""
    literals: list[str] = []
    literal_meta: list[int] = []
    starred: list[str] = []
    starred_meta: list[int] = []
    ranked: list[tuple[int, int, str, int]] = []  # (-rank, order, pattern, meta)
    odd: list[str] = []
    odd_meta: list[int] = []
    for value, m in zip(patterns.split("\n"), meta, strict=True):
        if not _is_special(value):
            literals.append(value)
            literal_meta.append(m)
            continue
        normal = normalise_path(value) if not value.isascii() or "%" in value else value
        if "\n" in normal or _OTHERS in normal:
            odd.append(value)
            odd_meta.append(m)
            continue
        pattern = _final_dollar_only(normal)
        added = _index_rule(pattern) if m & 1 else None
        for rule in (pattern,) if added is None else (pattern, added):
            last = len(rule) - 1
            if "*" not in rule and rule[last] != "$":
                literals.append(rule)
                literal_meta.append(m)
            elif rule.find("*") == last:
                starred.append(rule[:last])
                starred_meta.append(m)
            else:
                ranked.append((-2 * len(rule) - (m & 1), len(ranked), rule, m))
    ranked.sort()
    return ("\n".join([*literals, _OTHERS, *starred, _OTHERS, *[r[2] for r in ranked],
                       _OTHERS, *odd]),
            _small_ints([*literal_meta, 0, *starred_meta, 0, *[r[3] for r in ranked], 0,
                         *odd_meta]))


def _sections(values: list[str]) -> tuple[int, int, int]:
    """Where the sections of values sorted out (see _sorted_out) start, after the
    literal prefixes: the starred prefixes, the ranked rules, the odd values."""
    starred = values.index(_OTHERS) + 1
    ranked = values.index(_OTHERS, starred) + 1
    return starred, ranked, values.index(_OTHERS, ranked) + 1


def _best_prefix(values: list[str], meta: Sequence[int], start: int, end: int, path: str,
                 best: int, stars: int) -> int:
    """The rank of the best rule matching ``path`` among ``values[start:end]``, literal
    prefixes each written with ``stars`` stars after it, or ``best`` if none beats it."""
    # The prefixes of the path picked out by C loops.
    for i in compress(range(start, end), map(path.startswith, values[start:end])):
        rank = 2 * (len(values[i]) + stars) + (meta[i] & 1)
        if rank > best:
            best = rank
    return best


def _unpacked(patterns: str, meta: Sequence[int]) -> list[tuple[bool, str, int]]:
    """A group's packed rules as ``(allow, normalised pattern, line)`` in file order
    (which decides ties), as packed or as sorted out (see _sorted_out)."""
    if not meta:
        return []
    values = patterns.split("\n")
    if _OTHERS not in patterns:
        return _normalised(values, meta)
    # The sections but the last are normalised already.
    starred, ranked, others = _sections(values)
    rules = [((m & 1) == 1, v, m >> 1) for v, m in zip(values, meta[: starred - 1],
                                                        strict=False)]
    rules += [((meta[i] & 1) == 1, values[i] + "*", meta[i] >> 1)
              for i in range(starred, ranked - 1)]
    rules += [((meta[i] & 1) == 1, values[i], meta[i] >> 1) for i in range(ranked, others - 1)]
    rules += _normalised(values[others:], meta[others:])
    rules.sort(key=_line_of)  # stable: a rule Google adds stays after its own
    return rules


def _paused(rules: list[tuple[bool, str, int]]) -> list[tuple[bool, str, int]]:
    """``rules``, after a pause if they are many (see :mod:`.pause`)."""
    if len(rules) > PAUSE_OVER:
        pause()
    return rules


def _line_of(rule: tuple[bool, str, int]) -> int:
    return rule[2]


def _is_special(value: str) -> bool:
    """Whether a rule's value is other than a literal prefix as written: normalised,
    a wildcard, or an Allow of an index page (which adds a rule, see _normalised)."""
    return (not value.isascii() or "%" in value or "*" in value or "$" in value
            or "/index.htm" in value)


def _clean(path: str) -> str:
    """A path taken from a URL, as rules see it: no fragment, normalised, escaped."""
    return _escape_specials(request_path(path))


def _escape_specials(path: str) -> str:
    """Encode the characters that are special in patterns (RFC 9309 2.2.3).

    A pattern matches a literal ``*`` or ``$`` only percent-encoded
    (``/file-%2A.html`` matches the URL ``/file-*.html``), so the path is
    compared with them encoded.
    """
    if "*" in path or "$" in path:
        return path.replace("*", "%2A").replace("$", "%24")
    return path


def _normalised(values: list[str], meta: Sequence[int]) -> list[tuple[bool, str, int]]:
    """A group's packed rules as ``(allow, pattern, line)``, patterns normalised, and the
    rules Google adds (see _index_rule)."""
    out = []
    for value, m in zip(values, meta, strict=True):
        allow = (m & 1) == 1
        line = m >> 1
        if not value.isascii() or "%" in value:
            value = normalise_path(value)
        value = _final_dollar_only(value)
        out.append((allow, value, line))
        if allow:
            added = _index_rule(value)
            if added is not None:
                out.append((True, added, line))
    return out


def _final_dollar_only(pattern: str) -> str:
    """A normalised pattern whose "$" that is not final is a literal, as in the path:
    only a final "$" anchors."""
    dollar = pattern.find("$")
    if 0 <= dollar < len(pattern) - 1:
        return pattern[:-1].replace("$", "%24") + pattern[-1]
    return pattern


def _index_rule(pattern: str) -> str | None:
    """The rule Google adds to an Allow of ``pattern``: ``Allow: /dir/index.html``
    also allows ``/dir/`` (as ``/dir/$``)."""
    slash = pattern.rfind("/")
    if slash >= 0 and pattern.startswith("/index.htm", slash):
        return pattern[: slash + 1] + "$"
    return None
