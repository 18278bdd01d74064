"""Cookies as Chromium keeps them, for the answers and hops the route handles itself.

The route hands Chromium the answer to the URL it asked for with its ``Set-Cookie``
headers, and sends the ``Cookie`` header Chromium computed for that URL (its jar's, with
``SameSite`` and the request's credentials mode applied): there Chromium decides.  A
redirect the route follows is never seen by Chromium, so for a hop this module restates
its rules (RFC 6265bis, as Chromium keeps them; ``tests/contract/test_browser_cookies.py``
holds each rule against Chromium's own): which ``Set-Cookie`` of a hop's answer is kept
(:func:`kept_cookies`), and which of the jar's cookies a hop carries (:func:`sent_cookies`).
Pure: no I/O, the clock an argument.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

if TYPE_CHECKING:
    from playwright._impl._api_structures import SetCookieParam

__all__ = ["Kept", "kept_cookies", "same_origin", "same_site", "sent_cookies", "site_of",
           "trustworthy"]

SameSite = Literal["Strict", "Lax", "None"]


@dataclass(frozen=True)
class Kept:
    """What one answer's ``Set-Cookie`` headers do to the jar: cookies to add, and
    (name, domain, path) of cookies to delete (expired on arrival: ``Max-Age=0``)."""

    add: list[SetCookieParam]
    delete: list[tuple[str, str, str]]


@lru_cache(maxsize=1)
def _suffixes() -> PublicSuffixList:
    # The list ships inside the package.  Private registries too (x.github.io is a
    # site of its own), as Chromium's cookie and site rules read it.
    return PublicSuffixList()


def _literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def trustworthy(url: str) -> bool:
    """Whether ``url`` is a potentially trustworthy origin (https, or loopback), where
    Chromium lets ``Secure`` cookies be set and sent."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme in ("https", "wss"):
        return True
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def site_of(url: str) -> tuple[str, str]:
    """``url``'s schemeful site: its scheme and registrable domain (the host for an
    address or a public suffix)."""
    parts = urlsplit(url)
    return parts.scheme.lower(), _registrable((parts.hostname or "").lower())


@lru_cache(maxsize=4096)
def _registrable(host: str) -> str:
    """``host``'s registrable domain (itself for an address or a public suffix).  Asked
    for each browser request, of a few hosts: kept, the list's walk done once a host."""
    if _literal(host):
        return host
    return _suffixes().privatesuffix(host) or host


def same_site(url: str, other: str) -> bool:
    """Whether two URLs are the same schemeful site."""
    return site_of(url) == site_of(other)


def same_origin(url: str, other: str) -> bool:
    """Whether two URLs are the same origin (scheme, host, port)."""
    def origin(of: str) -> tuple[str, str, int | None]:
        parts = urlsplit(of)
        scheme = parts.scheme.lower()
        try:
            port = parts.port or {"http": 80, "https": 443}.get(scheme)
        except ValueError:
            port = None
        return scheme, (parts.hostname or "").lower(), port

    return origin(url) == origin(other)


def _default_path(path: str) -> str:
    """RFC 6265bis 5.1.4."""
    if not path.startswith("/") or path.count("/") == 1:
        return "/"
    return path[: path.rindex("/")]


def _domain_matches(host: str, domain: str) -> bool:
    return host == domain or (host.endswith("." + domain) and not _literal(host))


def kept_cookies(url: str, headers: Iterable[str], *, cross_site: bool,
                 top_level_navigation: bool, now: float | None = None) -> Kept:
    """What the ``Set-Cookie`` header values of an answer to ``url`` do to the jar, as
    Chromium keeps them (RFC 6265bis 5.6, with Chromium's rules where it is stricter):
    a ``Domain`` the host does not domain-match, an address's other than itself, or a
    public suffix not the host's own, drops the cookie; ``Secure`` (and a ``__Secure-``
    or ``__Host-`` name) only from a trustworthy origin; ``__Host-`` without ``Domain``
    and with ``Path=/``; ``SameSite=None`` only with ``Secure``; a cookie other than
    ``SameSite=None`` not set by a cross-site answer (``cross_site``) unless it answers
    a top-level navigation."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    secure_origin = trustworthy(url)
    now = time.time() if now is None else now
    add: list[SetCookieParam] = []
    delete: list[tuple[str, str, str]] = []
    for line in headers:
        pair, _, attributes = line.partition(";")
        if "=" in pair:
            name, _, value = pair.partition("=")
        else:
            name, value = "", pair
        name, value = name.strip(" \t"), value.strip(" \t")
        if not name and not value:
            continue
        if any((ord(c) < 0x20 and c != "\t") or c == "\x7f" for c in name + value):
            continue
        domain = path = same_site_attr = None
        secure = http_only = False
        expires: float | None = None
        max_age: float | None = None
        for attribute in attributes.split(";"):
            key, _, val = attribute.partition("=")
            key, val = key.strip(" \t").lower(), val.strip(" \t")
            if key == "domain":
                domain = val.lstrip(".").lower() if val else None
            elif key == "path":
                path = val if val.startswith("/") else None
            elif key == "secure":
                secure = True
            elif key == "httponly":
                http_only = True
            elif key == "samesite":
                same_site_attr = {"strict": "Strict", "lax": "Lax", "none": "None"}.get(
                    val.lower(), "Lax")
            elif key == "max-age":
                with suppress(ValueError):
                    max_age = float(int(val))
            elif key == "expires":
                with suppress(ValueError, TypeError, OverflowError, IndexError):
                    expires = parsedate_to_datetime(val).timestamp()
        # Domain: the host's own, or a parent that is no public suffix.
        if domain is not None:
            if _literal(host) or _suffixes().is_public(domain):
                # An address's, or a public suffix's: the host's own alone, host-only.
                if domain != host:
                    continue
                domain = None
            elif not _domain_matches(host, domain):
                continue
        if secure and not secure_origin:
            continue
        lowered = name.lower()
        if lowered.startswith("__secure-") and not secure:
            continue
        if lowered.startswith("__host-") and not (secure and domain is None and path == "/"):
            continue
        if same_site_attr == "None" and not secure:
            continue
        if cross_site and same_site_attr != "None" and not top_level_navigation:
            continue
        cookie_path = path or _default_path(parts.path or "/")
        cookie_domain = "." + domain if domain is not None else host
        if max_age is not None:
            expires = now + max_age
        if expires is not None and expires <= now:
            delete.append((name, cookie_domain, cookie_path))
            continue
        cookie: SetCookieParam = {"name": name, "value": value, "domain": cookie_domain,
                                  "path": cookie_path, "secure": secure,
                                  "httpOnly": http_only}
        if expires is not None:
            cookie["expires"] = expires
        if same_site_attr is not None:
            cookie["sameSite"] = same_site_attr  # type: ignore[typeddict-item]
        add.append(cookie)
    return Kept(add, delete)


def sent_cookies(jar: Sequence[Mapping[str, Any]], url: str, *, cross_site: bool,
                 top_level_navigation: bool) -> str:
    """The ``Cookie`` header a hop to ``url`` carries, from ``jar`` (the context's
    cookies for ``url``, which hold its domain, path and ``Secure``): cross-site, no
    ``SameSite=Strict`` cookie, and a ``Lax`` one only on a top-level navigation.
    (Playwright tells a cookie set without SameSite as "Lax", which Chromium sends on
    a cross-site top-level POST in its first two minutes: a Lax one goes on any
    top-level navigation's hop here, an explicit Lax on a POST's too.)"""
    sent = []
    for cookie in jar:
        kind = cookie.get("sameSite", "Lax")
        if cross_site and (kind == "Strict" or (kind == "Lax" and not top_level_navigation)):
            continue
        sent.append(f"{cookie.get('name', '')}={cookie.get('value', '')}"
                    if cookie.get("name") else cookie.get("value", ""))
    return "; ".join(sent)
