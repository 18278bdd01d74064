"""URL handling: origins (scheme, host, port), the path robots.txt rules see,
and the percent-encoding normalisation that patterns and paths share.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = [
    "InvalidURL",
    "normalise_path",
    "origin_of",
    "path_of",
    "robots_url",
    "split_origin",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}


class InvalidURL(ValueError):
    """A URL that robotgate cannot crawl: malformed, or not http(s).

    >>> origin_of("ftp://example.com/")
    Traceback (most recent call last):
    ...
    robotgate.urls.InvalidURL: invalid URL 'ftp://example.com/': scheme must be http or https
    """

    def __init__(self, url: object, why: str) -> None:
        super().__init__(f"invalid URL {url!r}: {why}")
        self.url = url
        self.why = why


# Cache of "scheme://authority" prefixes already validated, so the hot path
# (thousands of URLs on the same origins) does not re-run urlsplit and IDNA.
_ORIGIN_CACHE: dict[str, str] = {}
_ORIGIN_CACHE_MAX = 65536
_PREFIX_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")


def _origin_slow(url: str) -> str:
    if not isinstance(url, str):
        raise InvalidURL(url, "not a string")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(url, str(exc)) from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise InvalidURL(url, "scheme must be http or https")
    host = parts.hostname
    if not host:
        raise InvalidURL(url, "no host")
    if any(c in host for c in " \t\r\n/\\?#@"):
        raise InvalidURL(url, "bad characters in host")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise InvalidURL(url, f"bad international host name ({exc})") from None
    host = host.lower().rstrip(".")
    if not host:
        raise InvalidURL(url, "no host")
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}:{port}"
    return f"{scheme}://{host}"


def split_origin(url: str) -> tuple[str, str]:
    """Split an absolute http(s) URL into its origin and the rest.

    The origin is lower-cased, IDN hosts are in punycode, and default ports
    are dropped.  Raises :class:`InvalidURL` for anything else.

    >>> split_origin("http://A.com:80/x?q#f")
    ('http://a.com', '/x?q#f')
    """
    m = _PREFIX_RE.match(url) if isinstance(url, str) else None
    if m is not None:
        prefix = m[0]
        origin = _ORIGIN_CACHE.get(prefix)
        if origin is None:
            origin = _origin_slow(url)
            if len(_ORIGIN_CACHE) >= _ORIGIN_CACHE_MAX:
                _ORIGIN_CACHE.clear()
            _ORIGIN_CACHE[prefix] = origin
        return origin, url[m.end() :]
    _origin_slow(url)  # raises with the precise reason
    raise InvalidURL(url, "not an absolute URL")


def origin_of(url: str) -> str:
    """The origin of ``url``: ``"http://A.com:80/x"`` -> ``"http://a.com"``."""
    return split_origin(url)[0]


def robots_url(origin: str) -> str:
    """Where an origin's robots.txt lives."""
    return origin + "/robots.txt"


def path_of(url: str) -> str:
    """The part of a URL that robots.txt rules are matched against.

    Path plus params and query, no fragment; always starts with ``/``.
    Accepts an absolute URL or a path.

    >>> path_of("https://example.com/a/b?x=1#top")
    '/a/b?x=1'
    >>> path_of("https://example.com")
    '/'
    """
    m = _ABSOLUTE_RE.match(url)
    if m is not None:
        # Fast path for the common absolute URL.
        path = m[1]
        if path[:1] == "/":
            return path
    elif url.startswith("/") and not url.startswith("//"):
        cut = url.find("#")
        return url if cut < 0 else url[:cut]
    start = 2 if url.startswith("//") else 0
    scheme_end = url.find("://", start)
    early = _first_of(url, "/?;", start)
    if scheme_end < 0 or (early >= 0 and early < scheme_end):
        authority_start = start
    else:
        authority_start = scheme_end + 3
    path_start = _first_of(url, "/?;", authority_start)
    if path_start < 0:
        return "/"
    hash_pos = url.find("#", start)
    if 0 <= hash_pos < path_start:
        return "/"
    path = url[path_start:] if hash_pos < 0 else url[path_start:hash_pos]
    return path if path[0] == "/" else "/" + path


_ABSOLUTE_RE = re.compile(r"https?://[^/?#;]*([^#]*)")


def _first_of(s: str, chars: str, start: int) -> int:
    best = -1
    for c in chars:
        i = s.find(c, start)
        if i >= 0 and (best < 0 or i < best):
            best = i
    return best


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE_RE = re.compile(rb"%([0-9A-Fa-f]{2})|[\x80-\xff]")


def _escape_sub(m: re.Match[bytes]) -> bytes:
    hexpair = m.group(1)
    if hexpair is None:
        return b"%%%02X" % m.group(0)[0]
    value = int(hexpair, 16)
    if value in _UNRESERVED:
        return bytes((value,))
    return b"%" + hexpair.upper()


def normalise_path(s: str) -> str:
    """Percent-encoding normalisation shared by patterns and paths (RFC 9309 2.2.2).

    Non-ASCII characters become UTF-8 ``%XX``; hex digits are upper-cased; an
    encoded unreserved character is decoded, so ``/%62%61%7A`` equals ``/baz``.

    >>> normalise_path("/foo/bar/ツ")
    '/foo/bar/%E3%83%84'
    >>> normalise_path("/%62%61%7a?%2f")
    '/baz?%2F'
    """
    if s.isascii() and "%" not in s:
        return s
    raw = s.encode("utf-8", "surrogatepass")
    return _ESCAPE_RE.sub(_escape_sub, raw).decode("ascii")
