"""May a page's pointer go where it leads?  The rule every client adapter applies.

A public site that points the crawler at 127.0.0.1 or at 169.254.169.254 (cloud
metadata) would make it read internal services on its behalf: by a redirect (of
a page, of its robots.txt or tdmrep.json), a link, a ``Sitemap:`` line, an index's
child sitemap or a sitemap's entry.  So a *pointer* (a request a page chose)
from a public origin to an address that ``is_private`` calls private is refused;
a private origin may send the crawler to another private address, and the
user's own input is never judged for its address (their choice).

A pointer is judged twice: :func:`pointer_flow` asks for the look-ups of the
origin and the target, its driver answering with the client's own resolver
(any private address refuses), and when the origin is public its verdict says
``guard``: the connection itself must then reach a public address, which the
adapter checks where it connects (the socket's peer, or the address it pins),
so that a name answering public to the check and private to the connection
(DNS rebinding) gains nothing.
Host spellings that resolvers read as addresses (``2130706433``,
``0x7f.1``, ``0177.0.0.1``, ``[::ffff:7f00:1]``, ``127.0.0.1.``) are read as
those addresses without a look-up; a target that does not resolve is refused.
Standard library only, no I/O.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from ..decision import Decision

__all__ = ["A_POINTER", "A_REDIRECT", "REFUSED", "RULE", "UNGUARDED", "Address", "Hop", "HopFlow",
           "IsPrivate",
           "PointerFlow", "PointerVerdict", "Resolve", "hop_flow", "is_private", "judge_hop",
           "judge_peer", "literal_address", "parse_hop", "pointer_flow", "redirect_location"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: ``is_private(address) -> bool``: the addresses a public site may not send the crawler to.
IsPrivate = Callable[[Address], bool]
#: ``resolve(host) -> addresses`` as the client connects (empty, or raising, when it fails).
Resolve = Callable[[str], Awaitable[Sequence[str]]]

#: ``Decision.outcome`` of a redirect (or any page's pointer) refused for where it leads.
REFUSED = "redirect-refused"
#: What a refusal names as the pointer: a redirect, or any other pointer of a page (a
#: link, a ``Sitemap:`` line, an index's child sitemap, a sitemap's entry).
A_REDIRECT = "a redirect"
A_POINTER = "a pointer"
#: The rule, as each refusal states it.
RULE = "a public site may not send the crawler into a private network"


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


@lru_cache(maxsize=4096)
def literal_address(host: str) -> Address | None:
    """The address ``host`` spells (any IPv4 spelling, an IPv6 literal with or
    without brackets and zone), or None when it is a name.  Kept for the last hosts
    asked (a browser's page asks it several times a request, of the same few hosts).

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
              private: IsPrivate = is_private, what: str = A_REDIRECT) -> Decision | None:
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
            return _refused(f"refused {what} from a public site to a non-public address "
                            f"({target.address})")
        return None
    if not reached:
        return _refused(f"refused {what} from a public site to {target.host}, "
                        f"which does not resolve")
    for address in reached:
        if private(address):
            return _refused(f"refused {what} from a public site to {target.host}, which "
                            f"resolves to a non-public address ({address})")
    return None


def judge_peer(host: str, peer: str, private: IsPrivate = is_private,
               what: str = A_REDIRECT) -> Decision | None:
    """The refusal of a guarded connection to ``host`` that reached ``peer`` (the
    socket's remote address), or None when that address is public.  An address
    that cannot be read counts as private: the request is not sent.

    >>> print(judge_peer("a.test", "127.0.0.2").reason)  # doctest: +NORMALIZE_WHITESPACE
    refused a redirect from a public site to a.test: its connection reached a non-public
    address (127.0.0.2) (a public site may not send the crawler into a private network)
    >>> judge_peer("a.test", "93.184.216.34") is None
    True
    """
    address = literal_address(peer)
    if address is not None and not private(address):
        return None
    shown = str(address) if address is not None else repr(peer)
    return _refused(f"refused {what} from a public site to {host}: its connection reached a "
                    f"non-public address ({shown})")


def _refused(reason: str) -> Decision:
    return Decision(False, f"{reason} ({RULE})", outcome=REFUSED)


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


@dataclass(frozen=True, slots=True)
class PointerVerdict:
    """A pointer judged: ``refused`` (None: it may be followed); ``guard``: the origin
    is public, so the connection must reach a public address (checked where the
    adapter connects); ``addresses``: the target's addresses as the check found
    them, all public when it may be followed (a literal: that address)."""

    refused: Decision | None
    guard: bool
    addresses: tuple[Address, ...] = ()


#: The pointer check as a flow: yields each host to look up, is sent the addresses the
#: client's resolver gives for it ([] when the look-up fails), returns the verdict.
PointerFlow = Generator[str, Sequence[str], PointerVerdict]

#: A pointer the check does not judge: not an http(s) URL (the client refuses it), or
#: from a private origin.
UNGUARDED = PointerVerdict(None, False)


def pointer_flow(from_url: str, to_url: str, private: IsPrivate = is_private,
                 what: str = A_REDIRECT) -> PointerFlow:
    """Judge a pointer of the page at ``from_url`` to ``to_url``, asking for look-ups
    as it goes (a driver answers them:
    :func:`robotgate.politeness.redirects.pointer_verdict`).

    ``from_url`` that is no URL (for instance ``""``) stands for a page known to be
    public.

    >>> flow = pointer_flow("http://example.com/", "http://a.test/", what=A_POINTER)
    >>> next(flow)
    'example.com'
    >>> flow.send(["93.184.216.34"])
    'a.test'
    >>> try:
    ...     flow.send(["93.184.216.35"])
    ... except StopIteration as done:
    ...     print(done.value.refused, done.value.guard, done.value.addresses)
    None True (IPv4Address('93.184.216.35'),)
    """
    target = parse_hop(to_url)
    if target is None:
        return UNGUARDED
    source = parse_hop(from_url)
    origin = (yield from _look_up(source.host)) if source is not None else []
    if origin and any(private(address) for address in origin):
        return UNGUARDED  # a private origin may send the crawler to another private address
    if target.address is not None:
        reached = [target.address]
    else:
        reached = yield from _look_up(target.host)
    return PointerVerdict(judge_hop(origin, target, reached, private, what), True,
                          tuple(reached))


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
    verdict = yield from pointer_flow(from_url, to_url, private)
    return verdict.refused
