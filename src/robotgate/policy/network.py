"""Which addresses a public site may send the crawler to (redirects, DNS answers).

A public site that redirects its robots.txt, or a page, to 127.0.0.1 or to
169.254.169.254 (cloud metadata) would make the crawler read internal services
on its behalf.  The rule: a hop from a public origin into a non-public address
is refused; origins that are themselves private or loopback are unaffected.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

__all__ = ["address_is_public", "hop_refusal", "host_is_public", "refusal",
           "strip_credentials"]

#: ``resolve(host) -> addresses`` ([] when the name does not resolve).
Resolve = Callable[[str], Awaitable[list[str]]]


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
    """Why a hop from ``from_url`` to ``to_url`` is refused, as far as the URLs tell.

    Decides only when both hosts are IP literals (or ``localhost``); where a
    name is involved, the adapter that resolves it decides (see the aiohttp
    adapter's ``hop_refusal``).

    >>> refusal("http://93.184.216.34/", "http://127.0.0.1/admin")
    'refused a redirect from a public site to a non-public address (127.0.0.1)'
    >>> refusal("http://127.0.0.1:8080/", "http://127.0.0.1:9090/") is None
    True
    """
    target = _host_of(to_url)
    if host_is_public(target) is not False:
        return None
    if host_is_public(_host_of(from_url)) is not True:
        return None  # a private origin may send us to another private address
    return f"refused a redirect from a public site to a non-public address ({target})"


async def hop_refusal(from_url: str, to_url: str, resolve: Resolve) -> str | None:
    """Why a redirect from ``from_url`` to ``to_url`` is refused (None: it may be followed).

    Host names are resolved with ``resolve`` (the client's resolver, which the
    adapter passes in) to tell whether the origin is public and where the hop leads.
    """
    to_host = _host_of(to_url)
    to_public = host_is_public(to_host)
    if to_public:
        return None
    from_host = _host_of(from_url)
    from_public = host_is_public(from_host)
    if from_public is None:
        found = await resolve(from_host)
        from_public = bool(found) and all(address_is_public(a) for a in found)
    if not from_public:
        return None  # a private origin may send us to another private address
    if to_public is False:
        return f"refused a redirect from a public site to a non-public address ({to_host})"
    private = [a for a in await resolve(to_host) if not address_is_public(a)]
    if private:
        return (f"refused a redirect from a public site to {to_host}, which resolves to "
                f"a non-public address ({private[0]})")
    return None


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
