"""Which addresses a public site may send the crawler to (redirects, DNS answers).

A public site that redirects its robots.txt, or a page, to 127.0.0.1 or to
169.254.169.254 (cloud metadata) would make the crawler read internal services
on its behalf.  The rule: a hop from a public origin into a non-public address
is refused; origins that are themselves private or loopback are unaffected.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from .hops import is_private, parse_hop

__all__ = ["address_is_public", "host_is_public", "refusal", "strip_credentials"]


def address_is_public(address: str) -> bool:
    """True for a globally routable IP address (not loopback, private, link-local...).

    >>> address_is_public("93.184.216.34"), address_is_public("169.254.169.254")
    (True, False)
    """
    try:
        ip = ipaddress.ip_address(address.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def host_is_public(host: str) -> bool | None:
    """True/False for an IP literal or ``localhost``; None for a name (DNS decides)."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None
    return address_is_public(host)


def _host_of(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def refusal(from_url: str, to_url: str) -> str | None:
    """Why a hop from ``from_url`` to ``to_url`` is refused, as far as the URLs tell
    (by the default rule of :mod:`robotgate.policy.hops`).

    Decides only when both hosts spell addresses (or ``localhost``); where a
    name is involved, the adapter that resolves it decides (see
    :func:`robotgate.policy.hops.hop_decision`).

    >>> refusal("http://93.184.216.34/", "http://127.0.0.1/admin")
    'refused a redirect from a public site to a non-public address (127.0.0.1)'
    >>> refusal("http://127.0.0.1:8080/", "http://127.0.0.1:9090/") is None
    True
    """
    target = parse_hop(to_url)
    if target is None:
        return None
    if target.address is not None:
        if not is_private(target.address):
            return None
    elif host_is_public(target.host) is not False:
        return None  # a name: resolved by the adapter
    source = parse_hop(from_url)
    if source is None or source.address is None or is_private(source.address):
        return None  # a private origin may send us to another private address
    shown = target.address if target.address is not None else target.host
    return f"refused a redirect from a public site to a non-public address ({shown})"


def strip_credentials(url: str) -> str:
    """``url`` without its userinfo: credentials found in a Location are never sent.

    >>> strip_credentials("http://user:pw@example.com/x")
    'http://example.com/x'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = len(rest)
    for ch in "/?#":
        i = rest.find(ch)
        if 0 <= i < end:
            end = i
    at = rest.rfind("@", 0, end)
    if at < 0:
        return url
    return f"{scheme}://{rest[at + 1:]}"
