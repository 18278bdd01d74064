"""Perl's URI module, the parts WWW::RobotRules relies on.

WWW::RobotRules resolves each ``Disallow`` value against the robots.txt URL
(``URI->new_abs``), keeps it only on the same scheme, host and port, and
matches the result against ``URI->new($url)->path_query`` of the queried
URL.  This module reproduces those URI.pm operations: unwrapping, escaping
(``uric``, UTF-8, IDNA for hosts), host and port keys, relative resolution
with its dot-segment quirks.
"""

from __future__ import annotations

import re

from ...urls import remove_dot_segments
from .perl_text import _WS, _perl_lc

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


_HEX = [f"%{b:02X}" for b in range(256)]


def _escape_run(m: re.Match[str]) -> str:
    # Perl's utf8::encode writes surrogates as 3 bytes, as "surrogatepass" does.
    return "".join(map(_HEX.__getitem__, m.group().encode("utf-8", "surrogatepass")))


def _escape(s: str) -> str:
    """URI.pm's escaping: every character outside uric and ``#`` as UTF-8 ``%XX``."""
    return _UNSAFE_RE.sub(_escape_run, s)


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
    """What the classic dialect matches for a queried URL: the path and query sent.

    ``URI->new($url)->path_query`` as WWW::RobotRules takes it, then with its
    dot segments removed (:func:`robotgate.urls.remove_dot_segments`), as the
    client removes them before sending: ``/a/../private`` and ``/%2e/private``
    are judged as ``/private``.  (A deliberate departure: WWW::RobotRules
    matches them as written.)  None for URLs whose scheme is not http(s)
    (robots.txt does not apply).  A string without a scheme is a path on the
    site (a ``/`` is put in front if missing).
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
            if not pq.isascii() or _UNSAFE_RE.search(pq):
                pq = _escape(pq)
            # pq is empty or starts with "/" or "?": only these can hold a dot segment.
            return remove_dot_segments(pq) if "/." in pq or "/%2" in pq else pq
    s = _unwrap(url)
    sm = _SCHEME_RE.match(s)
    if sm is not None:
        if s[: sm.end() - 1].lower() not in _DEFAULT_PORTS:
            return None
        return remove_dot_segments(_escape(_path_query(s)))
    if s[:1] != "/":
        s = "/" + s
    return remove_dot_segments(_escape(s.split("#", 1)[0]))
