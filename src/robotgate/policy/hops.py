"""May a redirect hop go where it leads?  The rule every client adapter applies.

A public site that redirects a page, or its robots.txt, to 127.0.0.1 or to
169.254.169.254 (cloud metadata) would make the crawler read internal
services on its behalf.  So a hop from a public origin to an address that
``is_private`` calls private is refused; a private origin may send the
crawler to another private address, and the first request of a call is never
judged for its address.

The hop is judged by the addresses the client itself connects to: :func:`hop_flow`
asks for each look-up, and its driver answers with the client's own resolver.
Host spellings that resolvers read as addresses (``2130706433``,
``0x7f.1``, ``0177.0.0.1``, ``[::ffff:7f00:1]``, ``127.0.0.1.``) are read as
those addresses without a look-up; a target that does not resolve is refused.
Standard library only, no I/O.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..decision import Decision

__all__ = ["REFUSED", "Address", "Hop", "HopFlow", "IsPrivate", "Resolve", "hop_flow",
           "is_private", "judge_hop", "literal_address", "parse_hop", "redirect_location"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: ``is_private(address) -> bool``: the addresses a public site may not send the crawler to.
IsPrivate = Callable[[Address], bool]
#: ``resolve(host) -> addresses`` as the client connects (empty, or raising, when it fails).
Resolve = Callable[[str], Awaitable[Sequence[str]]]

#: ``Decision.outcome`` of a redirect refused for where it leads.
REFUSED = "redirect-refused"


def is_private(address: Address) -> bool:
    """The default rule: private, loopback, link-local, unique-local, unspecified,
    reserved, multicast and other non-global addresses (IPv4-mapped ones as IPv4).

    >>> is_private(ipaddress.ip_address("169.254.169.254"))
    True
    >>> is_private(ipaddress.ip_address("::ffff:127.0.0.1")), is_private(
    ...     ipaddress.ip_address("93.184.216.34"))
    (True, False)
    """
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return (address.is_private or address.is_loopback or address.is_link_local
            or address.is_unspecified or address.is_reserved or address.is_multicast
            or not address.is_global)


def _ipv4_part(text: str) -> int | None:
    """One part of an IPv4 host as resolvers read it: decimal, 0x hex, or 0 octal."""
    if text[:2] in ("0x", "0X"):
        digits, base = text[2:], 16
        if digits == "":
            return 0
    elif len(text) > 1 and text[0] == "0":
        digits, base = text[1:], 8
    else:
        digits, base = text, 10
    if not digits or len(digits) > 12 or not all(c in "0123456789abcdefABCDEF" for c in digits):
        return None
    try:
        return int(digits, base)
    except ValueError:
        return None


def _ipv4(host: str) -> ipaddress.IPv4Address | None:
    """``host`` read as the WHATWG URL parser and ``inet_aton`` read an IPv4 host
    (one to four parts, each decimal, hex or octal), or None if it is a name."""
    parts = host.split(".")
    if len(parts) > 4:
        return None
    values = [_ipv4_part(part) for part in parts]
    if any(value is None for value in values):
        return None
    numbers = [value for value in values if value is not None]
    *head, last = numbers
    if any(value > 255 for value in head) or last >= 256 ** (5 - len(numbers)):
        return None
    total = last
    for i, value in enumerate(head):
        total += value << (8 * (3 - i))
    return ipaddress.IPv4Address(total)


def literal_address(host: str) -> Address | None:
    """The address ``host`` spells (any IPv4 spelling, an IPv6 literal with or
    without brackets and zone), or None when it is a name.

    >>> literal_address("0x7f.0.0.2"), literal_address("[::1]"), literal_address("a.test")
    (IPv4Address('127.0.0.2'), IPv6Address('::1'), None)
    """
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return None
    host = host[:-1] if host.endswith(".") else host
    return _ipv4(host) if host else None


def host_name(host: str) -> str:
    """``host`` as a look-up takes it: lower case, no trailing dots or brackets."""
    return host.strip().lower().strip("[]").rstrip(".")


@dataclass(frozen=True, slots=True)
class Hop:
    """Where a redirect leads: the URL to send (no userinfo, no fragment), its host
    (normalised), the address the host spells if it is a literal, and whether the
    Location carried credentials (they are never sent)."""

    url: str
    host: str
    address: Address | None
    had_credentials: bool


def parse_hop(url: str) -> Hop | None:
    """The hop to the absolute http(s) ``url``, or None when it is none.

    >>> hop = parse_hop("http://u:p@2130706434:8080/secret#x")
    >>> hop.url, hop.address, hop.had_credentials
    ('http://2130706434:8080/secret', IPv4Address('127.0.0.2'), True)
    """
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    netloc = parts.netloc
    had_credentials = "@" in netloc
    netloc = netloc.rpartition("@")[2]
    query = f"?{parts.query}" if parts.query else ""
    clean = f"{parts.scheme}://{netloc}{parts.path}{query}"
    return Hop(clean, host_name(host), literal_address(host), had_credentials)


def redirect_location(headers: object) -> str | None:
    """Where a redirect answer sends the client: ``Location``, else ``URI`` (aiohttp
    follows either).  ``headers`` is any mapping with a ``get``."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name in ("Location", "URI"):
        try:
            value = get(name)
        except Exception:  # a hostile or broken mapping: no header
            return None
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if isinstance(value, str) and value:
            return value
    return None


def _addresses(found: Iterable[str]) -> list[Address]:
    out: list[Address] = []
    for text in found:
        address = literal_address(str(text))
        if address is not None:
            out.append(address)
    return out


def judge_hop(origin: Sequence[Address] | None, target: Hop, reached: Sequence[Address],
              private: IsPrivate = is_private) -> Decision | None:
    """The refusal of a hop to ``target`` (None: it may be followed).

    ``origin`` are the addresses the hop's origin resolves to (None or empty: its
    look-up failed, and it counts as public); ``reached`` those the client would
    connect to for ``target`` (empty: the look-up failed, and the hop is refused).

    >>> public, inside = ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("10.0.0.7")
    >>> hop = parse_hop("http://intranet.test/")
    >>> judge_hop([public], hop, [inside]).reason  # doctest: +ELLIPSIS
    'refused a redirect from a public site to intranet.test, which resolves to a non-public...'
    >>> judge_hop([inside], hop, [inside]) is None
    True
    """
    if origin and any(private(address) for address in origin):
        return None  # a private origin may send the crawler to another private address
    if target.address is not None:
        if private(target.address):
            return _refused(f"refused a redirect from a public site to a non-public address "
                            f"({target.address})")
        return None
    if not reached:
        return _refused(f"refused a redirect from a public site to {target.host}, "
                        f"which does not resolve")
    for address in reached:
        if private(address):
            return _refused(f"refused a redirect from a public site to {target.host}, which "
                            f"resolves to a non-public address ({address})")
    return None


def _refused(reason: str) -> Decision:
    return Decision(False, reason, outcome=REFUSED)


#: The hop check as a flow: yields each host to look up, is sent the addresses the
#: client's resolver gives for it ([] when the look-up fails), returns the refusal
#: (None: the hop may be followed).
HopFlow = Generator[str, Sequence[str], "Decision | None"]


def _look_up(host: str) -> Generator[str, Sequence[str], list[Address]]:
    literal = literal_address(host)
    if literal is not None:
        return [literal]
    found = yield host
    return _addresses(found)


def hop_flow(from_url: str, to_url: str, private: IsPrivate = is_private) -> HopFlow:
    """Judge a redirect from ``from_url`` to ``to_url``, asking for look-ups as it goes
    (a driver answers them: :func:`robotgate.politeness.redirects.hop_decision`).

    A ``to_url`` that is no http(s) URL is not judged here (the client refuses it).

    >>> flow = hop_flow("http://example.com/", "http://intranet.test/")
    >>> next(flow)
    'example.com'
    >>> flow.send(["93.184.216.34"])
    'intranet.test'
    >>> try:
    ...     flow.send(["10.0.0.7"])
    ... except StopIteration as done:
    ...     print(done.value.outcome)
    redirect-refused
    """
    target = parse_hop(to_url)
    if target is None:
        return None
    source = parse_hop(from_url)
    origin = (yield from _look_up(source.host)) if source is not None else []
    if origin and any(private(address) for address in origin):
        return None
    reached = [] if target.address is not None else (yield from _look_up(target.host))
    return judge_hop(origin, target, reached, private)
