"""The classic dialect's records and its :class:`ClassicRobotsTxt` (see the package docs)."""

from __future__ import annotations

import re

from ...decision import Decision, Rule
from ..rules import RequestRate, RobotsTxt
from .perl_text import _S, _WS, _WS_CLASS, _perl_lc
from .perl_uri import _Base, _origin_of, _query_path

__all__ = ["ClassicRobotsTxt", "parse_classic"]

_UA_RE = re.compile(rf"[{_WS_CLASS}]*[Uu]{_S}[Ee][Rr]-[Aa][Gg][Ee][Nn][Tt][{_WS_CLASS}]*:")
_KEY_DISALLOW = rf"[Dd][Ii]{_S}[Aa][Ll][Ll][Oo][Ww][{_WS_CLASS}]*:"
_DISALLOW_RE = re.compile(rf"[{_WS_CLASS}]*{_KEY_DISALLOW}")
_NONSPACE_RE = re.compile(rf"[^{_WS_CLASS}]+")
# Origins a ClassicRobotsTxt parsed without its URL keeps bound copies for.
_MAX_VIEWS = 16


class _Record:
    """One record: its ``User-agent`` values (lower-cased) and its ``Disallow`` lines.

    Values are resolved (a URI operation) on first use, so a file's records
    cost nothing until an agent they concern is asked about.
    """

    __slots__ = ("agents", "prefixes", "raw", "rules")

    def __init__(self, agents: list[str] | None = None) -> None:
        self.agents: list[str] = agents if agents is not None else []
        self.raw: list[tuple[str, int]] = []
        self.rules: list[tuple[str, int]] | None = None
        self.prefixes: tuple[str, ...] = ()

    def fresh(self) -> _Record:
        """An unresolved copy, to resolve against another base (shares the lists)."""
        copy = _Record(self.agents)
        copy.raw = self.raw
        return copy

    def resolved(self, base: _Base) -> list[tuple[str, int]]:
        rules = self.rules
        if rules is None:
            rules = []
            for value, line in self.raw:
                if not value:
                    rules.append(("", line))
                    continue
                pattern = base.resolve(value)
                if pattern is not None:
                    rules.append((pattern, line))
            self.rules = rules
            if base.known:
                self.raw = []  # an unknown base's records are copied per origin
            prefixes = []
            for pattern, _line in rules:
                if not pattern:
                    break  # an empty Disallow ends the search: allowed
                prefixes.append(pattern)
            self.prefixes = tuple(prefixes)
        return rules


def _short_name(user_agent: str) -> str:
    """The robot's name as WWW::RobotRules keeps it, lower-cased.

    First run of non-space characters, cut at its first ``/``.  Perl leaves
    the name unset for the false strings ``""`` and ``"0"``.
    """
    if user_agent in ("", "0"):
        return ""
    m = _NONSPACE_RE.search(user_agent)
    name = m.group() if m is not None else user_agent
    return _perl_lc(name.split("/", 1)[0])


class ClassicRobotsTxt(RobotsTxt):
    """A robots.txt read as WWW::RobotRules 6.02 reads it (see the module docs).

    >>> rules = parse_classic("User-agent: *\\nDisallow: /private\\n", "http://example.com/robots.txt")
    >>> rules.allowed("http://example.com/private/x", "MyBot/1.0")
    False
    >>> str(rules.decide("/private", "MyBot/1.0"))
    "disallowed by 'Disallow: /private' (line 2) in the record for '*' (no record names this agent)"
    """

    __slots__ = ("_anon", "_base", "_cache", "_records", "_views")

    DIALECT = "classic"

    def __init__(self, records: list[_Record], anon: _Record | None, base: _Base) -> None:
        self._records = records
        self._anon = anon
        self._base = base
        self._cache: dict[str, tuple[_Record | None, bool]] = {}
        # Without the robots.txt URL, an absolute URL is judged as its own
        # origin's robots.txt would judge it: one bound copy per origin.
        self._views: dict[str, ClassicRobotsTxt] | None = None if base.known else {}

    def _view(self, url: str) -> ClassicRobotsTxt:
        """The rules as the robots.txt of ``url``'s origin (self for a path)."""
        origin = _origin_of(url)
        views = self._views
        if origin is None or views is None:
            return self
        view = views.get(origin)
        if view is None:
            base = _Base(origin + "/robots.txt")
            if base.known:
                copies = {id(r): r.fresh() for r in self._records}
                anon = self._anon
                if anon is not None:
                    anon = copies.get(id(anon)) or anon.fresh()
                view = ClassicRobotsTxt(list(copies.values()), anon, base)
            else:
                view = self  # no host WWW::RobotRules could work with
            if len(views) >= _MAX_VIEWS:
                views.clear()
            views[origin] = view
        return view

    def _record_for(self, user_agent: str) -> tuple[_Record | None, bool]:
        """The record that applies to ``user_agent``, and whether it is the '*' fallback."""
        cache = self._cache
        found = cache.get(user_agent)
        if found is None:
            me = _short_name(user_agent)
            found = (self._anon, True)
            for r in self._records:
                # The first record with a value inside the robot's name wins.
                if any(v != "*" and v in me for v in r.agents):
                    found = (r, False)
                    break
            if len(cache) >= 1024:
                cache.clear()
            cache[user_agent] = found
        record = found[0]
        if record is not None and record.rules is None:
            record.resolved(self._base)
        return found

    def allowed(self, url: str, user_agent: str) -> bool:
        """May ``user_agent`` fetch ``url`` (an absolute URL or a path with query)?

        As ``WWW::RobotRules->allowed``: URLs that are not http(s) are always
        allowed; ``http://host`` (empty path) matches no rule.
        """
        if self._views is not None:
            view = self._view(url)
            if view is not self:
                return view.allowed(url, user_agent)
        record = self._record_for(user_agent)[0]
        if record is None or not record.prefixes:
            return True
        pq = _query_path(url)
        return pq is None or not pq.startswith(record.prefixes)

    def decide(self, url: str, user_agent: str) -> Decision:
        """Like :meth:`allowed`, with the deciding ``Disallow`` line and its record.

        An empty ``Disallow:`` that ends the search is reported as the rule
        (``Rule(allow=False, pattern="")``) of an *allowed* decision.

        >>> rules = parse_classic("User-agent: foo\\nDisallow: /x\\n", None)
        >>> str(rules.decide("/x/y", "FooBot/1.2"))
        "disallowed by 'Disallow: /x' (line 2) in the record for 'foo'"
        """
        if self._views is not None:
            view = self._view(url)
            if view is not self:
                return view.decide(url, user_agent)
        record, fallback = self._record_for(user_agent)
        if record is None:
            return Decision(True, "allowed: no record names this agent and there is no '*' record")
        group = tuple(record.agents)
        where = "the record for " + ", ".join(repr(a) for a in group)
        if fallback:
            where += " (no record names this agent)"
        pq = _query_path(url)
        if pq is None:
            return Decision(True, "allowed: robots.txt applies only to http and https URLs")
        for pattern, line in record.resolved(self._base):
            if not pattern:
                return Decision(
                    True,
                    f"allowed by 'Disallow:' (line {line}) in {where}: "
                    "an empty Disallow allows everything",
                    Rule(False, "", line),
                    group,
                )
            if pq.startswith(pattern):
                text = f"Disallow: {pattern}"
                return Decision(
                    False,
                    f"disallowed by {text!r} (line {line}) in {where}",
                    Rule(False, pattern, line),
                    group,
                )
        return Decision(True, f"allowed: no rule matches in {where}", None, group)

    def crawl_delay(self, user_agent: str) -> float | None:
        """Always None: WWW::RobotRules ignores ``Crawl-delay``.

        (LWP::RobotUA paces itself with its own ``delay``, one minute by default.)
        """
        return None

    def request_rate(self, user_agent: str) -> RequestRate | None:
        """Always None: WWW::RobotRules ignores ``Request-rate``."""
        return None

    @property
    def sitemaps(self) -> list[str]:
        """Always empty: WWW::RobotRules ignores ``Sitemap``."""
        return []

    @property
    def agents(self) -> list[str]:
        """The ``User-agent`` values of the records, lower-cased, ``"*"`` last if any."""
        names: list[str] = []
        for r in self._records:
            for a in r.agents:
                if a != "*" and a not in names:
                    names.append(a)
        if self._anon is not None:
            names.append("*")
        return names

    def __repr__(self) -> str:
        return f"<ClassicRobotsTxt records for {self.agents!r}>"


def parse_classic(text: str, url: str | None) -> ClassicRobotsTxt:
    """Parse robots.txt ``text`` as WWW::RobotRules does; never raises.

    ``url`` is where the file came from: relative ``Disallow`` values resolve
    against it and absolute ones for another scheme, host or port are
    ignored.  Without it (or if it is not an http(s) URL with a host), an
    absolute URL asked about is judged against its own origin (as if the file
    were that origin's robots.txt), and a bare path against no known host:
    values naming a scheme or host (``http://a/x``, ``//a/x``, ``//*``) match
    no bare path.
    """
    base = _Base(url)
    records: list[_Record] = []
    anon_parts: list[_Record] = []  # pre-User-agent lines, then the '*' records
    pre: _Record | None = None
    cur: _Record | None = None
    seen_ua = False
    seen_disallow = False
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    ws = _WS
    for n, line in enumerate(text.split("\n"), 1):
        h = line.find("#")
        if h >= 0:
            if not line[:h].strip(ws):
                continue  # a comment-only line is not a record separator
            line = line[:h]
        if not line.strip(ws):
            cur = None
            seen_disallow = False
            continue
        m = _UA_RE.match(line)
        if m is not None:
            value = line[m.end() :].strip(ws)
            seen_ua = True
            if seen_disallow or cur is None:
                seen_disallow = False
                cur = _Record()
                records.append(cur)
            cur.agents.append(_perl_lc(value))
            if value == "*" and (not anon_parts or anon_parts[-1] is not cur):
                anon_parts.append(cur)
            continue
        m = _DISALLOW_RE.match(line)
        if m is None:
            continue  # anything else is ignored
        value = line[m.end() :].strip(ws)
        seen_disallow = True
        if not seen_ua:
            # "Disallow before any User-agent": WWW::RobotRules assumes '*'.
            if pre is None:
                pre = _Record(["*"])
                anon_parts.insert(0, pre)
            pre.raw.append((value, n))
        elif cur is not None:
            cur.raw.append((value, n))
    anon: _Record | None = None
    if len(anon_parts) == 1:
        anon = anon_parts[0]
    elif anon_parts:
        anon = _Record(["*"])
        for part in anon_parts:
            anon.raw.extend(part.raw)
    return ClassicRobotsTxt(records, anon, base)
