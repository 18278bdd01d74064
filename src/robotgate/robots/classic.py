"""The classic dialect: the 1994 robots.txt standard as WWW::RobotRules applies it.

WWW::RobotRules 6.02 (Perl's libwww, used by LWP::RobotUA) is the reference
implementation of "A Standard for Robot Exclusion" (1994).  This module
reproduces its verdicts, quirks included, so that a crawler can behave exactly
as an LWP robot would:

* records are separated by blank lines; a line holding only a comment is not
  blank; a ``User-agent`` line after a ``Disallow`` line starts a new record;
  ``Disallow`` lines before the first ``User-agent`` line belong to ``*``;
* the robot's name is the first word of its User-Agent, without version
  (``"FooBot/1.2 [http://foobot.int]"`` is ``FooBot``), and a record is the
  robot's when one of its ``User-agent`` values, lower-cased, is a substring
  of that name, lower-cased (so ``User-agent: bot`` and an empty
  ``User-agent:`` name every robot called ``...bot``, or every robot);
* the first record naming the robot replaces all ``*`` records; otherwise
  the ``Disallow`` lines of every ``*`` record apply;
* only ``Disallow`` is understood: a plain prefix of the URL's path plus
  query, first match wins, and an empty value allows everything from there
  on (``Disallow: /a`` then ``Disallow:`` blocks ``/a`` only);
* values are read as URI references relative to the robots.txt URL and
  percent-escaped as Perl's URI module does (so ``Disallow: /a b`` is
  ``/a%20b``, ``Disallow: tmp`` is ``/tmp``, ``Disallow: ?x`` is
  ``/robots.txt?x``); references to another scheme, host or port are
  ignored; nothing else is normalised (``/%7E`` and ``/~`` differ);
* lines end at CR, LF or CRLF; ``\\s`` and case-insensitivity follow Perl's
  Unicode rules, not Python's.

Deliberate differences: the text is decoded by :mod:`robotgate.robots.body`
(first 500 KiB only, a BOM dropped), where LWP reads the whole body and keeps
a UTF-8 BOM as part of the first line; and, given the robots.txt URL, rules
do not depend on the queried URL's host, since a :class:`ClassicRobotsTxt`
describes one origin.  Parsed without that URL, a file judges each absolute
URL as the robots.txt of that URL's origin would (WWW::RobotRules keeps rules
per host), and a bare path as if on a host no rule names.
"""

from __future__ import annotations

import re

from ..decision import Decision, Rule
from .rules import RequestRate, RobotsTxt

__all__ = ["ClassicRobotsTxt", "classic_body_usable", "parse_classic"]

# Perl's \s on Unicode strings (Python's \s adds U+001C..U+001F).
_WS = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
_WS_CLASS = "".join(f"\\u{ord(c):04x}" for c in _WS)
# Perl's /i: "s" also matches U+017F (long s); Python's would also let "i"
# match U+0130 and U+0131, which Perl does not.
_S = "[Ss\u017f]"
_UA_RE = re.compile(rf"[{_WS_CLASS}]*[Uu]{_S}[Ee][Rr]-[Aa][Gg][Ee][Nn][Tt][{_WS_CLASS}]*:")
_KEY_DISALLOW = rf"[Dd][Ii]{_S}[Aa][Ll][Ll][Oo][Ww][{_WS_CLASS}]*:"
_DISALLOW_RE = re.compile(rf"[{_WS_CLASS}]*{_KEY_DISALLOW}")
# LWP::RobotUA: /^\s*Disallow\s*:/mi over the whole body.  Leaving "\n" out
# of the leading \s* matches the same texts (start at the run's last line)
# without rescanning runs of blank lines from every line start.
_WS_NOT_LF_CLASS = "".join(f"\\u{ord(c):04x}" for c in _WS if c != "\n")
_BODY_DISALLOW_RE = re.compile(rf"^[{_WS_NOT_LF_CLASS}]*{_KEY_DISALLOW}", re.MULTILINE)
_NONSPACE_RE = re.compile(rf"[^{_WS_CLASS}]+")

# -- Perl's URI module, the parts WWW::RobotRules relies on -------------------

_SCHEME_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9.+\-]*:")
# URI.pm's "uric" plus "#": everything else is percent-escaped as UTF-8.
_URIC = "-;/?:@&=+$,A-Za-z0-9_.!~*'()%"
_UNSAFE_RE = re.compile(rf"[^{_URIC}#]+")
_UNSAFE_HOST_RE = re.compile(rf"[^{_URIC}\[\]]")
_WRAP_ANGLE_RE = re.compile(r"^<(?:URL:)?(.*)>$")
_WRAP_QUOTE_RE = re.compile(r'^"(.*)"$')
_SERVER_RE = re.compile(r"((?:[a-zA-Z][a-zA-Z0-9.+\-]*:)?)//([^/?#]*)(.*)", re.DOTALL)
_HOST_PART_RE = re.compile(r"((?:[a-zA-Z][a-zA-Z0-9.+\-]*:)?)//([^/?#]+)(.*)", re.DOTALL)
_AUTHORITY_RE = re.compile(r"((?:[a-zA-Z][a-zA-Z0-9.+\-]*:)?)(?://([^/?#]*))?(.*)", re.DOTALL)
_PATH_RE = re.compile(r"((?:[^:/?#]+:)?(?://[^/?#]*)?)([^?#]*)(.*)", re.DOTALL)
_PATH_QUERY_RE = re.compile(r"(?:[^:/?#]+:)?(?://[^/?#]*)?([^#]*)", re.DOTALL)
_QUERY_RE = re.compile(r"[^?#]*(?:\?([^#]*))?", re.DOTALL)
_PORT_SUFFIX_RE = re.compile(r":\d+\Z")
_PORT_RE = re.compile(r":([0-9]*)$")
_PERCENT_RE = re.compile(r"%([0-9A-Fa-f]{2})")
# The usual queried URL: "http(s)://host/path", no wrapping, no whitespace.
_FAST_URL_RE = re.compile(r"[hH][tT][tT][pP][sS]?://[^/?#]*([^#]*)", re.DOTALL)
_DEFAULT_PORTS = {"http": "80", "https": "443"}
# Origins a ClassicRobotsTxt parsed without its URL keeps bound copies for.
_MAX_VIEWS = 16


_HEX = [f"%{b:02X}" for b in range(256)]


def _escape_run(m: re.Match[str]) -> str:
    # Perl's utf8::encode writes surrogates as 3 bytes, as "surrogatepass" does.
    return "".join(map(_HEX.__getitem__, m.group().encode("utf-8", "surrogatepass")))


def _escape(s: str) -> str:
    """URI.pm's escaping: every character outside uric and ``#`` as UTF-8 ``%XX``."""
    return _UNSAFE_RE.sub(_escape_run, s)


def _perl_lc(s: str) -> str:
    """Perl's ``lc``: Python's lower() but without the final-sigma rule."""
    if s.isascii():
        return s.lower()
    return s.replace("\u03a3", "\u03c3").lower()


def _unwrap(s: str) -> str:
    """URI->new's clean-up: ``<URL:...>``, ``<...>`` and ``"..."`` wrappers, outer spaces."""
    if s[:1] in ("<", '"'):
        s = _WRAP_ANGLE_RE.sub(lambda m: m.group(1), s, count=1)
        s = _WRAP_QUOTE_RE.sub(lambda m: m.group(1), s, count=1)
    return s.strip(_WS)


def _idna(host: str) -> str | None:
    """URI::_idna::encode (lower-case, punycode; no real nameprep), None on failure."""
    labels = host.split(".")
    last_empty = [labels.pop()] if len(labels) > 1 and labels[-1] == "" else []
    out = []
    for label in labels:
        if not label.isascii():
            label = _perl_lc(label)
            if not label.isascii():
                if label.startswith("xn--") or len(label) > 59:
                    return None  # "xn--" + punycode would exceed 63 anyway
                try:
                    label = "xn--" + label.encode("punycode").decode("ascii")
                except (UnicodeError, ValueError):
                    return None
        if label == "" or len(label) > 63:
            return None
        out.append(label)
    return ".".join(out + last_empty)


def _split_userinfo(s: str) -> tuple[str, str]:
    """Perl's ``s/(.*@)//``: the user info up to the last ``@`` (of the first
    line that has one) and the rest; without a regex, whose search would be
    quadratic.
    """
    if "\n" not in s:
        at = s.rfind("@")
        return s[: at + 1], s[at + 1 :]
    pos = 0
    for line in s.split("\n"):
        at = line.rfind("@")
        if at >= 0:
            return line[: at + 1], s[:pos] + line[at + 1 :] + s[pos + len(line) :]
        pos += len(line) + 1
    return "", s


def _fix_host_brackets(s: str) -> str:
    """URI 5.11+: ``[`` and ``]`` stay unescaped in the host part."""
    m = _HOST_PART_RE.fullmatch(s)
    if m is None:
        return s
    orig = m.group(2)
    at = orig.rfind("@")
    user, host = orig[: at + 1], orig[at + 1 :]
    pm = re.search(r":\d+$", host)
    port = ""
    if pm is not None:
        port, host = pm.group(), host[: pm.start()]
    host = re.sub("%5[Bb]", "[", host)
    host = re.sub("%5[Dd]", "]", host)
    return s.replace(orig, user + host + port, 1)


def _server_escape(s: str) -> str:
    """URI->new for http(s) URIs: IDNA for a non-ASCII host, then escaping."""
    m = _SERVER_RE.fullmatch(s)
    if m is not None:
        scheme, host, rest = m.groups()
        ui, host = _split_userinfo(host)
        port = ""
        pm = _PORT_SUFFIX_RE.search(host)
        if pm is not None:
            port, host = pm.group(), host[: pm.start()]
        if _UNSAFE_HOST_RE.search(host):
            encoded = _idna(host)
            if encoded is not None:
                s = f"{scheme}//{ui}{encoded}{port}{rest}"
    s = _escape(s)
    if "%" in s:
        s = _fix_host_brackets(s)
    return s


def _host_key(authority: str | None) -> str:
    """``lc($uri->host)``: no user info, port or brackets, %XX decoded, ASCII lower-cased."""
    if authority is None:
        return ""  # lc(undef)
    h = _split_userinfo(authority)[1]
    h = re.sub(r":[0-9]+$", "", h, count=1)
    if h[:1] == "[" and h[-1:] == "]":
        h = h[1:-1]
    h = _PERCENT_RE.sub(lambda m: chr(int(m.group(1), 16)), h)
    # Perl's lc on a byte string changes only A-Z.
    return h.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _port_of(authority: str | None, default: str) -> str:
    """``$uri->port`` as the string Perl compares with ``ne``."""
    if authority is not None:
        m = _PORT_RE.search(authority)
        if m is not None and m.group(1):
            return m.group(1)
    return default


def _path_query(escaped: str) -> str:
    m = _PATH_QUERY_RE.match(escaped)
    return m.group(1) if m is not None else ""


class _Base:
    """The robots.txt URL as URI.pm sees it: what Disallow values resolve against.

    ``known`` is False when there is no such URL (or it is not an http(s) URL
    with a host): values that name a scheme or host then match no site.
    """

    __slots__ = ("authority", "host", "known", "path", "port", "query", "scheme")

    def __init__(self, url: str | None) -> None:
        self.known = False
        self.scheme = "http"
        self.authority: str | None = "robotgate.invalid"
        self.path = "/robots.txt"
        self.query: str | None = None
        self.host = self.port = ""
        if url is None:
            return
        s = _unwrap(url)
        m = _SCHEME_RE.match(s)
        if m is None or s[: m.end() - 1].lower() not in _DEFAULT_PORTS:
            return
        escaped = _server_escape(s)
        am = _AUTHORITY_RE.fullmatch(escaped)
        authority = am.group(2) if am is not None else None
        if not authority:
            return  # not a URL WWW::RobotRules can work with
        self.known = True
        self.scheme = s[: m.end() - 1].lower()
        self.authority = authority
        self.host = _host_key(authority)
        self.port = _port_of(authority, _DEFAULT_PORTS[self.scheme])
        pm = _PATH_RE.fullmatch(escaped)
        self.path = pm.group(2) if pm is not None else ""
        qm = _QUERY_RE.match(escaped)
        self.query = qm.group(1) if qm is not None else None

    def resolve(self, value: str) -> str | None:
        """``URI->new_abs($disallow, $robots_url)->path_query`` (``"/"`` if empty),
        or None when WWW::RobotRules ignores the line (other scheme, host or
        port; or any scheme or host when the robots.txt URL is not known).
        """
        s = _unwrap(value)
        if s[:1] == "/" and s[1:2] != "/":
            # The common case: an absolute path, kept as is but escaped.
            return _escape(s).split("#", 1)[0]
        m = _SCHEME_RE.match(s)
        if m is not None:
            scheme = s[: m.end() - 1].lower()
            if scheme not in _DEFAULT_PORTS or scheme != self.scheme or not self.known:
                return None
            escaped = _server_escape(s)
            return self._same_site(escaped, scheme)
        escaped = _server_escape(s)
        if escaped[:2] == "//":
            return self._same_site(self.scheme + ":" + escaped, self.scheme)
        return self._relative(escaped) or "/"

    def _same_site(self, escaped: str, scheme: str) -> str | None:
        if not self.known:
            return None
        am = _AUTHORITY_RE.fullmatch(escaped)
        authority = am.group(2) if am is not None else None
        if _host_key(authority) != self.host:
            return None
        if _port_of(authority, _DEFAULT_PORTS[scheme]) != self.port:
            return None
        return _path_query(escaped) or "/"

    def _relative(self, escaped: str) -> str:
        """URI::_generic::abs for a reference without scheme or authority."""
        # $abs->authority($base->authority): a "/" goes between if needed.
        sep = "/" if escaped and escaped[0] not in "/?#" else ""
        absolute = f"{self.scheme}://{self.authority}{sep}{escaped}"
        pm = _PATH_RE.fullmatch(escaped)
        path = pm.group(2) if pm is not None else ""
        if path[:1] == "/":
            return _path_query(absolute)
        if not path:
            qm = _QUERY_RE.match(escaped)
            query = qm.group(1) if qm is not None else None
            if query is None:
                query = self.query
            return self.path if query is None else f"{self.path}?{query}"
        base_dir = self.path
        cut = base_dir.rfind("/")
        base_dir = base_dir[: cut + 1] if cut >= 0 else ""
        merged = "/" + "/".join(_remove_dots((base_dir + path).split("/")))
        am = _PATH_RE.fullmatch(absolute)
        if am is None:  # pragma: no cover - the pattern matches any string
            return merged
        return _path_query(am.group(1) + merged + am.group(3))


def _remove_dots(p: list[str]) -> list[str]:
    """URI::_generic::abs's dot-segment loop, quirks kept (leading ".." stay).

    Perl splices its array in place; this is the same walk with a stack, in
    linear time.
    """
    start = 1 if p and p[0] == "" else 0
    n = len(p)
    out = p[start : start + 1]
    j = start + 1
    while j < n:
        top = out[-1]
        if top == ".":
            out.pop()
            if not out:
                out.append(p[j])
                j += 1
        elif p[j] == ".." and top != "..":
            out.pop()
            j += 1
            if out:
                if j == n:
                    p.append("")
                    n += 1
            elif j < n:
                out.append(p[j])
                j += 1
        else:
            out.append(p[j])
            j += 1
    if out and out[-1] == ".":
        out[-1] = ""
    return out


def _origin_of(url: str) -> str | None:
    """``scheme://authority`` of an http(s) URL with a host, as written; else None."""
    m = _FAST_URL_RE.match(url)
    if m is None or url[-1:] in _WS:
        s = _unwrap(url)
        m = _FAST_URL_RE.match(s)
        if m is None:
            return None
        url = s
    origin = url[: m.start(1)]
    return origin if origin[-3:] != "://" else None


def _query_path(url: str) -> str | None:
    """What WWW::RobotRules matches for a queried URL: ``URI->new($url)->path_query``.

    None for URLs whose scheme is not http(s) (robots.txt does not apply).  A
    string without a scheme is a path on the site (a ``/`` is put in front if
    missing).
    """
    if url[-1:] not in _WS:
        m = _FAST_URL_RE.match(url)
        if m is not None:
            pq = m.group(1)
        elif url[:1] == "/":
            cut = url.find("#")
            pq = url if cut < 0 else url[:cut]
        else:
            pq = None
        if pq is not None:
            return pq if pq.isascii() and not _UNSAFE_RE.search(pq) else _escape(pq)
    s = _unwrap(url)
    sm = _SCHEME_RE.match(s)
    if sm is not None:
        if s[: sm.end() - 1].lower() not in _DEFAULT_PORTS:
            return None
        return _escape(_path_query(s))
    if s[:1] != "/":
        s = "/" + s
    return _escape(s.split("#", 1)[0])


# -- records --------------------------------------------------------------------


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


def classic_body_usable(content_type: str | None, text: str) -> bool:
    """Would LWP::RobotUA hand this (successful) robots.txt response to its rules?

    LWP::RobotUA 6.x parses the body only if ``$res->content_is_text`` (the
    Content-Type, before any ``;``, spaces removed and lower-cased, starts
    with ``text/``; a missing Content-Type is not text) and the decoded body
    has a line matching ``/^\\s*Disallow\\s*:/mi``.  Otherwise it parses an
    empty robots.txt: everything is allowed.  It does not sniff for HTML: an
    HTML page served as ``text/html`` passes if a line starts with
    ``Disallow:``.  (Non-2xx responses, 401 and 403 included, also mean an
    empty robots.txt to LWP::RobotUA; that is the gate's business.)
    """
    if not content_type:
        return False
    mime = re.sub(r"[\t\n\x0b\x0c\r ]+", "", content_type.split(";", 1)[0]).lower()
    if not mime.startswith("text/"):
        return False
    return _BODY_DISALLOW_RE.search(text) is not None
